"""chunked_prefill_short: a chunked prefill returns NaN for a prompt shorter than one chunk.

Causal self-attention over one prompt (q, k, v: [S, H, D] fp16; fp32 scores, softmax and
PV product), computed the way a serving engine's chunked prefill schedules it: the prompt's
whole chunks of CHUNK tokens run through the prefill kernel in one causal launch; the last
S % CHUNK tokens are an extend step: they attend to the cached prefix (the whole chunks,
every key visible) and to themselves (causal), and the two partial results are merged by
their log-sum-exp (merge_attn_states). Each partial result is a normalised output plus its
log-sum-exp.

The attention kernel normalises by the softmax sum l without a guard. With no key to attend
to, l = 0 and the output is 0 / 0 = NaN (its lse is -inf). A prompt of S >= CHUNK always has
a non-empty prefix behind its remainder, so that never happens; a prompt shorter than one
chunk has no whole chunk: its extend step attends to an empty prefix, and the merge weighs
that NaN by exp(-inf) = 0, which is still NaN.
"""
import math

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="chunked_prefill_short",
    gap="values",
    rung=2,
    mirrors="ATOM #1750 (Kimi KDA chunked prefill on gfx1250: GSM8K 0.0, '!' forever)",
    needs="cpu",
    story=(
        "A chunked prefill runs the prompt's whole chunks of 64 tokens in one causal launch "
        "and the remaining S % 64 tokens as an extend step against the cached prefix, merging "
        "the prefix part and the self part by their log-sum-exp. The attention kernel divides "
        "by the softmax sum without a guard, so a part with no keys comes out 0/0 = NaN with "
        "lse = -inf, and the merge's weight exp(-inf) = 0 times NaN is NaN. Only a prompt "
        "shorter than one chunk has an empty prefix: every output row is NaN, the next layer "
        "turns it into NaN logits and argmax picks token 0. The unit test ran the lengths the "
        "author thought of (64, 128, 200, 1000: every one at least one chunk), so it passed. "
        "kladder's rung-2 chunk points (S = 1, 63, 64, 65 around the declared chunk) catch it "
        "at S = 1 and S = 63, every element NaN where the reference is finite; its value "
        "points, at a base shape of S = 17, fail the same way. Rung 1 catches it too: its "
        "edges S = 1 and S = 2 (the smallest size, and a loop that runs twice) are shorter "
        "than any chunk, and 20 of its 24 CPU points sit there (only the S = 1024 points "
        "pass)."
    ),
)

CHUNK = 64   # the prefill chunk; also the kernel's query and key tile


@triton.jit
def _attn_part_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, n_q, n_k, q_pos0, D, sm_scale,
                      stride_qs, stride_qh, stride_qd, stride_ks, stride_kh, stride_kd,
                      stride_vs, stride_vh, stride_vd, stride_os, stride_oh, stride_ls, stride_lh,
                      CAUSAL: tl.constexpr, CHUNK: tl.constexpr, BLOCK_D: tl.constexpr):
    """One part of the attention: queries [0, n_q) (at positions q_pos0 + i among the keys)
    over keys [0, n_k); the normalised output (fp32) and its log-sum-exp."""
    pid_m, h = tl.program_id(0), tl.program_id(1)
    acc, m_i, l_i, rm, rd = _attend(q_ptr, k_ptr, v_ptr, pid_m, h, n_q, n_k, q_pos0, D, sm_scale,
                                    stride_qs, stride_qh, stride_qd, stride_ks, stride_kh, stride_kd,
                                    stride_vs, stride_vh, stride_vd, CAUSAL, CHUNK, BLOCK_D)
    # The bug: no guard on l_i. A part with no keys (n_k = 0) has l_i = 0: 0 / 0 = NaN.
    o = acc / l_i[:, None]
    lse = m_i + tl.log(l_i)
    _store_part(o_ptr, lse_ptr, o, lse, rm, rd, h, n_q, D, stride_os, stride_oh, stride_ls, stride_lh)


@triton.jit
def _attn_part_kernel_fixed(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, n_q, n_k, q_pos0, D, sm_scale,
                            stride_qs, stride_qh, stride_qd, stride_ks, stride_kh, stride_kd,
                            stride_vs, stride_vh, stride_vd, stride_os, stride_oh, stride_ls, stride_lh,
                            CAUSAL: tl.constexpr, CHUNK: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_m, h = tl.program_id(0), tl.program_id(1)
    acc, m_i, l_i, rm, rd = _attend(q_ptr, k_ptr, v_ptr, pid_m, h, n_q, n_k, q_pos0, D, sm_scale,
                                    stride_qs, stride_qh, stride_qd, stride_ks, stride_kh, stride_kd,
                                    stride_vs, stride_vh, stride_vd, CAUSAL, CHUNK, BLOCK_D)
    # The fix: a part with no keys is an output of 0 with lse = -inf (weight 0 in the merge).
    o = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
    lse = m_i + tl.log(l_i)
    _store_part(o_ptr, lse_ptr, o, lse, rm, rd, h, n_q, D, stride_os, stride_oh, stride_ls, stride_lh)


@triton.jit
def _attend(q_ptr, k_ptr, v_ptr, pid_m, h, n_q, n_k, q_pos0, D, sm_scale,
            stride_qs, stride_qh, stride_qd, stride_ks, stride_kh, stride_kd,
            stride_vs, stride_vh, stride_vd,
            CAUSAL: tl.constexpr, CHUNK: tl.constexpr, BLOCK_D: tl.constexpr):
    """Online softmax over key tiles of CHUNK: the unnormalised output, row max and row sum."""
    rm = pid_m * CHUNK + tl.arange(0, CHUNK)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(q_ptr + rm[:, None] * stride_qs + h * stride_qh + rd[None, :] * stride_qd,
                mask=(rm[:, None] < n_q) & (rd[None, :] < D), other=0.0)
    m_i = tl.full((CHUNK,), float("-inf"), tl.float32)
    l_i = tl.zeros((CHUNK,), tl.float32)
    acc = tl.zeros((CHUNK, BLOCK_D), tl.float32)
    hi = n_k
    if CAUSAL:
        hi = tl.minimum(n_k, q_pos0 + (pid_m + 1) * CHUNK)
    for start in range(0, hi, CHUNK):
        rn = start + tl.arange(0, CHUNK)
        kv_mask = (rn[:, None] < n_k) & (rd[None, :] < D)
        k = tl.load(k_ptr + rn[:, None] * stride_ks + h * stride_kh + rd[None, :] * stride_kd, mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + rn[:, None] * stride_vs + h * stride_vh + rd[None, :] * stride_vd, mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        seen = rn[None, :] < n_k
        if CAUSAL:
            seen = seen & (rn[None, :] <= q_pos0 + rm[:, None])
        s = tl.where(seen, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        # P stays fp32 for the PV product (no rounding of the probabilities to fp16)
        acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision="ieee")
        m_i = m_new
    return acc, m_i, l_i, rm, rd


@triton.jit
def _store_part(o_ptr, lse_ptr, o, lse, rm, rd, h, n_q, D, stride_os, stride_oh, stride_ls, stride_lh):
    tl.store(o_ptr + rm[:, None] * stride_os + h * stride_oh + rd[None, :],
             o, mask=(rm[:, None] < n_q) & (rd[None, :] < D))
    tl.store(lse_ptr + rm * stride_ls + h * stride_lh, lse, mask=rm < n_q)


def _attn_part(kernel, q, k, v, causal, q_pos0=0):
    """(o [n_q, H, D] fp32, lse [n_q, H] fp32) of q over k, v."""
    n_q, H, D = q.shape
    o = torch.empty((n_q, H, D), dtype=torch.float32, device=q.device)
    lse = torch.empty((n_q, H), dtype=torch.float32, device=q.device)
    kernel[(triton.cdiv(n_q, CHUNK), H)](
        q, k, v, o, lse, n_q, k.shape[0], q_pos0, D, 1.0 / math.sqrt(D),
        *q.stride(), *k.stride(), *v.stride(), o.stride(0), o.stride(1), *lse.stride(),
        CAUSAL=causal, CHUNK=CHUNK, BLOCK_D=max(16, triton.next_power_of_2(D)))
    return o, lse


def _merge(o_a, lse_a, o_b, lse_b):
    """merge_attn_states: two partial attentions over disjoint keys, by their log-sum-exp."""
    lse = torch.logaddexp(lse_a, lse_b)
    return o_a * torch.exp(lse_a - lse)[..., None] + o_b * torch.exp(lse_b - lse)[..., None]


def _chunked_prefill(kernel, q, k, v):
    S = q.shape[0]
    whole = S // CHUNK * CHUNK                       # the whole chunks: one causal launch
    out = torch.empty_like(q)
    if whole:
        o, _ = _attn_part(kernel, q[:whole], k[:whole], v[:whole], causal=True)
        out[:whole] = o.to(q.dtype)
    if whole < S:                                    # the remainder: an extend step
        o_pre, lse_pre = _attn_part(kernel, q[whole:], k[:whole], v[:whole], causal=False)
        o_new, lse_new = _attn_part(kernel, q[whole:], k[whole:], v[whole:], causal=True)
        out[whole:] = _merge(o_pre, lse_pre, o_new, lse_new).to(q.dtype)
    return out


def chunked_prefill(q, k, v):
    """Causal self-attention over one prompt, chunk by chunk (q, k, v: [S, H, D] fp16)."""
    return _chunked_prefill(_attn_part_kernel, q, k, v)


def chunked_prefill_fixed(q, k, v):
    return _chunked_prefill(_attn_part_kernel_fixed, q, k, v)


def attention_ref(q, k, v):
    S, H, D = q.shape
    s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(D)
    causal = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
    p = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
    return torch.einsum("hqk,khd->qhd", p, v)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "chunked_prefill",
        kernel=kernel,
        reference=attention_ref,
        # fp16, not bf16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as their
        # raw uint16 bits, so bf16 would fail the twin on the CPU for the interpreter's sake.
        args={"q": kl.Tensor("S H D", dtype="float16"),
              "k": kl.Tensor("S H D", dtype="float16"),
              "v": kl.Tensor("S H D", dtype="float16")},
        returns=kl.Tensor("S H D", like="q"),
        # S: the prompt, cut into chunks of 64 tokens; D: the head dim (64, 128 in models)
        dims={"S": kl.Dim(1, 1024, chunks=[CHUNK]),
              "H": kl.Dim(1, 16),
              "D": kl.Dim(1, 128, widths=[64, 128])},
    )


spec, fixed = build_specs(make_spec, chunked_prefill, chunked_prefill_fixed)
