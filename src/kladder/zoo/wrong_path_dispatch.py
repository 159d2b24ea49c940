"""wrong_path_dispatch: an attention launcher with a decode kernel and a prefill kernel picks the
decode kernel only for one query over a strided KV-cache view; a decode test at seq_len 1 with
contiguous inputs runs the prefill kernel, so the decode kernel, which is wrong, never runs.

o = softmax(q k^T / sqrt(D)) v over every key (no mask), for q [B, H, S, 64] and k, v
[B, H, T, 64]. The prefill kernel runs one program per (batch x head, 16 queries), the decode
kernel one per (batch x head) with a single query; both walk the keys in tiles of 64 with an
online softmax. The decode kernel's last tile loads its missing keys as zeros and leaves their
scores in: each scores 0, and exp(0 - max) joins the normaliser, so every output is too small
whenever T is not a multiple of 64.
"""
import math

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="wrong_path_dispatch",
    gap="toolchain",
    rung=7,
    mirrors="reference/000 §4.3 (a contiguous seq_len = 1 test ran mha[BM128], never mha_decoding)",
    needs="cpu",
    story=(
        "attention() has two kernels: a prefill kernel over tiles of 16 queries, and a decode "
        "kernel for one query. The launcher routes a call to the decode kernel when it comes from "
        "the KV cache, which it recognises by one query over a strided view of a cache (k's rows a "
        "cache slot apart, not contiguous); every other call, a contiguous seq_len = 1 call "
        "included, runs the prefill kernel, which is right for one query too. The decode kernel "
        "loads the missing keys of its last tile as zeros and never masks their scores, so every "
        "decode output is too small when T is not a multiple of 64. The decode unit test called "
        "attention() at seq_len 1 with contiguous tensors: it passed, and it never ran the decode "
        "kernel. kladder's rungs 1-4 pass it the same way: rung 1's seq_len = 1 points and rung "
        "4's small A-B-A partner are contiguous, and rungs 2-4 move values, layouts and modes "
        "around base shapes of 33 and 32 queries, which run the prefill kernel. Rung 7 catches it: "
        "the spec says the decode kernel must run at S = 1 (`kl.Expect('*decode*', when={'S': 1})`), "
        "so rung 7 puts points at S = 1, contiguous and with each input non-contiguous: the "
        "contiguous ones find that the prefill kernel ran instead (a dispatch failure naming it), "
        "and the one with k sliced reaches the decode kernel and finds its outputs wrong. The twin "
        "routes every one-query call to the decode kernel, and masks the tail's scores."
    ),
)

D = 64            # the head dim the kernels are written for
BLOCK_S = 16      # queries per prefill program (tl.dot needs 16)
BLOCK_T = 64      # keys per tile


@triton.jit
def _attn_prefill_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, T, sm_scale, num_tiles,
                         sqb, sqh, sqs, sqd, skb, skh, skt, skd, svb, svh, svt, svd, sob, soh, sos, sod,
                         D: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_T: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    rs = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + b * sqb + h * sqh + rs[:, None] * sqs + rd[None, :] * sqd, mask=rs[:, None] < S,
                other=0.0).to(tl.float32)
    m = tl.full((BLOCK_S,), -float("inf"), tl.float32)
    l = tl.zeros((BLOCK_S,), tl.float32)
    acc = tl.zeros((BLOCK_S, D), tl.float32)
    for t in range(num_tiles):
        rt = t * BLOCK_T + tl.arange(0, BLOCK_T)
        k = tl.load(k_ptr + b * skb + h * skh + rt[:, None] * skt + rd[None, :] * skd, mask=rt[:, None] < T,
                    other=0.0).to(tl.float32)
        v = tl.load(v_ptr + b * svb + h * svh + rt[:, None] * svt + rd[None, :] * svd, mask=rt[:, None] < T,
                    other=0.0).to(tl.float32)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        s = tl.where(rt[None, :] < T, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m = m_new
    o = acc / l[:, None]
    tl.store(o_ptr + b * sob + h * soh + rs[:, None] * sos + rd[None, :] * sod, o.to(o_ptr.dtype.element_ty),
             mask=rs[:, None] < S)


@triton.jit
def _attn_decode_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, T, sm_scale, num_tiles,
                        sqb, sqh, sqd, skb, skh, skt, skd, svb, svh, svt, svd, sob, soh, sod,
                        D: tl.constexpr, BLOCK_T: tl.constexpr, MASK_TAIL: tl.constexpr):
    bh = tl.program_id(0)
    b = bh // H
    h = bh % H
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + b * sqb + h * sqh + rd * sqd).to(tl.float32)
    m = tl.full((1,), -float("inf"), tl.float32)     # the running max and normaliser, as 1-vectors
    l = tl.zeros((1,), tl.float32)
    acc = tl.zeros((D,), tl.float32)
    for t in range(num_tiles):
        rt = t * BLOCK_T + tl.arange(0, BLOCK_T)
        k = tl.load(k_ptr + b * skb + h * skh + rt[:, None] * skt + rd[None, :] * skd, mask=rt[:, None] < T,
                    other=0.0).to(tl.float32)
        v = tl.load(v_ptr + b * svb + h * svh + rt[:, None] * svt + rd[None, :] * svd, mask=rt[:, None] < T,
                    other=0.0).to(tl.float32)
        s = tl.sum(q[None, :] * k, axis=1) * sm_scale
        if MASK_TAIL:
            s = tl.where(rt < T, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        p = tl.exp(s - m_new)
        alpha = tl.exp(m - m_new)
        l = l * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + b * sob + h * soh + rd * sod, (acc / l).to(o_ptr.dtype.element_ty))


def _prefill(q, k, v):
    B, H, S, _ = q.shape
    T = k.shape[2]
    o = torch.empty_like(q)
    _attn_prefill_kernel[(B * H, triton.cdiv(S, BLOCK_S))](
        q, k, v, o, H, S, T, 1.0 / math.sqrt(D), triton.cdiv(T, BLOCK_T),
        *q.stride(), *k.stride(), *v.stride(), *o.stride(), D=D, BLOCK_S=BLOCK_S, BLOCK_T=BLOCK_T)
    return o


def _decode(q, k, v, mask_tail):
    B, H, S, _ = q.shape
    T = k.shape[2]
    o = torch.empty_like(q)
    _attn_decode_kernel[(B * H,)](
        q, k, v, o, H, T, 1.0 / math.sqrt(D), triton.cdiv(T, BLOCK_T),
        q.stride(0), q.stride(1), q.stride(3), *k.stride(), *v.stride(), o.stride(0), o.stride(1), o.stride(3),
        D=D, BLOCK_T=BLOCK_T, MASK_TAIL=mask_tail)
    return o


def _from_kv_cache(q, k):
    # One query against keys a cache slot apart: a token-generation step over the KV cache.
    return q.shape[2] == 1 and not k.is_contiguous()


def attention(q, k, v):
    """softmax(q k^T / sqrt(64)) v, every key visible (q: [B, H, S, 64]; k, v: [B, H, T, 64])."""
    # The bug (with the decode kernel's unmasked tail): one-query calls reach the decode kernel
    # only from the KV cache, so a contiguous decode test runs the prefill kernel.
    if _from_kv_cache(q, k):
        return _decode(q, k, v, mask_tail=False)
    return _prefill(q, k, v)


def attention_fixed(q, k, v):
    # The fix: every one-query call is a decode call, and the decode kernel masks the tail.
    if q.shape[2] == 1:
        return _decode(q, k, v, mask_tail=True)
    return _prefill(q, k, v)


def attention_ref(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1) @ v


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "attention",
        kernel=kernel,
        reference=attention_ref,
        # fp16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as raw bits (loaded as
        # fp32 here anyway; fp16 keeps the CPU run to one dtype's cost)
        args={"q": kl.Tensor(f"B H S {D}", dtype="float16"),
              "k": kl.Tensor(f"B H T {D}", like="q"),
              "v": kl.Tensor(f"B H T {D}", like="q")},
        returns=kl.Tensor(f"B H S {D}", like="q"),
        # S: queries (prefill tiles of 16; 1 in a decode step), T: keys (tiles of 64)
        dims={"B": kl.Dim(1, 64), "H": kl.Dim(1, 32),
              "S": kl.Dim(1, 4096, tile=BLOCK_S), "T": kl.Dim(1, 8192, tile=BLOCK_T, widths=[2048])},
        # a decode step, one query, must run the decode kernel
        toolchain=kl.Toolchain(expect=[kl.Expect("*decode*", when={"S": 1}, label="the decode kernel")]),
    )


spec, fixed = build_specs(make_spec, attention, attention_fixed)
