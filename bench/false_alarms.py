"""The false-alarm suite on any device: correct torch ops (tests/specs/torch_ops.py) climbed in
this process, point by point, as a worker runs them, under several seeds; every point must pass
(or be skipped with its reason). tests/test_false_alarms.py runs rungs 1-3 on the CPU in
`make test`; this driver runs the same on the H200 at rungs 1-4 (docs/results/2026-12-01-h200-round/h200_trust.sh).

Big points (2^31 and 2^32 bytes: several GiB each, checked by bench/memory.py) are left out
unless --big; the jitcache mode starts processes of its own and runs only inside a climb's
worker, so in this process it is skipped with that reason, as kladder reports it.

usage: python bench/false_alarms.py [--device cuda] [--rungs 1-4] [--seeds 0,1] [--budget-s 150] [--json PATH]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def _cumsum_f32(x):
    import torch
    return torch.cumsum(x, -1, dtype=torch.float32).to(x.dtype)


def _sdpa_math(q, k, v):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


# Failures of torch's own ops on CUDA that are torch's, not false alarms: each is re-run with the
# op's defect taken away (the twin kernel) and counts as torch's only if that twin passes the
# same point; a twin that fails too leaves the point a false alarm.
KNOWN = {
    ("cumsum", "float16"): (
        "torch's float16 cumsum on CUDA accumulates in float16 (pytorch/pytorch#180150: 11-15x less "
        "accurate than the CPU's): past N ~ 1/u = 2,048 it loses more than half its digits, and with huge "
        "inputs its partial sums overflow to -inf where every prefix sum is finite; the twin accumulates "
        "in float32", _cumsum_f32, lambda pid: True),
    ("sdpa", "bfloat16"): (
        "torch's fused bfloat16 attention with logits of ~1.5e18 tied exactly between keys returns the "
        "sum of the tied keys' values, not their mean (outside the values' range; bench/sdpa_tie.py); "
        "the twin is torch's math backend", _sdpa_math, lambda pid: ":huge" in pid),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rungs", default="1-4")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--budget-s", type=float, default=150.0, help="stop starting new points after this many seconds")
    ap.add_argument("--big", action="store_true", help="also the big (cliff) points")
    ap.add_argument("--trace", action="store_true", help="print each point before it runs (a device fault kills "
                    "this process: the last line names the point)")
    ap.add_argument("--specs", help="comma-separated spec names (default: all)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    from kladder.climbing.ladder import rung_points, skip_note
    from kladder.climbing.session import parse_rungs
    from kladder.report.terminal import render_outcome
    from kladder.run.trial import run_point
    from kladder.core.sizes import budget_for
    from specs.torch_ops import SPECS
    torch.use_deterministic_algorithms(True, warn_only=True)          # as kladder's workers run points
    torch.utils.deterministic.fill_uninitialized_memory = True
    if args.device == "cpu":
        torch.set_num_threads(1)
    budget = budget_for(args.device)
    seeds = [int(s) for s in args.seeds.split(",")]
    rungs = parse_rungs(args.rungs)
    t0 = time.perf_counter()
    counts = {name: Counter() for name in SPECS}
    seconds = Counter()
    bad, warned, torch_defects, done = [], [], [], True
    # rung by rung across the specs: a time budget that runs out cuts the dearest rungs of every
    # spec (rung 4's torch.compile), not the last specs
    for seed in seeds:
        for rung in rungs:
            for name, spec in SPECS.items():
                if args.specs and name not in args.specs.split(","):
                    continue
                for p in rung_points(spec, rung, budget, seed):
                    if p.kind == "big" and not args.big:
                        continue
                    if time.perf_counter() - t0 > args.budget_s:
                        done = False
                        break
                    free = torch.cuda.mem_get_info()[0] if args.device == "cuda" else None
                    note = skip_note(spec, p, args.device, free)
                    if args.trace and note is None:
                        print(f"run {name} {p.id} {p.to_json() if hasattr(p, 'to_json') else ''}", flush=True)
                    o = run_point(spec, p, args.device).outcome if note is None else None
                    status = "skipped" if o is None else str(o.status)
                    counts[name][status] += 1
                    counts[name]["warned"] += bool(o is not None and o.warnings)
                    seconds[name] += 0 if o is None else o.seconds
                    if o is not None and (o.status not in ("passed", "skipped") or o.warnings):
                        entry = {"spec": name, "seed": seed, "id": p.id, "status": status,
                                 "text": render_outcome(o), "warnings": [w.facts.to_dict() for w in o.warnings]}
                        known = KNOWN.get((name, next(iter(p.dtype_of.values()), ""))) if args.device == "cuda" else None
                        if status == "failed" and known is not None and known[2](p.id):
                            twin = run_point(dataclasses.replace(spec, kernel=known[1]), p, args.device).outcome
                            entry.update(reason=known[0], twin=str(twin.status), twin_text=render_outcome(twin))
                            if str(twin.status) == "passed":
                                torch_defects.append(entry)
                                counts[name]["torch's"] += 1
                                continue
                        (warned if status != "failed" and o.warnings else bad).append(entry)
            print(f"seed {seed} rung {rung}: {time.perf_counter() - t0:.0f} s", flush=True)
    rows = [{"spec": n, **c, "seconds": round(seconds[n], 1)} for n, c in counts.items()]
    for r in rows:
        print(f"{r['spec']:14} {r}", flush=True)
    total = Counter()
    for r in rows:
        total.update({k: v for k, v in r.items() if isinstance(v, int) and k != "seconds"})
    print(f"\n{sum(v for k, v in total.items() if k != 'warned')} points of {len(rows)} specs, rungs {args.rungs}, "
          f"seeds {args.seeds}, device {args.device}: {dict(total)}; {'complete' if done else 'stopped at the time budget'}")
    print(f"false alarms (failed): {len(bad)}; warned: {len(warned)}; torch's own defects (each twin passes): "
          f"{len(torch_defects)}")
    for b in bad[:20]:
        print(f"\nFALSE ALARM {b['spec']} seed {b['seed']}:\n{b['text']}{b['warnings'] or ''}{b.get('twin_text', '')}")
    for b in warned[:10]:
        print(f"\nWARNED {b['spec']} seed {b['seed']}: {b['id']} {b['warnings']}")
    for b in torch_defects:
        print(f"\nTORCH'S {b['spec']} seed {b['seed']}: {b['id']}: {b['reason']}; twin {b['twin']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                       "torch": torch.__version__, "rungs": args.rungs, "seeds": seeds, "complete": done,
                       "specs": rows, "false_alarms": bad, "warned": warned, "torch_defects": torch_defects},
                      f, indent=1, allow_nan=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
