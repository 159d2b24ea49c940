"""The rate of missing_fence's stale reads by shape, without kladder's machinery: how often a row
comes out wrong (its leader read a partial before it landed), per row and per call, on fresh
inputs from a pool of 8 (a stale partial is then the last call's, never equal by chance), for
the buggy kernel and its twin, with Clopper-Pearson intervals (kladder.core.stats).

usage: python bench/missing_fence_rates.py OUT.json [SECONDS_PER_SHAPE]"""
import json
import os
import sys
import time

import torch

from kladder.core import stats
from kladder.zoo import missing_fence as mf

SHAPES = [(8, 65536), (64, 65536), (256, 16384), (64, 8192)]      # the last: one split, no race possible
POOL = 8


def rate(fn, M, N, seconds):
    g = torch.Generator(device="cuda").manual_seed(M * 7 + N)
    pool = [(torch.randn(M, N, device="cuda", generator=g).bfloat16(), torch.randn(N, device="cuda", generator=g))
            for _ in range(POOL)]
    refs = [mf.rmsnorm_ref(x.double(), w.double(), 1e-6) for x, w in pool]
    allowed = [1e-5 + 1.6e-2 * torch.maximum(r.abs(), r.pow(2).mean(-1, keepdim=True).sqrt()) for r in refs]
    fn(*pool[0])
    torch.cuda.synchronize()
    bad_rows, bad_calls, calls, t0 = torch.zeros((), dtype=torch.int64, device="cuda"), torch.zeros(
        (), dtype=torch.int64, device="cuda"), 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for i in range(POOL):
            y = fn(*pool[i]).double()
            wrong = ((y - refs[i]).abs() > allowed[i]).any(-1)
            bad_rows += wrong.sum()
            bad_calls += wrong.any()
        calls += POOL
    torch.cuda.synchronize()
    rows, k_rows, k_calls = calls * M, int(bad_rows), int(bad_calls)
    lo, hi = stats.interval(k_rows, rows)
    return {"M": M, "N": N, "split": mf._split(N), "calls": calls, "seconds": round(time.perf_counter() - t0, 2),
            "wrong_rows": k_rows, "rows": rows, "row_rate": k_rows / rows, "row_lo": lo, "row_hi": hi,
            "wrong_calls": k_calls, "call_rate": k_calls / calls, "row_bound": stats.upper_bound(k_rows, rows)}


def main(path, seconds):
    out = []
    for M, N in SHAPES:
        for name, fn in (("buggy", mf.rmsnorm), ("fixed", mf.rmsnorm_fixed)):
            r = {"kernel": name, **rate(fn, M, N, seconds)}
            out.append(r)
            print(f"{name:5} M={M:<4} N={N:<6} split={r['split']}: {r['wrong_rows']:,} of {r['rows']:,} rows wrong "
                  f"(rate {r['row_rate']:.2g}, 95% CI {r['row_lo']:.2g}..{r['row_hi']:.2g}), "
                  f"{r['wrong_calls']:,} of {r['calls']:,} calls")
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "shapes": out}, f, indent=1, allow_nan=False)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 4.0)
    os._exit(0)
