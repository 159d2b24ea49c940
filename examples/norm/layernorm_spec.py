"""A correct two-pass float32 LayerNorm (examples/norm/layernorm.py): it must pass every rung at
the defaults. On an H100 its rung 2 (ties) once failed one element of 139,264 at 1.02x its budget
before the near-miss rule settled such points with more peer evidence (issue 34)."""
import torch

import kladder as kl
from layernorm import layernorm


def layernorm_ref(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps)


spec = kl.Spec(
    "layernorm", kernel=layernorm, reference=layernorm_ref,
    args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32"),
          "b": kl.Tensor("N", dtype="float32"), "eps": 1e-5},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, tile=16, widths=[768, 1024, 4096])},
    rows="M",
)
