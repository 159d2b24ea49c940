# examples/norm/rmsnorm_spec.py, beside the kernel and its launcher (examples/norm/rmsnorm.py)
# climb it from the repository root: kladder climb examples/norm/rmsnorm_spec.py --rungs 1 --device cpu
import torch

import kladder as kl
from rmsnorm import rmsnorm                    # the launcher you ship: (x, w, eps) -> y (this folder is on
                                               # sys.path while kladder loads the spec)

def rmsnorm_ref(x, w, eps):                    # plain torch; kladder feeds it float64 copies
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

spec = kl.Spec(
    "rmsnorm", kernel=rmsnorm, reference=rmsnorm_ref,   # its name in points and reports; what is tested; against what
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),   # a shape in dim symbols, the dtypes it takes
          "w": kl.Tensor("N", dtype="float32"), "eps": 1e-6},    # a plain value is passed as it is
    returns=kl.Tensor("M N", like="x"),        # the output: x's shape, x's dtype
    dims={"M": kl.Dim(1, 4096),                # one program per row: no tile
          "N": kl.Dim(1, 8192, tile=16,        # one block a row, BLOCK = next_power_of_2(N): no tail; 16 is where
                                               # Triton's code changes (docs/spec.md: "tile= and configs")
                      widths=[2880, 4096, 7168])},   # hidden sizes real models use
    rows="M",                                  # rows are independent: big points check sampled rows
)
