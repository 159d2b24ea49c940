"""assumes_contiguous: a row softmax that uses the row length as the row stride.

y = softmax(x) along the last dim, one program per row, fp32 inside, the output in x's
dtype. The buggy kernel addresses row `row` at `x_ptr + row * N + cols`: right for every
contiguous input, whatever its shape, and wrong for any input whose rows are not packed
back to back with unit stride (a slice of a wider buffer, every other element, a transposed
or an expanded tensor). The fixed twin is handed both strides of x and reads exactly the
elements the view names.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="assumes_contiguous",
    gap="contracts",
    rung=3,
    mirrors="common in kernel libraries",
    needs="cpu",
    story=(
        "The softmax kernel computes a row's address as row * N + col: the row length "
        "doubles as the row stride and the last dim's stride is taken to be 1, which holds "
        "for every tensor a unit test makes with torch.randn. In a model the input is often "
        "a view: the attention scores of one head sliced out of a wider buffer "
        "(scores[:, :n_valid]), a transposed tensor, an expanded row. There the kernel "
        "reads the wrong elements silently, with no fault and finite output: for a slice of "
        "a buffer 16 columns wider, row r starts at the element r * N where it should start "
        "at r * (N + 16), so every row after the first mixes its neighbours' values. Rungs 1 "
        "and 2 build contiguous inputs and pass. Rung 3 hands x to the kernel as a sliced "
        "view, every other element, column-major storage, a 64- and a 1-element storage "
        "offset and a stride-0 broadcast: the sliced, every-other, transposed and broadcast "
        "points fail, every row after the first wrong (the offsets pass: the data pointer "
        "already carries them). The twin passes x.stride(0) and x.stride(1) to the kernel."
    ),
)


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    # The bug: rows are taken to be packed back to back, row stride N, unit column stride.
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def _softmax_kernel_fixed(x_ptr, y_ptr, N, stride_xm, stride_xn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    # The fix: the view's own strides (0 for a broadcast row, 2 for every other element ...).
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * N + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


def softmax(x):
    """softmax(x, dim=-1) for x: [M, N] bf16/fp16; fp32 math, the output in x's dtype."""
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)   # always contiguous
    # one program holds a whole row in registers: the block is N rounded up to a power of 2
    _softmax_kernel[(M,)](x, y, N, BLOCK_N=triton.next_power_of_2(N))
    return y


def softmax_fixed(x):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _softmax_kernel_fixed[(M,)](x, y, N, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(N))
    return y


def softmax_ref(x):
    return torch.softmax(x, dim=-1)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "softmax",
        kernel=kernel,
        reference=softmax_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor("M N", like="x"),
        # M: rows (tokens x heads; kept to 1024 so the CPU points, a program per row, run in
        # seconds); N: the softmax width, up to a 4K context
        dims={"M": kl.Dim(1, 1024),
              "N": kl.Dim(1, 4096, widths=[128, 2048])},
    )


spec, fixed = build_specs(make_spec, softmax, softmax_fixed)
