"""sampled_timing: in a decode loop the launcher times one call in 16 for the engine's latency
histogram, and the timed path, a copy of the launch sequence, never zeroes the workspace the
split reduction accumulates into: every timed call sums its squares on top of the last call's.

y = x / sqrt(mean(x^2) + eps) * w, row by row. A row is split between SPLIT = 2 programs (a
decode batch has few rows; one program per row leaves most SMs idle): each adds the sum of
squares of its half into the row's fp32 slot of a workspace (tl.atomic_add), and a second
kernel scales the row by the rsqrt of its slot. The slots must start every call at zero; the
launcher zeroes them before the reduction. The telemetry path (a shape called STEADY = 8 times
in a row is a decode loop; from then on every 16th call of the streak is timed kernel by
kernel, never while a CUDA graph is being captured) launches the same two kernels between
clock reads, without the memset: the slot holds last call's sum of squares plus this call's.
"""
import time

import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)

CASE = dict(
    name="sampled_timing",
    gap="repetition",
    rung=5,
    mirrors="the rare-failure shape of reference/003 §07 (a rarely taken path; aiter #6344's rows scaled by 1.41)",
    needs="cpu",
    story=(
        "rmsnorm splits each row between two programs, which add the sums of squares of their "
        "halves into the row's fp32 slot of a workspace with tl.atomic_add; the launcher zeroes "
        "the slots before every call. For the engine's per-op latency histogram the launcher "
        "times one call in 16 once a shape has come 8 times in a row (a decode loop, where the "
        "rhythm is steady and one timed call costs little), synchronizing and reading the clock "
        "around each kernel. That timed path is a copy of the launch sequence made when the "
        "reduction still stored one sum per row, before the split made the workspace "
        "accumulate, and the copy never got the memset: a timed call adds its squares to the "
        "last call's, and the whole batch comes out scaled by about 1/sqrt(2) (0.707 on the "
        "same inputs; on new inputs, by whatever the last call's rows were). One call in 16, "
        "only in steady state: every unit test (a few calls per shape), every rung-1 to -4 "
        "point (at most 4 calls of one shape in a row) and every graph replay (the host code "
        "does not run; no call is timed while capturing) sees a correct kernel. Rung 5's eager "
        "repetition catches it: 100 calls of one point on the CPU, 6 of them wrong, the rate "
        "with its interval; on the GPU the eager point among the graph-replayed ones. The twin "
        "times the very launch sequence the hot path runs."
    ),
)

SPLIT = 2           # programs per row
STEADY = 8          # the same shape this many calls in a row: a decode loop
SAMPLE_EVERY = 16   # in steady state, one call in 16 is timed


@triton.jit
def _sumsq_kernel(x_ptr, ws_ptr, N, stride_x, BLOCK: tl.constexpr):
    row, part = tl.program_id(0), tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.atomic_add(ws_ptr + row, tl.sum(x * x, axis=0))


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, ws_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    row, part = tl.program_id(0), tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    rstd = tl.rsqrt(tl.load(ws_ptr + row) / N + eps)
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class Telemetry:
    """The engine's latency histogram: which calls are timed, and what they measured."""

    def __init__(self):
        self.key, self.streak, self.samples = None, 0, []

    def sampled(self, x) -> bool:
        key = (tuple(x.shape), x.dtype, x.device)
        self.streak = self.streak + 1 if key == self.key else 1
        self.key = key
        capturing = x.is_cuda and torch.cuda.is_current_stream_capturing()
        return not capturing and self.streak > STEADY and self.streak % SAMPLE_EVERY == 0


_TELEMETRY = Telemetry()
_TELEMETRY_FIXED = Telemetry()
_WORKSPACE = {}     # per device: fp32 slots, one a row, grown on demand


def _workspace(device, rows):
    ws = _WORKSPACE.get(device)
    if ws is None or ws.numel() < rows:
        ws = _WORKSPACE[device] = torch.empty(triton.next_power_of_2(rows), dtype=torch.float32, device=device)
    return ws[:rows]


def _clock(x):
    if x.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter()


def _prepare(x, w):
    # the kernels walk rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    M, N = x.shape
    return x, w.contiguous(), torch.empty_like(x), _workspace(x.device, M), (M, SPLIT), triton.next_power_of_2(
        triton.cdiv(N, SPLIT))


def _launch(x, w, y, ws, grid, block, eps):
    ws.zero_()                              # the halves' sums accumulate: every call starts at zero
    _sumsq_kernel[grid](x, ws, x.shape[1], x.stride(0), BLOCK=block)
    _scale_kernel[grid](x, w, y, ws, x.shape[1], x.stride(0), y.stride(0), eps, BLOCK=block)


def _launch_timed(x, w, y, ws, grid, block, eps):
    # Timed kernel by kernel for the latency histogram. The bug: this copy of the launch
    # sequence predates the split reduction and has no memset: the slots keep the last
    # call's sums of squares, and this call's are added to them.
    t0 = _clock(x)
    _sumsq_kernel[grid](x, ws, x.shape[1], x.stride(0), BLOCK=block)
    t1 = _clock(x)
    _scale_kernel[grid](x, w, y, ws, x.shape[1], x.stride(0), y.stride(0), eps, BLOCK=block)
    _TELEMETRY.samples.append((t1 - t0, _clock(x) - t1))


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    x, w, y, ws, grid, block = _prepare(x, w)
    (_launch_timed if _TELEMETRY.sampled(x) else _launch)(x, w, y, ws, grid, block, eps)
    return y


def rmsnorm_fixed(x, w, eps=1e-6):
    x, w, y, ws, grid, block = _prepare(x, w)
    if _TELEMETRY_FIXED.sampled(x):
        # The fix: time the very launch sequence the hot path runs, memset included.
        t0 = _clock(x)
        _launch(x, w, y, ws, grid, block, eps)
        _TELEMETRY_FIXED.samples.append((_clock(x) - t0,))
    else:
        _launch(x, w, y, ws, grid, block, eps)
    return y


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        name="rmsnorm_split",
        kernel=kernel,
        # decode batches, with q/k-norm (128) and hidden widths (gpt-oss 2880, Llama-3-8B 4096)
        dims={"M": kl.Dim(1, 256), "N": kl.Dim(1, 8192, widths=[128, 2880, 4096])},
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
