"""Rung 8 through the adapter: a LayerNorm kernel swapped into all-MiniLM-L6-v2 (every one of
its 13 LayerNorms), scored by the cosine similarity of its sentence embeddings to the
unpatched model's. `layernorm` is right; `layernorm_no_bias` forgets the bias (an epilogue
dropped for the no-bias variant the author tested), which its own spec at rung 1 would catch
too; here it shows what the model feels."""
import torch

import kladder as kl
from kladder.model import minilm


def layernorm(x, w, b, eps):
    xf = x.float()
    mu = xf.mean(-1, keepdim=True)
    var = (xf - mu).pow(2).mean(-1, keepdim=True)
    return ((xf - mu) * torch.rsqrt(var + eps) * w + b).to(x.dtype)


def layernorm_no_bias(x, w, b, eps):
    xf = x.float()
    mu = xf.mean(-1, keepdim=True)
    var = (xf - mu).pow(2).mean(-1, keepdim=True)
    return ((xf - mu) * torch.rsqrt(var + eps) * w).to(x.dtype)


def layernorm_ref(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w, b, eps)


def make(kernel):
    return kl.Spec(kernel.__name__, kernel=kernel, reference=layernorm_ref,   # one name a spec (load.py)
                   args={"x": kl.Tensor("T D", dtype="float32"), "w": kl.Tensor("D", dtype="float32"),
                         "b": kl.Tensor("D", dtype="float32"), "eps": 1e-12},
                   returns=kl.Tensor("T D", like="x"),
                   dims={"T": kl.Dim(1, 512), "D": kl.Dim(1, 1024, widths=[384])},
                   model=kl.InModel(slot=minilm.adapter(minilm.LAYERNORM_TARGET)))


good = make(layernorm) if minilm.available() is None else None
bad = make(layernorm_no_bias) if minilm.available() is None else None
