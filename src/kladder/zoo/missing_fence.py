"""missing_fence: a split row reduction whose last program reads the other programs' partial
sums without acquire ordering, and whose programs publish them without release: the leader can
read a partial before it lands, and takes the last call's instead.

y = x / sqrt(mean(x^2) + eps) * w for decode-sized batches of very wide rows. The sum of squares
of a row is split between SPLIT programs (one per 8192 columns, up to 8): each stores its
BLOCK partial sums (one a lane, every warp storing its own) in its slot of a workspace, and one
thread counts the program's arrival on the row's int32 counter; the program that arrives last
(the leader) sums the row's partials, writes the row's rstd and puts the counter back to zero.
A second kernel scales the rows. The arrival is a relaxed atomic with no barrier before it, and
the leader's loads are plain: nothing makes a program's warps finish their stores before its
count announces them, nor orders the leader's loads after the count it read. Most calls the
stores have landed; now and then a leader reads lanes that still hold the previous call's
partials, and its row is scaled by the wrong rstd.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="missing_fence",
    gap="repetition",
    rung=5,
    mirrors="aiter #6344/#6348 (a reduction's partials read before they land; the fix adds release and acquire "
            "fences), #4841 (a barrier race: 7 stuck events in 292,889,600 row-launches)",
    needs="cuda",
    story=(
        "rmsnorm for decode batches of very wide rows splits each row's sum of squares between up to 8 "
        "programs (one per 8192 columns), so that a batch of 8 rows still fills the GPU. Each program "
        "stores its 1024 lanes of partial sums (every warp its own) in the row's slot of a workspace, "
        "and one thread counts the program's arrival on the row's counter; the last to arrive sums "
        "the partials, writes rstd and resets the counter, and a "
        "second kernel scales the rows. The arrival was made a relaxed atomic (acq_rel is the default; "
        "relaxed looked cheaper, and every test passed), with no barrier before it, and the leader "
        "loads the partials plainly: nothing makes the other warps finish their stores before the count "
        "that announces them. Almost always they have landed by the time the last count does; now and "
        "then the leader reads lanes still holding the previous call's partials, and the row comes out scaled "
        "by the wrong factor. On the same inputs the stale partial is the same number, so a "
        "determinism test sees nothing; on new inputs it is last call's row. Every unit test, every "
        "rung 1-4 point, is one call or a few: a sample of a rare event. Rung 5's repetition with "
        "fresh inputs at the widest rows catches it and measures its rate on the H200 (bench/"
        "h200_rung5.sh). The twin puts a barrier and an acq_rel arrival between the store and the "
        "count, and loads the partials through L2 (.cg). On the CPU the interpreter runs the "
        "programs one after another, so the race cannot happen there: both kernels are right."
    ),
)

COLUMNS_PER_SPLIT = 8192
MAX_SPLIT = 8
BLOCK = 1024


@triton.jit
def _rstd_kernel(x_ptr, part_ptr, count_ptr, rstd_ptr, N, stride_x, eps, tiles,
                 SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    row, split = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(tiles):
        cols = (split * tiles + t) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    lanes = tl.arange(0, BLOCK)
    tl.store(part_ptr + (row * SPLIT + split) * BLOCK + lanes, acc)
    # The bug: one thread counts the arrival, relaxed, with no barrier before it: the other
    # warps of this program may not have stored their lanes above when the leader reads them.
    arrived = tl.atomic_add(count_ptr + row, 1, sem="relaxed")
    if arrived == SPLIT - 1:
        slots = (row * SPLIT + tl.arange(0, SPLIT))[:, None] * BLOCK + lanes[None, :]
        parts = tl.load(part_ptr + slots)
        tl.store(rstd_ptr + row, tl.rsqrt(tl.sum(tl.sum(parts, axis=1), axis=0) / N + eps))
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed")


@triton.jit
def _rstd_kernel_fixed(x_ptr, part_ptr, count_ptr, rstd_ptr, N, stride_x, eps, tiles,
                       SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    row, split = tl.program_id(0), tl.program_id(1)
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
    kernel[(M, split)](x, parts, counts, rstd, N, x.stride(0), eps, tiles, SPLIT=split, BLOCK=BLOCK)
    _scale_kernel[(M, triton.cdiv(N, BLOCK))](x, w, rstd, y, N, x.stride(0), y.stride(0), BLOCK=BLOCK)
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    return _launch(_rstd_kernel, _WORKSPACE, x, w, eps)


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(_rstd_kernel_fixed, _WORKSPACE_FIXED, x, w, eps)


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "rmsnorm_wide",
        kernel=kernel,
        reference=rmsnorm_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "w": kl.Tensor("N", dtype="float32"),
              "eps": 1e-6},
        returns=kl.Tensor("M N", like="x"),
        # decode batches of wide rows: a vocabulary-sized or hidden-concatenated row, 8K columns a split
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 65536, tile=[BLOCK, COLUMNS_PER_SPLIT], widths=[7168, 16384])},
        rows="M",
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
