"""The model's swappable ops ("slots"): every op the model runs goes through one, so that a
kernel can be dropped into a real model and judged by the model's answers (rung 8).

Each slot has one plain signature, the layout and dtype a kernel receives, and a plain-torch
default. ``dtype`` below is the model's dtype (float32 or bfloat16 on the CPU; float16 or
bfloat16 on CUDA); every tensor is contiguous unless said otherwise.

rmsnorm(x, w, eps) -> y
    x [T, D] dtype, w [D] float32, eps float. y [T, D] dtype:
    y = x / sqrt(mean(x^2, -1) + eps) * w, computed in float32.
linear(x, w) -> y
    x [T, K] dtype, w [N, K] dtype (nn.Linear's layout, no bias). y [T, N] dtype: x @ w.T.
activation(x) -> y
    x [T, F] dtype. y [T, F] dtype: GELU (erf form), elementwise.
softmax(x) -> y
    x [R, N] float32 attention scores, masked positions hold -inf (never a whole row).
    y [R, N] float32: softmax along the last dim. Called by the default attentions only:
    a replaced attention slot computes its own.
attention_prefill(q, k, v) -> o
    q [B, Hq, T, Dh], k and v [B, Hkv, T, Dh], all dtype; Hq = G * Hkv (query head h reads
    kv head h // G). Causal: query t sees keys 0..t. Softmax scale 1/sqrt(Dh) applied
    inside. o [B, Hq, T, Dh] dtype.
attention_decode(q, k_cache, v_cache, lengths) -> o
    One new token per sequence against the KV cache, as a server's decode step runs it.
    q [B, Hq, Dh] dtype; k_cache and v_cache [B, Hkv, S, Dh] dtype (S = the cache's
    capacity; the new token's k and v are already written at position lengths[b] - 1;
    positions >= lengths[b] hold stale values and must not be read into the result);
    lengths int32 [B], 1 <= lengths[b] <= S. Query head h reads kv head h // G with
    G = Hq // Hkv. Softmax scale 1/sqrt(Dh) applied inside. o [B, Hq, Dh] dtype.
"""
from __future__ import annotations

import math
from typing import Callable

import torch

SLOTS: dict[str, str] = {
    "rmsnorm": "rmsnorm(x [T, D] dtype, w [D] float32, eps: float) -> [T, D] dtype; x * rsqrt(mean(x^2) + eps) * w",
    "linear": "linear(x [T, K] dtype, w [N, K] dtype) -> [T, N] dtype; x @ w.T, no bias",
    "activation": "activation(x [T, F] dtype) -> [T, F] dtype; GELU (erf), elementwise",
    "softmax": "softmax(x [R, N] float32, -inf where masked) -> [R, N] float32; along the last dim "
               "(used by the default attentions)",
    "attention_prefill": "attention_prefill(q [B, Hq, T, Dh], k [B, Hkv, T, Dh], v [B, Hkv, T, Dh]) -> "
                         "[B, Hq, T, Dh]; causal, GQA (head h reads kv head h // (Hq // Hkv)), scale 1/sqrt(Dh) inside",
    "attention_decode": "attention_decode(q [B, Hq, Dh], k_cache [B, Hkv, S, Dh], v_cache [B, Hkv, S, Dh], "
                        "lengths int32 [B]) -> [B, Hq, Dh]; one new token against positions < lengths[b], GQA, "
                        "scale 1/sqrt(Dh) inside",
}


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x @ w.t()


def activation(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def _grouped_attention(q, k, v, mask, softmax_fn):
    """q [B, Hkv, G*T, Dh] float32 against k, v [B, Hkv, S, Dh]; mask [G*T or 1, S] or [B, 1, 1, S]
    (True = may attend). Scores go through the softmax slot as a 2-D [R, S] tensor."""
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    probs = softmax_fn(scores.reshape(-1, scores.shape[-1])).reshape(scores.shape)
    # a masked position's stale v may be anything (NaN in a poisoned cache): keep 0 * v out
    return probs @ v


def make_attention_prefill(softmax_fn: Callable = softmax) -> Callable:
    def attention_prefill(q, k, v):
        B, Hq, T, Dh = q.shape
        Hkv = k.shape[1]
        G = Hq // Hkv
        qg = q.float().reshape(B, Hkv, G * T, Dh)
        causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        o = _grouped_attention(qg, k.float(), v.float(), causal.repeat(G, 1), softmax_fn)
        return o.reshape(B, Hq, T, Dh).to(q.dtype)
    return attention_prefill


def make_attention_decode(softmax_fn: Callable = softmax) -> Callable:
    def attention_decode(q, k_cache, v_cache, lengths):
        B, Hq, Dh = q.shape
        Hkv, S = k_cache.shape[1], k_cache.shape[2]
        G = Hq // Hkv
        qg = q.float().reshape(B, Hkv, G, Dh)
        pos = torch.arange(S, device=q.device)
        valid = (pos[None, :] < lengths.to(q.device).long()[:, None])[:, None, None, :]   # [B, 1, 1, S]
        v = torch.where(valid.transpose(-1, -2), v_cache.float(), 0.0)
        o = _grouped_attention(qg, k_cache.float(), v, valid, softmax_fn)
        return o.reshape(B, Hq, Dh).to(q.dtype)
    return attention_decode


attention_prefill = make_attention_prefill()
attention_decode = make_attention_decode()

DEFAULTS: dict[str, Callable] = {
    "rmsnorm": rmsnorm,
    "linear": linear,
    "activation": activation,
    "softmax": softmax,
    "attention_prefill": attention_prefill,
    "attention_decode": attention_decode,
}


def resolve(slots: dict[str, Callable] | None) -> dict[str, Callable]:
    """The slot table a model runs: the defaults, with `slots` replacing some of them. The
    default attentions take the (possibly replaced) softmax slot."""
    slots = dict(slots or {})
    unknown = sorted(set(slots) - set(SLOTS))
    if unknown:
        raise KeyError(f"unknown slot(s) {unknown}: the model's slots are {', '.join(SLOTS)}")
    for name, fn in slots.items():
        if not callable(fn):
            raise TypeError(f"slot {name!r}: got {fn!r}; give a callable with the signature {SLOTS[name]}")
    # the defaults as this module holds them now: a function patched here (kladder.capture(
    # "kladder.model.slots:rmsnorm", ...)) reaches a model loaded inside the patch
    current = {name: globals().get(name, fn) for name, fn in DEFAULTS.items()}
    table = {**current, **slots}
    if "softmax" in slots:
        if "attention_prefill" not in slots:
            table["attention_prefill"] = make_attention_prefill(slots["softmax"])
        if "attention_decode" not in slots:
            table["attention_decode"] = make_attention_decode(slots["softmax"])
    return table
