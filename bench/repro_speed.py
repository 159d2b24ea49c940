"""`kladder repro` of a small point against `python -c "import torch"`, side by side (issue 33: at
most 2 s more on the CPU). Three points: tests/specs/trivial.py's first (a torch op that passes:
one run), the zoo's rmsnorm_n_tail at M = 1, N = 4095 (a Triton kernel under the interpreter that
fails: its run, its replay, its run alone) and examples/addrmsnorm's float16 sum of squares at
M = 17, N = 513 with huge values (the same, with the honest peer asked). Each round runs every
command back to back, interleaved; medians over rounds, of the wall time and of the CPU time of
the command and every process it waited for (getrusage of the children: on a machine others load,
the wall time measures the queue, the CPU time the work). With --old SRC the same commands of
another tree (e.g. the main branch's src/, before the change) run in the same rounds.

usage: python bench/repro_speed.py [--rounds 5] [--old OTHER/src] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
TARGET_S = 2.0
POINTS = {
    "trivial (torch, passes)": ("tests/specs/trivial.py",
                                {"spec": "double", "rung": 1, "dims": [["N", 1]], "seed": 1844798702}),
    "rmsnorm_n_tail (Triton, fails)": ("kladder.zoo.rmsnorm_n_tail::spec",
                                       {"spec": "rmsnorm", "rung": 1, "dims": [["M", 1], ["N", 4095]],
                                        "dtypes": [["x", "bfloat16"]], "seed": 3432004626}),
    "addrmsnorm fp16 huge (Triton, fails)": ("examples/addrmsnorm/addrmsnorm_spec.py::fp16_sumsq",
                                             {"spec": "add_rmsnorm_fp16_sumsq", "rung": 2, "dims": [["M", 17], ["N", 513]],
                                              "dtypes": [["x", "bfloat16"]], "kind": "values", "seed": 2096224537,
                                              "values": [["x", "huge"]]}),
}


def timed(cmd: list[str], src: str | None) -> tuple[float, float]:
    """(wall s, CPU s of the command and its children)."""
    env = dict(os.environ, PYTHONPATH=src) if src else None
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 1):                 # a failing point's repro exits 1
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--old", metavar="SRC", help="another tree's src/ folder, timed in the same rounds")
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = {"new": SRC, **({"old": os.path.abspath(args.old)} if args.old else {})}
    torch_cmd = [sys.executable, "-c", "import torch"]
    cmds = {name: [sys.executable, "-m", "kladder.tools.cli", "repro", ref, json.dumps(pt), "--device", "cpu", "--no-history"]
            for name, (ref, pt) in POINTS.items()}
    samples: dict[str, list[tuple[float, float]]] = {"import torch": []}
    timed(torch_cmd, None)                                      # warm the page cache
    for src in trees.values():
        for c in cmds.values():
            timed(c, src)
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg()[0])
        samples["import torch"].append(timed(torch_cmd, None))
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for tree, src in order:
            for name, c in cmds.items():
                samples.setdefault(f"{tree} {name}", []).append(timed(c, src))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in samples.items()}
    tw, tc = med["import torch"]
    print(f"{args.rounds} interleaved rounds, load average {min(loads):.2f}..{max(loads):.2f}, {os.cpu_count()} cores "
          "(a shared machine: CPU seconds are the work, wall seconds include the queue)")
    print(f"{'python -c import torch':48} wall {tw:6.2f} s   CPU {tc:5.2f} s")
    for tree in trees:
        for name in cmds:
            w, c = med[f"{tree} {name}"]
            print(f"{tree + ' repro ' + name:48} wall {w:6.2f} s ({w - tw:+.2f})   CPU {c:5.2f} s ({c - tc:+.2f}; target "
                  f"<= +{TARGET_S:.1f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"samples_wall_cpu_s": samples, "medians_wall_cpu_s": med, "trees": trees, "load_average": loads,
                       "cores": os.cpu_count(), "rounds": args.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
