"""A trivial rung-1 climb on the CPU against `python -c "import torch"`, side by side.

What a user waits for before the first verdict: the climb imports torch (the spec does), a
worker imports torch and the spec (in parallel, started first), three tiny points run, the
report prints. Each round times both commands back to back, interleaved; medians over rounds.
Target (issue 11): the climb at most 1.5 s more than the import.

usage: python bench/cpu_startup.py [--rounds 7] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = os.path.join(HERE, "..", "tests", "specs", "trivial.py")


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        torch_cmd = [sys.executable, "-c", "import torch"]
        climb_cmd = [sys.executable, "-m", "kladder.cli", "climb", SPEC, "--rungs", "1", "--device", "cpu", "--quiet",
                     "--log", os.path.join(d, "l.jsonl")]
        timed(torch_cmd), timed(climb_cmd)                       # warm the page cache
        rounds = [(timed(torch_cmd), timed(climb_cmd)) for _ in range(args.rounds)]
    t = statistics.median(r[0] for r in rounds)
    c = statistics.median(r[1] for r in rounds)
    load = os.getloadavg()[0]
    print(f"{args.rounds} interleaved rounds, load average {load:.2f}, {os.cpu_count()} cores")
    print(f"python -c 'import torch'  median {t:.2f} s")
    print(f"kladder climb (3 points)  median {c:.2f} s")
    print(f"difference {c - t:+.2f} s (target <= +1.50 s); ratio {c / t:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": [{"import_torch_s": a, "climb_s": b} for a, b in rounds], "median_import_torch_s": t,
                       "median_climb_s": c, "difference_s": c - t, "load_average": load, "cores": os.cpu_count()}, f, indent=1)


if __name__ == "__main__":
    main()
