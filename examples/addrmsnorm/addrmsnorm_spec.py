# examples/addrmsnorm/addrmsnorm_spec.py: the fused add + RMSNorm (addrmsnorm.py) and its three buggy copies
# (buggy.py), one spec each. Climb one from the repository root:
#   kladder climb examples/addrmsnorm/addrmsnorm_spec.py::spec --rungs 1-3 --device cpu        # the correct kernel
#   kladder climb examples/addrmsnorm/addrmsnorm_spec.py::store_mask --rungs 1-3 --device cpu  # a buggy one
import torch

import kladder as kl
import buggy                                   # this folder is on sys.path while kladder loads the spec
from addrmsnorm import BLOCK, add_rmsnorm


def add_rmsnorm_ref(x, residual, w, eps):      # plain torch; kladder feeds it float64 copies
    h = x + residual
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w, h


spec = kl.Spec(
    "add_rmsnorm", kernel=add_rmsnorm, reference=add_rmsnorm_ref,
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
          "residual": kl.Tensor("M N", like="x"),           # the residual stream: x's dtype
          "w": kl.Tensor("N", dtype="float32"), "eps": 1e-6},
    returns={"y": kl.Tensor("M N", like="x"),               # in the order the launcher returns them
             "h": kl.Tensor("M N", like="x")},
    dims={"M": kl.Dim(1, 4096),                            # one program per row: no tile
          "N": kl.Dim(1, 8192, tile=BLOCK,                 # the fixed block the kernel walks a row in
                      widths=[2880, 4096, 7168])},         # hidden sizes real models use
    rows="M",                                              # rows are independent: big points check sampled rows
)

# The same spec for each buggy copy: only the kernel differs (what a newcomer climbs before the fix), and the
# name, which every point and repro command carries (so that a point of one is never replayed against another).
store_mask = kl.Spec("add_rmsnorm_store_mask", kernel=buggy.add_rmsnorm_store_mask, reference=add_rmsnorm_ref,
                     args=spec.args, returns=spec.returns, dims=spec.dims, rows="M")
fp16_sumsq = kl.Spec("add_rmsnorm_fp16_sumsq", kernel=buggy.add_rmsnorm_fp16_sumsq, reference=add_rmsnorm_ref,
                     args=spec.args, returns=spec.returns, dims=spec.dims, rows="M")
tail_skipped = kl.Spec("add_rmsnorm_tail_skipped", kernel=buggy.add_rmsnorm_tail_skipped, reference=add_rmsnorm_ref,
                       args=spec.args, returns=spec.returns, dims=spec.dims, rows="M")
