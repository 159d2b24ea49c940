"""liger-kernel's fused residual add + RMSNorm (liger_kernel.transformers.functional.liger_fused_add_rms_norm),
forward and backward, written from its docs as a user would.

The docs (LigerFusedAddRMSNormFunction): "1. residual = hidden_states + residual; 2. residual is stored;
3. hidden_states = rmsnorm(residual). Both the normalized hidden_states and the updated residual are
returned": (y, s) with s = x + r and y = s / RMS(s) * w, in x's dtype; casting_mode 'llama' computes the
inverse RMS in float32. `in_place=False` keeps dY (the docs: in_place "modifies dY in-place to store dX").
One block holds the whole row (at most 65,536 columns), so `tile=16` is Triton's specialisation.

Needs `pip install liger-kernel` (0.8.5 tried: bench/README.md); climbed by bench/light_climb.py."""
import torch
from liger_kernel.transformers.functional import liger_fused_add_rms_norm

import kladder as kl

EPS = 1e-6


def fused_add_rmsnorm(x, r, w, eps):
    return liger_fused_add_rms_norm(x, r, w, eps, offset=0.0, casting_mode="llama", in_place=False)


def fused_add_rmsnorm_ref(x, r, w, eps):
    s = x + r
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w, s


spec = kl.Spec(
    "liger_fused_add_rmsnorm", kernel=fused_add_rmsnorm, reference=fused_add_rmsnorm_ref,
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"]),
          "r": kl.Tensor("M N", like="x"),                # the residual stream
          "w": kl.Tensor("N", like="x"),                 # a model's weight, in the activations' dtype
          "eps": EPS},
    returns={"y": kl.Tensor("M N", like="x"), "s": kl.Tensor("M N", like="x")},
    dims={"M": kl.Dim(1, 65536),
          "N": kl.Dim(1, 16384, tile=16, widths=[2048, 4096, 5120, 8192])},
    rows="M",
    grads=["x", "r", "w"],
)
