"""liger-kernel's RMSNorm (liger_kernel.transformers.functional.liger_rms_norm, the functional form of
`LigerRMSNorm`), forward and backward, written from its docs as a user would.

The docs (LigerRMSNormFunction): y_i = (x_i / RMS(x)) * (offset + w_i), RMS = sqrt(sum(x_i^2) / N + eps);
X is (B, T, H) or (B*T, H), W is (H,); casting_mode 'llama' (the default) matches Hugging Face's Llama:
only the inverse RMS is computed in float32; the output has x's dtype. `in_place=True` (the default)
"modifies dY in place to store dX" to save memory, and the docs warn that it "can produce incorrect
inputs" where dY is needed again (Gemma2): this spec asks for `in_place=False`, the setting that keeps
the upstream gradient, so that kladder's rule (every input, the upstream gradient too, holds the bytes it
was passed) is the library's own contract. The launcher sizes one block to the whole row
(BLOCK = next_power_of_2(H), at most 65,536 columns, documented in its error), so `tile=16` is
Triton's specialisation, not a tail. The reference is plain torch, fed float64 copies.

Needs `pip install liger-kernel` (0.8.5 tried: bench/README.md); climbed by bench/light_climb.py."""
import torch
from liger_kernel.transformers.functional import liger_rms_norm

import kladder as kl

EPS = 1e-6


def rmsnorm(x, w, eps):
    return liger_rms_norm(x, w, eps, offset=0.0, casting_mode="llama", in_place=False)


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


spec = kl.Spec(
    "liger_rmsnorm", kernel=rmsnorm, reference=rmsnorm_ref,
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"]),
          "w": kl.Tensor("N", like="x"),                 # a model's weight, in the activations' dtype
          "eps": EPS},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 65536),                          # tokens of a micro-batch (B x T)
          "N": kl.Dim(1, 16384, tile=16, widths=[2048, 4096, 5120, 8192])},   # hidden sizes of Llama-family models
    rows="M",
    grads=["x", "w"],
)
