"""A climb's speed, one tree against another, side by side (issue 25 item 1): the same climb run
with this checkout's kladder and with another's (--base, the src/ folder of an older checkout),
alternating round by round (base, new, then new, base, ...), so that a drift of the machine
falls on both alike; the median wall time of each and of each rung's own seconds (the report's,
without start-up). Without --base, this tree alone. The first climb of each tree is a warm-up
(Triton's and the OS's caches), not counted.

The yardstick of issue 25 is the zoo's rmsnorm twin's default climb on the H200:
    python bench/climb_speed.py --base .bench/base/src --device cuda --rounds 3 --json speed.json

usage: python bench/climb_speed.py [--zoo rmsnorm_n_tail | --spec REF] [--base SRC] [--rungs 1-3]
                                   [--device auto] [--rounds 3] [--no-warmup] [--json PATH]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")


def climb_command(args, out: str) -> list[str]:
    target = ["zoo", "climb", args.zoo, "--fixed"] if args.spec is None else ["climb", args.spec]
    cmd = [sys.executable, "-m", "kladder.cli", *target, "--device", args.device, "--json", out,
           "--log", out + ".jsonl", "--quiet"]
    return cmd + (["--rungs", args.rungs] if args.rungs else [])


def climb(args, src: str, out: str) -> dict:
    """One climb with the kladder of `src`: its wall time and its rungs' own seconds."""
    import json
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    t0 = time.perf_counter()
    p = subprocess.run(climb_command(args, out), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):                # 1: a point failed (the twin should not, but it is a result)
        raise SystemExit(f"the climb with {src} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(out) as f:
        rep = json.load(f)
    rungs = {str(r["rung"]): {"seconds": r["seconds"], "points": len(r["points"])} for r in rep["rungs"] if r["climbed"]}
    return {"wall_s": wall, "exit": p.returncode, "rungs": rungs}


def summary(runs: list[dict]) -> dict:
    rungs = sorted({k for r in runs for k in r["rungs"]}, key=int)
    return {"wall_s": [round(r["wall_s"], 2) for r in runs],
            "wall_s_median": round(statistics.median(r["wall_s"] for r in runs), 2),
            "exits": [r["exit"] for r in runs],
            "rungs": {k: {"points": runs[0]["rungs"].get(k, {}).get("points"),
                          "seconds": [round(r["rungs"][k]["seconds"], 2) for r in runs if k in r["rungs"]],
                          "median_s": round(statistics.median(r["rungs"][k]["seconds"] for r in runs if k in r["rungs"]), 2)}
                      for k in rungs}}


def table(result: dict) -> str:
    trees = result["trees"]
    rungs = sorted({k for t in trees.values() for k in t["rungs"]}, key=int)
    head = "| tree | wall (median) | " + " | ".join(f"rung {k}" for k in rungs) + " |"
    lines = [head, "|" + "---|" * (2 + len(rungs))]
    for name, t in trees.items():
        cells = [f"{t['rungs'][k]['median_s']:.1f} s / {t['rungs'][k]['points']} pts" if k in t["rungs"] else "-"
                 for k in rungs]
        lines.append(f"| {name} | {t['wall_s_median']:.1f} s | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zoo", default="rmsnorm_n_tail", help="a zoo case whose fixed twin is climbed (default rmsnorm_n_tail)")
    ap.add_argument("--spec", default=None, help="a spec reference (path.py::name) climbed instead of a zoo twin")
    ap.add_argument("--base", default=None, help="src/ of the checkout to compare with")
    ap.add_argument("--rungs", default="", help="rungs to climb (default: every rung built)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-warmup", action="store_true", help="count every climb (no warm-up climb per tree)")
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = [("new", SRC)] + ([("base", args.base)] if args.base else [])
    runs: dict[str, list] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory() as d:
        if not args.no_warmup:
            for name, src in trees:
                climb(args, src, os.path.join(d, f"warm-{name}.json"))
        for r in range(args.rounds):
            for name, src in trees if r % 2 else trees[::-1]:
                runs[name].append(climb(args, src, os.path.join(d, f"{name}{r}.json")))
    result = {"target": args.spec or f"zoo {args.zoo} --fixed", "device": args.device, "rungs": args.rungs or "default",
              "rounds": args.rounds, "warmup": not args.no_warmup, "cores": os.cpu_count(),
              "load_avg": round(os.getloadavg()[0], 2), "trees": {name: summary(rs) for name, rs in runs.items()}}
    print(f"{result['target']} on {args.device}, {args.rounds} alternating rounds (medians), "
          f"{result['cores']} cores, load {result['load_avg']}")
    print(table(result))
    if args.json:
        sys.path.insert(0, SRC)
        from kladder.report.jsonout import dumps, write_atomic
        write_atomic(args.json, dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
