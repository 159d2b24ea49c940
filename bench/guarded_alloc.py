"""The cost of guarding the kernel's own allocations (run/guarded_alloc.py): every CPU point of
rung 1 of a few specs, run in this process as a worker runs them, with the hook and without it
(Harness.call's `guarding` swapped for a no-op), interleaved rounds, the median of each. On CUDA
(--device cuda) the same, plus a micro-bench of one torch.empty_like under the hook.

usage: python bench/guarded_alloc.py OUT.json [--device cpu|cuda] [--rounds 3]"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import torch

from kladder.climbing.ladder import rung_points
from kladder.run import harness
from kladder.run.guarded_alloc import guarding
from kladder.run.trial import run_point
from kladder.core.sizes import budget_for, is_big
from kladder.zoo import empty_like_overrun, rmsnorm_n_tail

from specs.torch_ops import SPECS


@contextlib.contextmanager
def _off(device, guard=0):
    yield []


def _points(spec, device):
    # the big points (2^31 bytes and up) are left out: their time is the reference's, not the hook's
    return [p for p in rung_points(spec, 1, budget_for(device), 0)
            if (device == "cuda" or p.needs != "cuda") and not is_big(spec, p.sizes)]


def _climb(spec, points, device):
    t = time.perf_counter()
    statuses = [str(run_point(spec, p, device).outcome.status) for p in points]
    return time.perf_counter() - t, statuses


def _empty_like_us(device, n=5000):
    x = torch.empty(1024, device=device)
    out = {}
    for name, ctx in (("plain", _off), ("guarded", guarding)):
        with ctx(device) as allocated:
            t = time.perf_counter()
            for _ in range(n):
                torch.empty_like(x)
            if device == "cuda":
                torch.cuda.synchronize()
            out[name] = (time.perf_counter() - t) / n * 1e6
        del allocated
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.use_deterministic_algorithms(True, warn_only=True)      # as the worker runs
    if a.device == "cpu":
        torch.set_num_threads(1)
    specs = {"softmax": SPECS["softmax"], "layer_norm": SPECS["layer_norm"],
             "empty_like_overrun.fixed": empty_like_overrun.fixed, "rmsnorm_n_tail.fixed": rmsnorm_n_tail.fixed}
    rows = {}
    for name, spec in specs.items():
        pts = _points(spec, a.device)
        on, off = [], []
        for _ in range(a.rounds):
            t_on, s_on = _climb(spec, pts, a.device)
            harness.guarding, keep = _off, harness.guarding
            try:
                t_off, s_off = _climb(spec, pts, a.device)
            finally:
                harness.guarding = keep
            on.append(t_on)
            off.append(t_off)
        rows[name] = {"points": len(pts), "hook_s": statistics.median(on), "no_hook_s": statistics.median(off),
                      "ratio": statistics.median(on) / statistics.median(off), "same_statuses": s_on == s_off,
                      "statuses": sorted(set(s_on))}
        print(name, rows[name], flush=True)
    doc = {"device": a.device, "torch": torch.__version__, "rounds": a.rounds, "specs": rows,
           "empty_like_us": _empty_like_us(a.device)}
    print(doc["empty_like_us"])
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
