"""nan_blind: the kernel returns NaN for some rows, and an `abs(a - b) > tol` check counts
zero bad rows because every comparison with NaN is False.

An L1-normalised ReLU gate, w = relu(x) / sum(relu(x)), row by row (ReLU routing weights).
The kernel divides by the bare sum; a row with no positive entry is 0 / 0 = NaN. The
reference is F.normalize(relu(x), p=1), whose built-in eps maps such a row to zeros.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="nan_blind",
    gap="shapes",
    rung=1,
    mirrors="aiter PR (reference/001): `abs(a - b) > tol` is False for NaN",
    needs="cpu",
    story=(
        "ReLU routing weights: w = relu(x) / sum(relu(x)) per row. The kernel divides by the "
        "bare sum, so a row whose entries are all <= 0 comes out 0 / 0 = NaN; the reference "
        "the author wrote, F.normalize(relu(x), p=1), clamps the norm at 1e-12 and returns "
        "zeros. With random normal inputs a row of N entries has no positive one with "
        "probability 2^-N: never at the N = 64 or 256 the unit test used, half the rows at "
        "N = 1. And the unit test would not have seen it anyway: it counted rows with "
        "abs(out - ref) > tol, which is False for NaN. kladder's rung-1 points at N = 1, the "
        "dim's smallest size (half the rows NaN), and at small widths such as N = 7 or 9 with "
        "many rows, catch it with the NaN-aware comparison."
    ),
)


@triton.jit
def _relu_norm_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    r = tl.maximum(x, 0.0)
    # The bug: a row with no positive entry divides 0 by 0.
    y = r / tl.sum(r, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def _relu_norm_kernel_fixed(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    r = tl.maximum(x, 0.0)
    # The fix: clamp the sum as F.normalize does; an all-non-positive row gives zeros.
    y = r / tl.maximum(tl.sum(r, axis=0), 1e-12)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


def _launch(kernel, x):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    # one row per program, held whole in registers
    kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK_N=triton.next_power_of_2(N))
    return y


def relu_norm(x):
    """Row-wise L1-normalised ReLU: relu(x) / sum(relu(x)) (x: [M, N] bf16/fp16)."""
    return _launch(_relu_norm_kernel, x)


def relu_norm_fixed(x):
    return _launch(_relu_norm_kernel_fixed, x)


def relu_norm_ref(x):
    return torch.nn.functional.normalize(torch.relu(x), p=1.0, dim=-1)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "relu_norm",
        kernel=kernel,
        reference=relu_norm_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor("M N", like="x"),
        # N is the number of experts routed over (Mixtral 8, Qwen1.5-MoE 60, DeepSeek-V3 256)
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 512, widths=[8, 60, 128, 256])},
    )


spec, fixed = build_specs(make_spec, relu_norm, relu_norm_fixed)
