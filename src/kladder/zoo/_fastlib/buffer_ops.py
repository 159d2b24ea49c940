"""_fastlib.buffer_ops (in _fastlib.expr until 0.3): masked row loads and stores."""
import triton
import triton.language as tl


@triton.jit
def load_row(ptr, row, stride, cols, n):
    """Row `row` of a row-major buffer, elements `cols`; zero past the row's `n` elements."""
    return tl.load(ptr + row * stride + cols, mask=cols < n, other=0.0)


@triton.jit
def store_row(ptr, row, stride, cols, n, values):
    tl.store(ptr + row * stride + cols, values, mask=cols < n)
