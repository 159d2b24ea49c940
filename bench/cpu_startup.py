"""What a user waits for on the CPU, against `python -c "import torch"`, side by side.

Four commands on tests/specs/trivial.py: a trivial rung-1 climb (the climb imports torch and
the spec, a worker does the same in parallel, three tiny points run, the report prints), the
default climb (every rung: rung 4's fresh worker and jit-cache processes, rung 5's repetition
and stream, rung 7's import tracer; `kladder climb SPEC --device cpu` as a user types it),
`kladder repro` of its first point (the fix-and-rerun loop: one worker, one point) and
`kladder points` (no worker). Each round times every command back to back, interleaved;
medians over rounds. With --old SRC the same commands of another tree (its src/ folder, e.g.
the tree before a change) run in the same rounds, alternating with this one's.
Targets: the rung-1 climb at most 1.5 s more than the import (issue 11); the default climb at
most 5 s more (issue 32); repro and points within 2 s of it (issue 25).

usage: python bench/cpu_startup.py [--rounds 7] [--old OTHER/src] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "src"))
SPEC = os.path.join(HERE, "..", "tests", "specs", "trivial.py")
# the spec's first rung-1 point (N = 1), as `kladder points --json` prints it
POINT = json.dumps({"spec": "double", "rung": 1, "dims": [["N", 1]], "seed": 1844798702})
TARGET = {"climb": 1.5, "climb_all": 5.0, "repro": 2.0, "points": 2.0}


CPU: dict[str, list[float]] = {}     # a command's CPU seconds (user + system), its processes' and their children's


def timed(cmd: list[str], src: str | None, name: str = "") -> float:
    """The command's wall seconds; its CPU seconds (every process it started, reaped: workers, the
    fork server and what it forked) go to CPU[name]. On a shared machine the CPU seconds are the
    steadier measure: the wall of an idle 2-core machine is at least half of them."""
    env = dict(os.environ, PYTHONPATH=src) if src else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    if name:
        CPU.setdefault(name, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return dt


def commands(d: str) -> dict[str, list[str]]:
    k = [sys.executable, "-m", "kladder.tools.cli"]
    # --fresh: from its second run on, the outcome store (issue 32) would reuse every point and the
    # climbs would time a lookup (0.4-0.7 s, under `import torch`'s own 1.2 s: 2026-12-07); a user's
    # first climb of the spec is what is timed
    return {"climb": [*k, "climb", SPEC, "--rungs", "1", "--device", "cpu", "--quiet", "--fresh", "--log",
                      os.path.join(d, "l.jsonl")],
            "climb_all": [*k, "climb", SPEC, "--device", "cpu", "--quiet", "--fresh", "--log", os.path.join(d, "a.jsonl")],
            "repro": [*k, "repro", SPEC, POINT, "--device", "cpu"],
            "points": [*k, "points", SPEC, "--rungs", "1", "--device", "cpu"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--old", metavar="SRC", help="another tree's src/ folder, timed in the same rounds")
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = {"new": SRC, **({"old": os.path.abspath(args.old)} if args.old else {})}
    torch_cmd = [sys.executable, "-c", "import torch"]
    samples: dict[str, list[float]] = {"import torch": []}
    with tempfile.TemporaryDirectory() as d:
        cmds = commands(d)
        timed(torch_cmd, None)                                   # warm the page cache
        for src in trees.values():
            for c in cmds.values():
                timed(c, src)
        for r in range(args.rounds):
            samples["import torch"].append(timed(torch_cmd, None, "import torch"))
            order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
            for tree, src in order:
                for name, c in cmds.items():
                    samples.setdefault(f"{tree} {name}", []).append(timed(c, src, f"{tree} {name}"))
    med = {k: statistics.median(v) for k, v in samples.items()}
    cpu = {k: statistics.median(v) for k, v in CPU.items()}
    t, tc = med["import torch"], cpu["import torch"]
    load = os.getloadavg()[0]
    print(f"{args.rounds} interleaved rounds, load average {load:.2f}, {os.cpu_count()} cores")
    print(f"{'python -c import torch':28} median {t:.2f} s  cpu {tc:.2f} s")
    for name in TARGET:
        for tree in trees:
            m, c = med[f"{tree} {name}"], cpu[f"{tree} {name}"]
            print(f"{tree + ' kladder ' + name:28} median {m:.2f} s  difference {m - t:+.2f} s (target <= "
                  f"+{TARGET[name]:.2f} s)  cpu {c:.2f} s ({c - tc:+.2f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples_s": samples, "medians_s": med, "cpu_samples_s": CPU, "cpu_medians_s": cpu,
                       "trees": trees, "load_average": load, "cores": os.cpu_count(), "rounds": args.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
