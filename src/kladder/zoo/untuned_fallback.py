"""untuned_fallback: tuned shapes run a good config; shapes without a tuned entry fall back
to a heuristic whose block does not cover the row.

A single-pass softmax: one program holds a whole row in registers, so it is right only when
BLOCK_N >= N. The tuned table gives that block for the shapes the author tuned; the fallback
heuristic rounds N down to a power of two instead of up (2880 -> 2048), so an untuned N that
is not a power of two normalises over the first BLOCK_N columns and never writes the rest.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="untuned_fallback",
    gap="shapes",
    rung=1,
    mirrors="aiter #4987",
    needs="cpu",
    story=(
        "The launcher looks the shape (M, N) up in a tuned table; a shape with no entry gets "
        "a heuristic config. The kernel is single-pass, one row per program, and assumes "
        "BLOCK_N covers the row, which every tuned entry does. The heuristic computes the "
        "block as 1 << (N.bit_length() - 1), the power of two at or below N, where it meant "
        "the one at or above: right for N = 4096, but N = 2880 gets 2048, so the row is "
        "normalised over its first 2048 columns and the rest are never written. The unit "
        "test ran the tuned shapes, all right. kladder's rung-1 production points (every "
        "production shape with no tuned entry, e.g. M = 32, N = 2880) catch it, as do the "
        "tile-edge points at untuned N that are not powers of two."
    ),
)

# (M, N) -> config, as measured by the author's tuning sweep
TUNED = {
    (1, 2880): dict(BLOCK_N=4096, num_warps=4),
    (1, 4096): dict(BLOCK_N=4096, num_warps=4),
    (1, 7168): dict(BLOCK_N=8192, num_warps=8),
    (8, 4096): dict(BLOCK_N=4096, num_warps=4),
    (32, 4096): dict(BLOCK_N=4096, num_warps=8),
}
PRODUCTION = [dict(M=m, N=n) for m in (1, 8, 32) for n in (2880, 4096, 7168)]


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    # single pass: the whole row lives in registers, so BLOCK_N must cover N
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


def _heuristic(M, N):
    # The bug: bit_length - 1 rounds N down to a power of two (2880 -> 2048).
    block = 1 << max(N.bit_length() - 1, 0)
    return dict(BLOCK_N=block, num_warps=4 if block <= 4096 else 8)


def _heuristic_fixed(M, N):
    # The fix: the power of two at or above N, so one block covers the row.
    block = triton.next_power_of_2(N)
    return dict(BLOCK_N=block, num_warps=4 if block <= 4096 else 8)


def _launch(x, heuristic):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    M, N = x.shape
    cfg = TUNED.get((M, N)) or heuristic(M, N)
    y = torch.empty_like(x)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), **cfg)
    return y


def softmax(x):
    """Softmax over the last dim of x ([M, N], bf16/fp16), computed in fp32."""
    return _launch(x, _heuristic)


def softmax_fixed(x):
    return _launch(x, _heuristic_fixed)


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
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 16384, widths=[2880, 4096, 7168])},
        production=PRODUCTION,
        tuned=[dict(M=m, N=n) for m, n in TUNED],
    )


spec, fixed = build_specs(make_spec, softmax, softmax_fixed)
