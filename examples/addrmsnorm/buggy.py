"""Three copies of addrmsnorm.py's kernel, each with one bug a newcomer writes (found and fixed in
TRANSCRIPT.md). Each differs from the correct kernel in the lines marked BUG; the launchers are
the correct one's.

- store_mask:   the mask dropped on the store of y: the last tile of a row writes a whole block,
                past the row's end (into the next row, and past the tensor after the last row)
                whenever 256 does not divide N.
- fp16_sumsq:   the sum of squares kept in float16: h * h overflows float16 (65504) once |h| passes
                256, and the row's rstd becomes 0.
- tail_skipped: the tiles counted as N // BLOCK: the last N % 256 columns are neither summed nor
                written (and a row shorter than 256 not at all).
"""
import torch
import triton
import triton.language as tl

from addrmsnorm import BLOCK


@triton.jit
def _store_mask_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, N, stride_x, stride_r, stride_y, stride_h, eps,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        tl.store(h_ptr + row * stride_h + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        y = (x + r) * rstd * w
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty))       # BUG: no mask=mask


@triton.jit
def _fp16_sumsq_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, N, stride_x, stride_r, stride_y, stride_h, eps,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float16)                                          # BUG: float16
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        tl.store(h_ptr + row * stride_h + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
        acc += (h * h).to(tl.float16)                                                  # BUG: squares in float16
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0).to(tl.float32) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        y = (x + r) * rstd * w
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _tail_skipped_kernel(x_ptr, r_ptr, w_ptr, y_ptr, h_ptr, N, stride_x, stride_r, stride_y, stride_h, eps,
                         BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, (N // BLOCK) * BLOCK, BLOCK):                                # BUG: whole tiles only
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        h = x + r
        tl.store(h_ptr + row * stride_h + cols, h.to(h_ptr.dtype.element_ty), mask=mask)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, (N // BLOCK) * BLOCK, BLOCK):                                # BUG: whole tiles only
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        r = tl.load(r_ptr + row * stride_r + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        y = (x + r) * rstd * w
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(kernel, x, residual, w, eps):
    x = x if x.stride(-1) == 1 else x.contiguous()
    residual = residual if residual.stride(-1) == 1 else residual.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    h = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0 or N == 0:
        return y, h
    kernel[(M,)](x, residual, w, y, h, N, x.stride(0), residual.stride(0), y.stride(0), h.stride(0), eps, BLOCK=BLOCK)
    return y, h


def add_rmsnorm_store_mask(x, residual, w, eps=1e-6):
    return _launch(_store_mask_kernel, x, residual, w, eps)


def add_rmsnorm_fp16_sumsq(x, residual, w, eps=1e-6):
    return _launch(_fp16_sumsq_kernel, x, residual, w, eps)


def add_rmsnorm_tail_skipped(x, residual, w, eps=1e-6):
    return _launch(_tail_skipped_kernel, x, residual, w, eps)
