"""rmsnorm_n_tail: the store mask covers only whole 8-element vectors, so the last N % 8
elements of every row are never written.

One program per row. Loads and the sum of squares are masked right; only the store rounds
the row length down to whole vectors. The launcher allocates the output with empty_like,
so the unwritten tail keeps whatever the allocator's block held.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)

CASE = dict(
    name="rmsnorm_n_tail",
    gap="shapes",
    rung=1,
    mirrors="aiter #6344",
    needs="cpu",
    story=(
        "Stores go out as 16-byte vectors of 8 elements, and the store mask was written as "
        "cols < (N // 8) * 8, so the last N % 8 elements of every row are never written. The "
        "output comes from torch.empty_like: those elements hold whatever the allocator's "
        "block held (garbage up to 1e38, or NaN), and a test whose fresh buffer happened to "
        "hold plausible values, at model widths that are all multiples of 8 (2880, 4096, "
        "7168), saw nothing. kladder's rung-1 points at N = 1, tile-1 = 7, tile+1 = 9 and "
        "the neighbours of each width (2879, 2881 ...) catch it: kladder poisons "
        "kernel-allocated memory, so the unwritten tail reads NaN against a finite reference."
    ),
)

VEC = 8  # 8 x 16-bit = one 16-byte vector store


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps,
                    BLOCK_N: tl.constexpr, VEC: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    # Whole 16-byte vectors only, so the compiler can emit full-width stores.
    # The bug: the last N % VEC elements of the row are never written.
    tl.store(y_ptr + row * stride_y + cols, y, mask=cols < (N // VEC) * VEC)


@triton.jit
def _rmsnorm_kernel_fixed(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps,
                          BLOCK_N: tl.constexpr, VEC: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    y = (x * rstd * w).to(y_ptr.dtype.element_ty)
    # The fix: mask on the row length itself; the last vector is stored partially.
    tl.store(y_ptr + row * stride_y + cols, y, mask=cols < N)


def _launch(kernel, x, w, eps):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    # one program holds a whole row in registers: the block is N rounded up to a power of 2
    kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps,
                 BLOCK_N=triton.next_power_of_2(N), VEC=VEC)
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    return _launch(_rmsnorm_kernel, x, w, eps)


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(_rmsnorm_kernel_fixed, x, w, eps)


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        kernel=kernel,
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 16384, tile=VEC, widths=[2880, 4096, 7168])},
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
