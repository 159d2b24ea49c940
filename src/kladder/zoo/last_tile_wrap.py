"""last_tile_wrap: stores take a 32-bit byte offset from C's base and leave the rows past M
to the buffer's range check; the last tile's rows past 2^32 bytes wrap onto rows 0.. (GPU).

C = A @ B (fp16 in, fp32 accumulate, fp16 out) in 256-row tiles, stored the way an AMD
buffer store works: a 32-bit byte offset from the descriptor's base, and the hardware
drops every lane whose offset is not below the record count (C's size in bytes). The
kernel masks columns past N but leaves rows past M to that check. Right while the padded
last tile stays below 2^32 bytes; at M = 14134, N = 151936 C is 40 KB under 2^32 bytes,
and the last tile's 202 rows past M wrap to offset 0 and overwrite rows 0..201.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="last_tile_wrap",
    gap="shapes",
    rung=1,
    mirrors="aiter #6397 (M = 14134)",
    needs="cuda, 16 GiB",
    story=(
        "The GEMM stores C through a buffer descriptor: a 32-bit byte offset from C's base, "
        "with lanes whose offset is not below the record count (C's bytes) dropped. It masks "
        "columns past N and relies on that range check for the rows of the last 256-row tile "
        "past M. At M = 14134 and N = 151936 (a long prefill through Qwen's vocabulary "
        "projection) C is 4,294,926,848 bytes, just under 2^32, so the tensor fits; the last "
        "tile does not: its 202 rows past M cross 2^32, wrap to small offsets inside the "
        "record count, and overwrite rows 0 to 201 with no error. Tests never came near "
        "4 GiB. kladder's rung-1 big point where the tensor fits below 2^32 bytes but its "
        "last tile, padded, crosses (M = 14134 at N = 151936) catches it in the first rows."
    ),
)

BLOCK_M, BLOCK_N, BLOCK_K = 256, 64, 32


@triton.jit
def _buffer_store(base_ptr, voffset, value, mask, num_records, ITEM: tl.constexpr):
    # Triton on NVIDIA has no buffer ops; this does what an AMD buffer store does: the
    # address is base + a 32-bit byte offset, and the hardware drops lanes whose offset
    # is not below the descriptor's record count (no fault, no write).
    in_range = voffset < num_records
    tl.store(base_ptr + (voffset // ITEM).to(tl.int64), value, mask=mask & in_range)


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, c_records,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 ITEM: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    # 32-bit byte offsets from C's base, as the buffer descriptor takes them (mod 2^32).
    # The bug: rows past M are left to the range check, which a wrapped offset passes.
    voff = (rm[:, None].to(tl.uint32) * stride_cm + rn[None, :].to(tl.uint32) * stride_cn) * ITEM
    _buffer_store(c_ptr, voff, acc.to(c_ptr.dtype.element_ty), rn[None, :] < N, c_records, ITEM)


@triton.jit
def _gemm_kernel_fixed(a_ptr, b_ptr, c_ptr, M, N, K, c_records,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       ITEM: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    # The fix: 64-bit offsets, and rows past M masked explicitly.
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _launch(kernel, a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    # a descriptor's record count is a 32-bit field
    c_records = min(c.numel() * c.element_size(), 2**32 - 1)
    # N tiles vary fastest: the programs of one row tile run together and share its A tile in L2
    grid = (triton.cdiv(N, BLOCK_N), triton.cdiv(M, BLOCK_M))
    kernel[grid](a, b, c, M, N, K, c_records, *a.stride(), *b.stride(), *c.stride(),
                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, ITEM=c.element_size(),
                 num_warps=8)
    return c


def gemm(a, b):
    """C = A @ B (fp16 in, fp32 accumulate, fp16 out), 256-row tiles."""
    return _launch(_gemm_kernel, a, b)


def gemm_fixed(a, b):
    return _launch(_gemm_kernel_fixed, a, b)


def gemm_ref(a, b):
    return a @ b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "gemm_lm_head",
        kernel=kernel,
        reference=gemm_ref,
        # fp16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as raw bits.
        args={"a": kl.Tensor("M K", dtype="float16"), "b": kl.Tensor("K N", dtype="float16")},
        returns=kl.Tensor("M N", like="a"),
        # M: tokens of a long prefill; K: hidden sizes; N: vocabularies (Llama-2, -3, Qwen2)
        dims={"M": kl.Dim(1, 1 << 16, tile=BLOCK_M),
              "N": kl.Dim(1, 1 << 18, tile=BLOCK_N, widths=[32000, 128256, 151936]),
              "K": kl.Dim(1, 8192, tile=BLOCK_K, widths=[2880, 4096, 7168])},
        rows="M",
    )


spec, fixed = build_specs(make_spec, gemm, gemm_fixed)
