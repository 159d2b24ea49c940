"""The tiny Triton kernels run/interpreter.py runs once per worker to see what Triton's
interpreter gets wrong on this machine. Imported only under the interpreter, with Triton there."""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def double(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, 2 * x, mask=i < N)


@triton.jit
def to_bfloat16(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, x.to(tl.bfloat16), mask=i < N)


@triton.jit
def through_fp8(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, x.to(tl.float8e4nv).to(tl.float32), mask=i < N)


@triton.jit
def libdevice_exp(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, libdevice.exp(x), mask=i < N)


@triton.jit
def loop_sum(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        i = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + i, mask=i < N, other=0.0)
    tl.store(y_ptr, tl.sum(acc, 0))
