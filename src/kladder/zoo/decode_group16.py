"""decode_group16: a GQA attention decode kernel whose program holds at most 8 query heads;
for a group of 16 the second chunk of 8 heads reads the first chunk's queries.

One new token per sequence against its KV cache: o[b, h] = softmax(q[b, h] . K[b, h // G, :len]
/ sqrt(D)) V[b, h // G, :len]. A program owns one (sequence, KV head, chunk of up to 8 query
heads): it loads the chunk's queries as a [BLOCK_G, D] tile, streams the KV head's cache in
BLOCK_S tiles with an online softmax, and writes the chunk's outputs. Groups of up to 8 are
one chunk. For a group of 16 (Llama-3.1-405B at TP8: 16 query heads, 1 KV head per GPU) the
second chunk stores to heads 8..15 but loads the queries of heads 0..7: heads 8..15 come
back as copies of heads 0..7, finite and plausible.
"""
import math

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="decode_group16",
    gap="model",
    rung=8,
    mirrors="reference/000 (Llama-3.1-405B at TP8: group 16, smoke test 1.0 -> 0.0)",
    needs="cpu",
    story=(
        "A decode program holds the query heads of one KV head as an [8, D] register tile "
        "(at head_dim 128, more heads spill); a group larger than 8 is split into chunks of 8, "
        "one program each. The chunk's output rows are offset by chunk * 8, but the query "
        "load was written as kv * G + g, without the chunk's offset: for a group of 16 the "
        "second program attends with the queries of heads 0..7 and stores the results as "
        "heads 8..15. Every model the author served has a group of at most 8 (Llama-3-8B 4, "
        "Qwen2-7B 7, Llama-3-70B 8): one chunk, always right, and the spec (G up to 8) says "
        "so. kladder's kernel rungs climb that spec and pass: the failing group is outside "
        "it, and a spec never holds the failing point. Rung 8 swaps the kernel into the "
        "model's attention_decode slot: the model has 16 query heads per KV head, as "
        "405B has per GPU at TP8; prefill is untouched, every decode step mixes heads 0..7's "
        "attention into heads 8..15, and the model's exact match falls from 1.0 to 0.0, "
        "with no error anywhere. The fixed twin offsets the query load by the chunk too."
    ),
)
SLOT = "attention_decode"   # the model slot rung 8 swaps this kernel into (Spec.slot)

MAX_BLOCK_G = 8     # query heads per program: the [BLOCK_G, BLOCK_S, D] product lives in registers
BLOCK_S = 32        # cache positions per step of the online softmax


@triton.jit
def _decode_kernel(q_ptr, k_ptr, v_ptr, len_ptr, o_ptr, G, D, sm_scale, stride_len,
                   stride_qb, stride_qh, stride_qd, stride_kb, stride_kh, stride_ks, stride_kd,
                   stride_vb, stride_vh, stride_vs, stride_vd, stride_ob, stride_oh, stride_od,
                   N_CHUNKS: tl.constexpr, BLOCK_G: tl.constexpr, BLOCK_S: tl.constexpr,
                   BLOCK_D: tl.constexpr, FIXED: tl.constexpr):
    b = tl.program_id(0)
    kv = tl.program_id(1) // N_CHUNKS
    chunk = tl.program_id(1) % N_CHUNKS
    offs_g = tl.arange(0, BLOCK_G)
    offs_d = tl.arange(0, BLOCK_D)
    g = chunk * BLOCK_G + offs_g                     # this program's heads within the group
    mask_g = g < G
    mask_d = offs_d < D
    if FIXED:  # noqa: SIM108 - the twin's line and the bug's, each in its own branch
        q_heads = kv * G + g
    else:
        # The bug: the chunk's offset is missing; right while one chunk holds the group.
        q_heads = kv * G + offs_g
    q = tl.load(q_ptr + b * stride_qb + q_heads[:, None] * stride_qh + offs_d[None, :] * stride_qd,
                mask=mask_g[:, None] & mask_d[None, :], other=0.0).to(tl.float32)
    length = tl.load(len_ptr + b * stride_len)
    m_i = tl.full((BLOCK_G,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_G,), tl.float32)
    acc = tl.zeros((BLOCK_G, BLOCK_D), tl.float32)
    k_base = k_ptr + b * stride_kb + kv * stride_kh
    v_base = v_ptr + b * stride_vb + kv * stride_vh
    for start in range(0, length, BLOCK_S):
        offs_s = start + tl.arange(0, BLOCK_S)
        mask_s = offs_s < length
        kv_mask = mask_s[:, None] & mask_d[None, :]
        k = tl.load(k_base + offs_s[:, None] * stride_ks + offs_d[None, :] * stride_kd, mask=kv_mask, other=0.0).to(tl.float32)
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * sm_scale             # [BLOCK_G, BLOCK_S]
        s = tl.where(mask_s[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        v = tl.load(v_base + offs_s[:, None] * stride_vs + offs_d[None, :] * stride_vd, mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    o = acc / l_i[:, None]
    o_heads = kv * G + g
    tl.store(o_ptr + b * stride_ob + o_heads[:, None] * stride_oh + offs_d[None, :] * stride_od,
             o.to(o_ptr.dtype.element_ty), mask=mask_g[:, None] & mask_d[None, :])


def _launch(q, k_cache, v_cache, lengths, fixed):
    B, Hq, D = q.shape
    Hkv = k_cache.shape[1]
    if Hq % Hkv:
        raise ValueError(f"attention_decode: {Hq} query heads do not split evenly over {Hkv} KV heads")
    G = Hq // Hkv
    block_g = min(triton.next_power_of_2(G), MAX_BLOCK_G)
    n_chunks = triton.cdiv(G, block_g)
    o = torch.empty_like(q)
    _decode_kernel[(B, Hkv * n_chunks)](
        q, k_cache, v_cache, lengths, o, G, D, 1.0 / math.sqrt(D), lengths.stride(0),
        *q.stride(), *k_cache.stride(), *v_cache.stride(), *o.stride(),
        N_CHUNKS=n_chunks, BLOCK_G=block_g, BLOCK_S=BLOCK_S, BLOCK_D=triton.next_power_of_2(D), FIXED=fixed)
    return o


def attention_decode(q, k_cache, v_cache, lengths):
    """o [B, Hq, D] for one new token per sequence: q [B, Hq, D]; k_cache, v_cache [B, Hkv, S, D]
    (positions >= lengths[b] are stale); lengths int32 [B]. Query head h reads KV head h // G."""
    return _launch(q, k_cache, v_cache, lengths, fixed=False)


def attention_decode_fixed(q, k_cache, v_cache, lengths):
    return _launch(q, k_cache, v_cache, lengths, fixed=True)


def attention_decode_ref(q, k_cache, v_cache, lengths):
    """Plain torch on [B, KV, G, D] queries (the spec's layout): masked softmax over the cache."""
    S, D = k_cache.shape[2], q.shape[-1]
    valid = (torch.arange(S, device=q.device)[None, :] < lengths.long()[:, None])[:, None, None, :]
    scores = torch.einsum("bhgd,bhsd->bhgs", q, k_cache) / math.sqrt(D)
    probs = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
    return torch.einsum("bhgs,bhsd->bhgd", probs, torch.where(valid.transpose(-1, -2), v_cache, 0.0))


def make_spec(kernel):
    import kladder as kl

    def grouped(q, k_cache, v_cache, lengths):
        # the spec's q is [B, KV, G, D] so that the group is a dim; the kernel takes [B, KV * G, D]
        B, KV, G, D = q.shape
        return kernel(q.reshape(B, KV * G, D), k_cache, v_cache, lengths).reshape(B, KV, G, D)

    grouped.__name__ = kernel.__name__
    return kl.Spec(
        "attention_decode",
        kernel=grouped,
        reference=attention_decode_ref,
        args={"q": kl.Tensor("B KV G D", dtype=["bfloat16", "float16"]),
              "k_cache": kl.Tensor("B KV S D", like="q"),
              "v_cache": kl.Tensor("B KV S D", like="q"),
              # each sequence's filled length; cache positions past it hold stale values
              "lengths": kl.Tensor("B", dtype="int32", range=(1, "S"))},
        returns=kl.Tensor("B KV G D", like="q"),
        # the groups of the models served: Llama-3-8B 4, Qwen2-7B 7, Llama-3-70B 8 (none above 8);
        # KV heads per GPU 1 (70B at TP8) to 8; head dims 64 and 128
        dims={"B": kl.Dim(1, 64),
              "KV": kl.Dim(1, 8, widths=[1, 8]),
              "G": kl.Dim(1, 8, widths=[4, 7, 8]),
              "S": kl.Dim(1, 4096, tile=BLOCK_S),
              "D": kl.Dim(1, 256, widths=[64, 128])},
        model=kl.InModel(slot=(SLOT, kernel)),        # the model calls the kernel with q as [B, Hq, D]
    )


spec, fixed = build_specs(make_spec, attention_decode, attention_decode_fixed)
