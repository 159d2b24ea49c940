"""RMSNorm in Triton: one program per row, the whole row in one block.

    y = x / sqrt(mean(x^2) + eps) * w        x: [M, N] bfloat16/float16/float32, w: [N] float32

The block is BLOCK = triton.next_power_of_2(N), so one block always holds the whole row: the
columns N..BLOCK-1 are masked off, and there is no second, partial tile (no "tail" in the
sense of N % BLOCK). Plain Triton and torch only: on a machine without a GPU it runs under
Triton's interpreter (TRITON_INTERPRET=1, which kladder sets in its workers on the CPU).
"""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)          # 64-bit row offsets: row * stride may pass 2^31
    cols = tl.arange(0, BLOCK)
    mask = cols < N                              # the block is N rounded up to a power of two
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)    # masked columns add 0 to the sum
    y = x * rstd * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, w, eps=1e-6):
    """The launcher: one program per row of x ([M, N]); returns a new [M, N] tensor of x's dtype."""
    if x.stride(-1) != 1:                        # the kernel reads a row with unit stride
        x = x.contiguous()                       # (a transposed view is copied first)
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)   # contiguous, whatever x's strides
    if M == 0 or N == 0:
        return y
    _rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(N))
    return y

