"""stale_state: the launcher computes its launch plan (block width and tiles per row) on the
first call and keeps it for the life of the process; a later call with a wider row runs the
first call's plan and covers only the first columns.

y = x / sqrt(mean(x^2) + eps) * w, row by row, one program per row. A row is walked in
NUM_TILES tiles of BLOCK_N columns, twice (sum of squares, then scale and store). The plan
(BLOCK_N = next power of two of N up to 1024, NUM_TILES = cdiv(N, BLOCK_N)) is made once, by
the first call, and kept in a module-level variable. Any shape is right in a fresh process,
and so is any narrower row after it; a wider row after a narrower one sums only the columns
the stale plan covers and never writes the rest.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)

CASE = dict(
    name="stale_state",
    gap="execution modes",
    rung=4,
    mirrors="several-shapes-in-one-process gap",
    needs="cpu",
    story=(
        "rmsnorm walks each row in tiles of up to 1024 columns and takes its launch plan "
        "(BLOCK_N and the number of tiles per row) from a module-level variable that the first "
        "call fills in, to keep the heuristic off the decode step's host path; it was written "
        "for one model width, where the plan never changes. In a process that runs a second "
        "width after the first (a q/k-norm at head_dim 128 beside the residual norm at 2880, "
        "a server that loads a second model, a test session), a wider row gets the first "
        "width's plan: after N = 128 (one tile of 128), a row of 2880 sums the squares of its "
        "first 128 columns only, scales them by the wrong rstd, and never writes the other "
        "2752, so torch.empty's bytes come back. A narrower row after a wider one is right "
        "(the extra tiles are masked off), so the bug depends on the order of calls. Every "
        "shape is right in a fresh process, and the unit test passed because its first case "
        "was its widest shape (4096): every later, narrower case ran a plan that covered it. "
        "The check built for it is rung 4's A-B-A mode (shape "
        "A, then B, then A again, in one process). kladder's rung-1 climb trips over it by "
        "accident: all its points run in one worker process, so its first point (N = 1) sets "
        "a one-column plan and every later point with N > 1 fails, every element of the "
        "row wrong. That catch rests on the order the points run in, and each "
        "failure's repro, one point in a fresh worker, passes."
    ),
)

MAX_BLOCK_N = 1024  # columns per tile: more would spill the registers of one program


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, num_tiles,
                    BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for t in range(num_tiles):
        cols = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    for t in range(num_tiles):
        cols = t * BLOCK_N + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def _plan(N):
    block = min(triton.next_power_of_2(N), MAX_BLOCK_N)
    return dict(BLOCK_N=block, num_tiles=triton.cdiv(N, block))


# The launch plan, made by the first call and kept for the life of the process.
_PLAN = None
# The twin's plans, one per row length.
_PLANS = {}


def _launch(x, w, eps, plan):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, plan["num_tiles"],
                          BLOCK_N=plan["BLOCK_N"])
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    global _PLAN
    # The bug: the plan depends on N, but only the first call's N ever makes one.
    if _PLAN is None:
        _PLAN = _plan(x.shape[1])
    return _launch(x, w, eps, _PLAN)


def rmsnorm_fixed(x, w, eps=1e-6):
    # The fix: one plan per row length, made the first time that length is seen.
    N = x.shape[1]
    plan = _PLANS.get(N)
    if plan is None:
        plan = _PLANS[N] = _plan(N)
    return _launch(x, w, eps, plan)


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        name="rmsnorm_tiled",
        kernel=kernel,
        # head_dim 128 (q/k-norm) and hidden sizes (gpt-oss 2880, Llama-3-8B 4096)
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 16384, tile=MAX_BLOCK_N, widths=[128, 2880, 4096])},
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
