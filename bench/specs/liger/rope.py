"""liger-kernel's rotary position embedding (liger_kernel.transformers.functional.liger_rope, the
functional form of `liger_rotary_pos_emb`), forward and backward, written from its docs as a user would.

The docs (LigerRopeFunction): the Hugging Face Llama/Mistral rotation, q_embed = q * cos +
rotate_half(q) * sin and the same for k, with q of shape (batch, q heads, seq, head_dim), k of shape
(batch, kv heads, seq, head_dim), cos and sin of shape (seq, head_dim) (or with a leading 1 or batch),
as Hugging Face's rotary embedding makes them: cos = cat(freqs, freqs).cos(), freqs[t, i] = position_t x
base^(-2i / head_dim), so the right half of each row repeats the left ("the right half is just a clone
of the left half", which the kernel relies on). They are built that way here (`build=`, positions from a
seeded start, as a prefill at any offset), in q's dtype as the model hands them. head_dim takes the sizes
models use; the launcher pads heads and head_dim to powers of two, so the non-power-of-two ones (80, 96)
are where its masks matter. The reference is plain torch, fed float64 copies.

Needs `pip install liger-kernel` (0.8.5 tried: bench/README.md); climbed by bench/light_climb.py."""
import torch
from liger_kernel.transformers.functional import liger_rope

import kladder as kl

BASE = 10000.0


def rope(q, k, cos, sin):
    return liger_rope(q, k, cos, sin)


def _rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_ref(q, k, cos, sin):
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin


def cos_sin(point, gen):
    """Hugging Face's cos and sin tables for `T` positions from a seeded start (a prefill after a prompt)."""
    T, D = point.sizes["T"], point.sizes["D"]
    start = int(torch.randint(0, 4096, (1,), generator=gen, device=gen.device))
    inv_freq = BASE ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    freqs = torch.outer(torch.arange(start, start + T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return {"cos": emb.cos(), "sin": emb.sin()}


spec = kl.Spec(
    "liger_rope", kernel=rope, reference=rope_ref,
    args={"q": kl.Tensor("B H T D", dtype=["bfloat16", "float16", "float32"]),
          "k": kl.Tensor("B Hk T D", like="q"),
          # the model's tables, made by cos_sin (build=): no value kinds of their own at rung 2
          "cos": kl.Tensor("T D", like="q", values=[]), "sin": kl.Tensor("T D", like="q", values=[])},
    returns={"q_embed": kl.Tensor("B H T D", like="q"), "k_embed": kl.Tensor("B Hk T D", like="q")},
    dims={"B": kl.Dim(1, 16),
          "H": kl.Dim(1, 64, widths=[32]),                # query heads
          "Hk": kl.Dim(1, 64, widths=[8]),                # key/value heads (grouped-query attention)
          "T": kl.Dim(1, 8192),                           # sequence length
          "D": kl.Dim(sizes=[64, 80, 96, 128, 256])},     # head_dim of real models
    build=cos_sin,
    rows="B",
    grads=["q", "k"],
)
