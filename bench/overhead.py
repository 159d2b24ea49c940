"""What kladder's checks cost per point, against the bare kernel call, measured side by side.

For a small and a large point of the zoo's fixed RMSNorm, each round times, interleaved:
  bare      the kernel call alone on ready inputs (what a unit test pays)
  guards    allocating the guarded buffers, sentinels and seeded inputs
  poison    poisoning the outputs (out-args; kernel-allocated ones are poisoned by torch)
  check     the guard check, bit for bit, after the call (every guard of the point in one fused
            compare and one host sync: materialize.any_damaged)
  compare   contract + NaN-aware comparison against a ready reference output: on a GPU one fused
            pass over the output and the reference's copy in the output's dtype (checks/fast.py),
            the exact float32/float64 comparison (checks/values.py) only when it is unsure
  reference the float64 reference itself and its float32 copy, as harness.expected makes them
            (its cost belongs to the spec, shown apart)
Times are medians over rounds, with device synchronisation around every stage (only a GPU
timing means anything in absolute terms; on the CPU read the ratios).

usage: python bench/overhead.py [--device cuda] [--rounds 30] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

if "--device" not in sys.argv or "cpu" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

from kladder.checks.contract import contract
from kladder.checks.pattern import Where
from kladder.checks import values
from kladder.gen.materialize import any_damaged, materialize, poison, reference_args
from kladder.core.point import Point
from kladder.zoo import rmsnorm_n_tail as case

SIZES = {"cuda": {"small": (64, 4096), "large": (16384, 8192)},
         "cpu": {"small": (4, 512), "large": (64, 4096)}}


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - t0, out


def one_round(spec, point, device):
    t = {}
    t["guards"], inputs = timed(lambda: materialize(spec, point, device), device)
    y = torch.empty_like(inputs.args[0])
    t["poison"], _ = timed(lambda: poison(y, "bfloat16"), device)
    t["bare"], out = timed(lambda: spec.kernel(*inputs.args), device)
    t["check"], hit = timed(lambda: any_damaged(inputs.guarded.values()), device)
    ref_args = reference_args(spec, inputs)

    def reference():                  # as harness.expected: the reference, and its copy in the output's dtype
        r = spec.reference(*ref_args)
        return r, r.to(out.dtype)
    t["reference"], (ref, ref_lo) = timed(reference, device)
    tol = spec.tolerance_for("bfloat16")

    def compare():
        contract("out", out, tuple(out.shape), "bfloat16", device)
        m = values.mismatch(out, ref, tol, None, ref_lo)
        return None if m is None else values.finding("out", m, out, ref, tol, Where(("M", "N")))
    t["compare"], finding = timed(compare, device)
    if finding is not None or hit:
        from kladder.report.words import message
        raise SystemExit(f"the fixed kernel failed its own benchmark point: {message(finding) if finding else 'a guard'}")
    return t


def bench(device, rounds):
    spec = case.fixed
    rows = {}
    for label, (m, n) in SIZES[device].items():
        point = Point(spec.name, 1, (("M", m), ("N", n)), (("x", "bfloat16"),), why=f"bench {label}")
        one_round(spec, point, device)                      # warm-up: JIT compile, allocator
        samples = [one_round(spec, point, device) for _ in range(rounds)]
        med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        checks = med["guards"] + med["poison"] + med["check"] + med["compare"]
        rows[label] = {"M": m, "N": n, "dtype": "bfloat16", "rounds": rounds,
                       **{f"{k}_ms": round(v * 1e3, 4) for k, v in med.items()},
                       "checks_ms": round(checks * 1e3, 4),
                       "checks_over_bare": round(checks / med["bare"], 2),
                       "reference_over_bare": round(med["reference"] / med["bare"], 2)}
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = bench(args.device, args.rounds)
    name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    print(f"device {name}, torch {torch.__version__}, medians of {args.rounds} interleaved rounds")
    cols = ["bare_ms", "guards_ms", "poison_ms", "check_ms", "compare_ms", "checks_ms", "checks_over_bare",
            "reference_ms", "reference_over_bare"]
    print(f"{'point':24}" + "".join(f"{c:>20}" for c in cols))
    for label, r in rows.items():
        print(f"{label + ' ' + str(r['M']) + 'x' + str(r['N']):24}" + "".join(f"{r[c]:>20}" for c in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
