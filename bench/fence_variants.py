"""Which split-row reduction races on this GPU, and how often (issue 12: the first missing_fence
was never wrong on the H200 beyond the tolerance). Ways to get a row's partial sums to the program
that sums them, each measured for wrong rows on fresh inputs (a pool of 8: a stale partial is
another call's), without kladder's machinery:

- arrival (missing_fence before session 3): store the partials (every warp its lanes), count the
  arrival relaxed with no barrier; the last to arrive reads them plainly; the grid row-major;
- ticket_rows: each program takes its ticket (its slot) from the row's counter when it starts,
  then computes and stores its partial; the holder of the last ticket sums every slot once its own
  partial is done; the grid row-major (a row's programs launched M apart);
- zoo: missing_fence now, the ticket kernel with the split as the grid's fastest axis (a row's
  programs launched side by side);
- fixed: the zoo's twin (barrier, acq_rel arrival after the store, .cg loads).

usage: python bench/fence_variants.py OUT.json [SECONDS_PER_SHAPE]"""
import json
import sys

import torch
import triton
import triton.language as tl

from kladder.zoo import missing_fence as mf
from missing_fence_rates import rate          # bench/: wrong rows and calls on fresh inputs, with intervals

SHAPES = [(1, 65536), (17, 16385), (64, 65536), (256, 65536), (64, 16384), (1024, 16384), (64, 8192)]


@triton.jit
def _rstd_rows(x_ptr, part_ptr, count_ptr, rstd_ptr, N, stride_x, eps, tiles,
               SPLIT: tl.constexpr, BLOCK: tl.constexpr, TICKET: tl.constexpr):
    """The row-major grid's two kernels: TICKET, the slot taken when the program starts (the
    zoo's kernel, launched row-major); else the arrival counted after the store (the old zoo's)."""
    row, split = tl.program_id(0), tl.program_id(1)
    if TICKET:  # noqa: SIM108 - one branch a kernel variant, as in the zoo's kernels
        slot = tl.atomic_add(count_ptr + row, 1, sem="relaxed")
    else:
        slot = split
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in range(tiles):
        cols = (split * tiles + t) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    lanes = tl.arange(0, BLOCK)
    tl.store(part_ptr + (row * SPLIT + slot) * BLOCK + lanes, acc)
    if TICKET:  # noqa: SIM108 - one branch a kernel variant, as in the zoo's kernels
        last = slot
    else:
        last = tl.atomic_add(count_ptr + row, 1, sem="relaxed")
    if last == SPLIT - 1:
        slots = (row * SPLIT + tl.arange(0, SPLIT))[:, None] * BLOCK + lanes[None, :]
        parts = tl.load(part_ptr + slots)
        tl.store(rstd_ptr + row, tl.rsqrt(tl.sum(tl.sum(parts, axis=1), axis=0) / N + eps))
        tl.atomic_xchg(count_ptr + row, 0, sem="relaxed")


def _rows_major(ticket: bool):
    cache = {}

    def fn(x, w, eps=1e-6):
        M, N = x.shape
        split = mf._split(N)
        parts, counts = mf._workspace(cache, x.device, M)
        rstd = torch.empty(M, dtype=torch.float32, device=x.device)
        y = torch.empty_like(x)
        tiles = triton.cdiv(triton.cdiv(N, mf.BLOCK), split)
        _rstd_rows[(M, split)](x, parts, counts, rstd, N, x.stride(0), eps, tiles, SPLIT=split, BLOCK=mf.BLOCK,
                               TICKET=ticket)
        mf._scale_kernel[(M, triton.cdiv(N, mf.BLOCK))](x, w, rstd, y, N, x.stride(0), y.stride(0), BLOCK=mf.BLOCK)
        return y
    return fn


VARIANTS = {"arrival": _rows_major(False), "ticket_rows": _rows_major(True), "zoo": mf.rmsnorm, "fixed": mf.rmsnorm_fixed}


def main(path, seconds):
    out = []
    for M, N in SHAPES:
        for name, fn in VARIANTS.items():
            r = {"kernel": name, **rate(fn, M, N, seconds)}
            out.append(r)
            print(f"{name:7} M={M:<5} N={N:<6} split={r['split']}: {r['wrong_rows']:,} of {r['rows']:,} rows wrong "
                  f"(rate {r['row_rate']:.3g}, 95% CI {r['row_lo']:.2g}..{r['row_hi']:.2g}), "
                  f"{r['wrong_calls']:,} of {r['calls']:,} calls", flush=True)
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "shapes": out}, f, indent=1, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 2.0)
