"""Fused residual add + RMSNorm in Triton, as a transformer block calls it between layers:

    h = x + residual                              the new residual stream (returned)
    y = h / sqrt(mean(h^2) + eps) * w             the normalised input of the next layer

x, residual: [M, N] bfloat16/float16; w: [N] float32; y and h: [M, N] in x's dtype.

One program per row, and a fixed block of BLOCK = 256 columns walked along the row, so that a
row of any width fits (7168 columns do not fit one block in registers): the first pass adds, stores
h and sums the squares; the second pass scales. The row's last tile is partial whenever 256 does
not divide N, and every load and store of it is masked.

This is the correct kernel. buggy.py holds three copies of it with one newcomer's bug each, and
TRANSCRIPT.md the loop that found and fixed them with kladder.
"""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, N, stride_x, stride_r, stride_y, stride_h, eps,
                        BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)          # 64-bit row offsets: row * stride may pass 2^31
    acc = tl.zeros([BLOCK], dtype=tl.float32)    # the sum of squares, kept in float32
    for start in range(0, N, BLOCK):             # every tile, the partial last one included
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        tl.store(h_ptr + row * stride_h + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
        acc += h * h                             # masked columns add 0
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        y = (x + r) * rstd * w                   # h again in float32, not its rounded copy
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def add_rmsnorm(x, residual, w, eps=1e-6):
    """The launcher: returns (y, h), two new [M, N] tensors of x's dtype."""
    x = x if x.stride(-1) == 1 else x.contiguous()   # the kernel walks a row with unit stride
    residual = residual if residual.stride(-1) == 1 else residual.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    h = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y, h
    _add_rmsnorm_kernel[(M,)](x, residual, w, y, h, N, x.stride(0), residual.stride(0), y.stride(0), h.stride(0),
                              eps, BLOCK=BLOCK)
    return y, h
