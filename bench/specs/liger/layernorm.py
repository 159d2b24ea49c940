"""liger-kernel's LayerNorm (liger_kernel.transformers.functional.liger_layer_norm, the functional form of
`LigerLayerNorm`), forward and backward, written from its docs as a user would.

The docs (liger_kernel.functional.layer_norm): y = weight * (x - mean) / sqrt(var + eps) + bias, x of
shape (*, hidden), weight and bias of shape (hidden,); the statistics are computed in float32 and the
output has x's dtype. One block holds the whole row (BLOCK = next_power_of_2(hidden), at most 65,536
columns), so `tile=16` is Triton's specialisation, not a tail. The reference is plain torch, fed
float64 copies.

Needs `pip install liger-kernel` (0.8.5 tried: bench/README.md); climbed by bench/light_climb.py."""
import torch
from liger_kernel.transformers.functional import liger_layer_norm

import kladder as kl

EPS = 1e-6


def layernorm(x, w, b, eps):
    return liger_layer_norm(x, w, b, eps)


def layernorm_ref(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * w + b


spec = kl.Spec(
    "liger_layernorm", kernel=layernorm, reference=layernorm_ref,
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"]),
          "w": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x"),
          "eps": EPS},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 65536),                          # tokens of a micro-batch (B x T)
          "N": kl.Dim(1, 16384, tile=16, widths=[768, 1024, 4096, 8192])},   # hidden sizes of BERT/ViT/GPT models
    rows="M",
    grads=["x", "w", "b"],
)
