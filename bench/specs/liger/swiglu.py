"""liger-kernel's SwiGLU activation (liger_kernel.transformers.functional.liger_swiglu, the activation
inside `LigerSwiGLUMLP`), forward only, written from its docs as a user would.

The contract (LigerSwiGLUMLP: down_proj(silu(gate_proj(x)) * up_proj(x))): c = silu(a) * b, elementwise,
a and b of one shape (..., intermediate) and dtype, c of theirs; silu is computed in float32 (the kernel
upcasts a). One block holds the whole row (BLOCK = next_power_of_2(intermediate), at most 65,536), so
`tile=16` is Triton's specialisation, not a tail.

Forward only: liger's backward writes the gradients of a and b into a's and b's own storage (its
"in-place" memory saving: in an MLP nothing reads gate_proj(x) or up_proj(x) after it), which kladder's
rule that every input keeps its bytes through the call (the backward included) would fail, and
kl.Tensor(mutated=True) cannot express (the reference would have to write a gradient it has not been
given in its forward). See bench/README.md.

Needs `pip install liger-kernel` (0.8.5 tried); climbed by bench/light_climb.py."""
import torch
from liger_kernel.transformers.functional import liger_swiglu

import kladder as kl


def swiglu(a, b):
    return liger_swiglu(a, b)


def swiglu_ref(a, b):
    return a * torch.sigmoid(a) * b


spec = kl.Spec(
    "liger_swiglu", kernel=swiglu, reference=swiglu_ref,
    args={"a": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"]), "b": kl.Tensor("M N", like="a")},
    returns=kl.Tensor("M N", like="a"),
    dims={"M": kl.Dim(1, 65536),                          # tokens of a micro-batch (B x T)
          "N": kl.Dim(1, 32768, tile=16, widths=[5632, 11008, 14336, 28672])},   # Llama-family intermediate sizes
    rows="M",
)
