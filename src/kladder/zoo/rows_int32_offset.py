"""rows_int32_offset: element offsets row * stride + col are computed in int32 and wrap once
they pass 2^31 (GPU: the tensor must hold more than 2^31 elements, 4 GiB of bf16).

A log-softmax over the vocabulary, one program per row (a long prefill's logits, [M, V]).
tl.program_id is int32 and Triton passes a stride below 2^31 as i32, so the offset is int32
arithmetic: right for every row of every tensor under 2^31 elements, and past that the
wrapped offset points about 4 GiB before the tensor.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="rows_int32_offset",
    gap="shapes",
    rung=1,
    mirrors="aiter #6402; ATOM #2533",
    needs="cuda, 10 GiB",
    story=(
        "The kernel addresses element (row, col) as row * stride + col. program_id is int32 "
        "and Triton passes a stride below 2^31 as i32, so the sum is int32 and wraps at 2^31 "
        "elements: a long prefill's bf16 logits of 14135 x 151936 (4 GiB) read and write the "
        "tail of its last row about 4 GiB before the tensor, which returns garbage or faults. "
        "Every test used a few thousand rows, and a fresh server never produced a tensor that "
        "size. The CPU cannot show it (the interpreter's int32 wraps the same way, but the "
        "tensor does not fit). kladder's rung-1 big point just past 2^31 elements (M = 14136 at "
        "V = 151936: row 14135 starts past 2^31 elements of bf16) catches it on the last row."
    ),
)


@triton.jit
def _log_softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # The bug: row (int32) * stride (i32) + col is int32 and wraps past 2^31 elements.
    row = tl.program_id(0)
    m = float("-inf")
    s = 0.0
    for start in range(0, N, BLOCK_N):  # online max and sum of exp, one block at a time
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + (row * stride_x + cols), mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + (row * stride_x + cols), mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + (row * stride_y + cols), (x - lse).to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def _log_softmax_kernel_fixed(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # The fix: widen the row index first, so the whole offset is 64-bit.
    row = tl.program_id(0).to(tl.int64)
    m = float("-inf")
    s = 0.0
    for start in range(0, N, BLOCK_N):  # online max and sum of exp, one block at a time
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + (row * stride_x + cols), mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + (row * stride_x + cols), mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + (row * stride_y + cols), (x - lse).to(y_ptr.dtype.element_ty), mask=cols < N)


BLOCK_N = 4096


def _launch(kernel, x):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK_N=min(BLOCK_N, triton.next_power_of_2(N)))
    return y


def log_softmax(x):
    """log_softmax over the last dim of x ([M, V] bf16/fp16 logits), computed in fp32."""
    return _launch(_log_softmax_kernel, x)


def log_softmax_fixed(x):
    return _launch(_log_softmax_kernel_fixed, x)


def log_softmax_ref(x):
    return torch.log_softmax(x, dim=-1)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "log_softmax",
        kernel=kernel,
        reference=log_softmax_ref,
        args={"x": kl.Tensor("M V", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor("M V", like="x"),
        # M: tokens of a long prefill; V: vocabularies (Llama-2, Llama-3, Qwen2)
        dims={"M": kl.Dim(1, 16384),
              "V": kl.Dim(1, 1 << 18, tile=BLOCK_N, widths=[32000, 128256, 151936])},
        rows="M",
    )


spec, fixed = build_specs(make_spec, log_softmax, log_softmax_fixed)
