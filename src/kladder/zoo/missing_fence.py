"""missing_fence: a split row reduction whose last program reads the other programs' partial
sums before they land: each program takes its slot (a ticket) from the row's counter when it
starts, and the program holding the last ticket sums every slot once its own partial is done.
A last ticket says every program has started, not that every partial is stored.

y = x / sqrt(mean(x^2) + eps) * w for decode-sized batches of very wide rows. The sum of squares
of a row is split between SPLIT programs (one per 8192 columns, up to 8), launched side by side
(the split is the grid's fastest axis). Each takes a ticket from the row's int32 counter, sums
its columns' squares, and stores the sum in the row's slot numbered by its ticket; the holder of
the last ticket then reads every slot, writes the row's rstd and puts the counter back to zero.
A second kernel scales the rows. The programs of a row start together and take about as long,
so the last to start is almost always the last to finish; now and then an earlier one finishes
later, and the leader reads its slot while it still holds the previous call's partial: the row
is scaled by a wrong factor. Measured on the H200 (bench/fence_variants.py, fresh inputs): 0.6%
of rows at 17 x 16385 (4 splits; 1 call in 10), 1% at 64 x 16384 and 1024 x 16384 (2 splits),
1 row in 841,728 at 256 x 65536 (8 splits: there the last to start is the last to finish), none
with one split; the twin none anywhere.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)

CASE = dict(
    name="missing_fence",
    gap="repetition",
    rung=5,
    mirrors="aiter #6344/#6348 (a reduction's partials read before they land; the fix adds release and acquire "
            "fences), #4841 (a barrier race: 7 stuck events in 292,889,600 row-launches)",
    needs="cuda",
    story=(
        "rmsnorm for decode batches of very wide rows splits each row's sum of squares between up to 8 "
        "programs (one per 8192 columns), so that a batch of 8 rows still fills the GPU; the programs of a "
        "row are launched side by side. Each program takes a ticket from the row's counter as it starts "
        "(the ticket is the slot of the workspace it fills, so the slots pack in arrival order), sums the "
        "squares of its columns and stores the sum in its slot; the holder of the last ticket sums the "
        "slots, writes rstd and resets the counter, and a second kernel scales the rows. The last ticket "
        "means every program has started, not that every partial is stored: the ticket was taken before "
        "the work (it names the slot) and nothing waits for the others' stores. The programs of a row "
        "start together and take about as long, so the last to start is almost always the last to finish; "
        "now and then an earlier one finishes later, and the leader reads its slot while it still holds "
        "the previous call's partial, and the row comes out scaled by the wrong factor: on the H200, 0.6% "
        "of rows at 17 x 16385 (one call in ten), 1% at two splits, almost never at eight (there the "
        "last to start is the last to finish). Every unit test, every rung 1-4 point, is one call or a "
        "few: a sample of a rare event. Rung 5's repetition catches it and measures its rate (0.7% of "
        "calls on fresh inputs, with its interval), and initcheck sees the leader read slots nothing "
        "wrote yet (docs/results/2026-12-01-h200-session3/h200_session3.sh). The twin counts each program's arrival after its store (a barrier, then an "
        "acq_rel add), and the last to arrive reads the partials through L2 (.cg). On the CPU the "
        "interpreter runs the programs one after another, so the race cannot happen there: both "
        "kernels are right."
    ),
)

COLUMNS_PER_SPLIT = 8192
MAX_SPLIT = 8
BLOCK = 1024


@triton.jit
def _rstd_kernel(x_ptr, part_ptr, count_ptr, rstd_ptr, N, stride_x, eps, tiles,
                 SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    split, row = tl.program_id(0), tl.program_id(1)
    # The bug: the ticket (this program's slot) is taken before the partial exists, and the last
    # ticket is taken for "every partial is in": the others may still be summing.
    ticket = tl.atomic_add(count_ptr + row, 1, sem="relaxed")
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(tiles):
        cols = (split * tiles + t) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    lanes = tl.arange(0, BLOCK)
    tl.store(part_ptr + (row * SPLIT + ticket) * BLOCK + lanes, acc)
    if ticket == SPLIT - 1:
        slots = (row * SPLIT + tl.arange(0, SPLIT))[:, None] * BLOCK + lanes[None, :]
        parts = tl.load(part_ptr + slots)
        tl.store(rstd_ptr + row, tl.rsqrt(tl.sum(tl.sum(parts, axis=1), axis=0) / N + eps))
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed")


@triton.jit
def _rstd_kernel_fixed(x_ptr, part_ptr, count_ptr, rstd_ptr, N, stride_x, eps, tiles,
                       SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    split, row = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(tiles):
        cols = (split * tiles + t) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    lanes = tl.arange(0, BLOCK)
    tl.store(part_ptr + (row * SPLIT + split) * BLOCK + lanes, acc)
    # The fix: every warp's stores done (barrier), then a release on the arrival; the
    # leader's acquire orders its loads after every partial, read through L2 (.cg).
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + row, 1, sem="acq_rel")
    if arrived == SPLIT - 1:
        slots = (row * SPLIT + tl.arange(0, SPLIT))[:, None] * BLOCK + lanes[None, :]
        parts = tl.load(part_ptr + slots, cache_modifier=".cg")
        tl.store(rstd_ptr + row, tl.rsqrt(tl.sum(tl.sum(parts, axis=1), axis=0) / N + eps))
        tl.atomic_xchg(count_ptr + row, 0)


@triton.jit
def _scale_kernel(x_ptr, w_ptr, rstd_ptr, y_ptr, N, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_y + cols, (x * tl.load(rstd_ptr + row) * w).to(y_ptr.dtype.element_ty), mask=mask)


# Per device: (partial sums, MAX_SPLIT x BLOCK a row; arrival counters, zeroed once, reset by each leader)
_WORKSPACE = {}
_WORKSPACE_FIXED = {}


def _workspace(cache, device, rows):
    ws = cache.get(device)
    if ws is None or ws[1].numel() < rows:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("rmsnorm: no workspace for this many rows yet; call it once before capturing a graph")
        n = triton.next_power_of_2(rows)
        ws = cache[device] = (torch.empty(n * MAX_SPLIT * BLOCK, dtype=torch.float32, device=device),
                              torch.zeros(n, dtype=torch.int32, device=device))
    return ws


def _split(N):
    return min(MAX_SPLIT, triton.next_power_of_2(triton.cdiv(N, COLUMNS_PER_SPLIT)))


def _launch(kernel, cache, x, w, eps):
    # the kernels walk rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    M, N = x.shape
    split = _split(N)
    parts, counts = _workspace(cache, x.device, M)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    tiles = triton.cdiv(triton.cdiv(N, BLOCK), split)
    kernel[(split, M)](x, parts, counts, rstd, N, x.stride(0), eps, tiles, SPLIT=split, BLOCK=BLOCK)
    _scale_kernel[(M, triton.cdiv(N, BLOCK))](x, w, rstd, y, N, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    return _launch(_rstd_kernel, _WORKSPACE, x, w, eps)


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(_rstd_kernel_fixed, _WORKSPACE_FIXED, x, w, eps)


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        name="rmsnorm_wide",
        kernel=kernel,
        # decode batches of wide rows: a vocabulary-sized or hidden-concatenated row, 8K columns a split
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 65536, tile=[BLOCK, COLUMNS_PER_SPLIT], widths=[7168, 16384])},
        rows="M",
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
