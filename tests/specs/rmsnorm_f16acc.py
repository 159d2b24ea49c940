"""An RMSNorm whose sum of squares accumulates in float16 (kladder.climbing.shrink's and kladder explore's
tests of a failure the values cause, issue 33).

One program per row walks it in fixed BLOCK-wide chunks and adds each chunk's sum of squares
to a float16 running total. Two things go wrong, both decided by the values, not by a shape:
- large values (x: huge, |x| > 256) overflow float16's 65504 at the first square: the total is
  inf, rstd 0 and the row comes out all zeros, at every shape, down to M = 1, N = 1;
- with normal values the total grows about 1 a column, and float16's spacing grows with it (2
  at 2048, 8 at 8192): each chunk's sum is rounded to it, so the row's scale drifts by a few
  parts in a thousand at a few thousand columns, past float16's tolerance, at a size that moves
  with the inputs (where exactly depends on the seed).
`fixed` accumulates in float32 and passes."""
import torch
import triton
import triton.language as tl

import kladder as kl

BLOCK = 256


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr, F32: tl.constexpr):
    row = tl.program_id(0)
    if F32:                                              # noqa: SIM108 (one branch a constexpr picks)
        total = tl.zeros([1], dtype=tl.float32)
    else:
        total = tl.zeros([1], dtype=tl.float16)          # the bug: the running sum of squares in float16
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        chunk = tl.sum(x * x, axis=0)
        total += chunk.to(total.dtype)
    rstd = tl.rsqrt(tl.sum(total.to(tl.float32), axis=0) / N + eps)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def _launch(x, w, eps, f32):
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    y = torch.empty_like(x)
    M, N = x.shape
    _rmsnorm[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, BLOCK=BLOCK, F32=f32)
    return y


def rmsnorm(x, w, eps=1e-6):
    return _launch(x, w, eps, False)


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(x, w, eps, True)


def reference(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def make(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=reference,
                   args={"x": kl.Tensor("M N", dtype="float16"), "w": kl.Tensor("N", dtype="float32"), "eps": 1e-6},
                   returns=kl.Tensor("M N", like="x"),
                   dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 16384, tile=BLOCK, widths=[2880, 4096, 7168])})


spec = make("rmsnorm_f16acc", rmsnorm)
fixed = make("rmsnorm_f16acc_fixed", rmsnorm_fixed)
