"""A tiled 2-D add in Triton: each program adds one BLOCK_M x BLOCK_N tile.

    out = x + y                            x, y: [M, N] float16/float32

BLOCK_M and BLOCK_N are fixed per call (keyword arguments of the launcher, with defaults), so
whenever BLOCK_N does not divide N the last tile of a row is partial (N % BLOCK_N columns: a
tail), and the same for M. The loads and the store are masked on both dims for it.
"""
import torch
import triton
import triton.language as tl

BLOCKS = (16, 32, 64)          # the block sizes the launcher accepts, per dim


@triton.jit
def _add2d_kernel(x_ptr, y_ptr, out_ptr, M, N,
                  sxm, sxn, sym, syn, som, son,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)   # 64-bit offsets
    rn = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    mask = (rm[:, None] < M) & (rn[None, :] < N)        # the partial last tiles of M and of N
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=mask, other=0.0)
    y = tl.load(y_ptr + rm[:, None] * sym + rn[None, :] * syn, mask=mask, other=0.0)
    out = x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, out.to(out_ptr.dtype.element_ty), mask=mask)


def add2d(x, y, BLOCK_M=32, BLOCK_N=64):
    """The launcher: x + y for [M, N] tensors of one dtype, in tiles of BLOCK_M x BLOCK_N
    (each one of BLOCKS). Any strides: the kernel is given every tensor's two strides."""
    if BLOCK_M not in BLOCKS or BLOCK_N not in BLOCKS:
        raise ValueError(f"BLOCK_M and BLOCK_N must be in {BLOCKS}, got {BLOCK_M} x {BLOCK_N}")
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return out
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _add2d_kernel[grid](x, y, out, M, N, *x.stride(), *y.stride(), *out.stride(),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return out


def add2d_reference(x, y):
    return x + y
