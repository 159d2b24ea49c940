"""A climb's speed, one tree against another, side by side (issue 25 item 1): the same climb run
with this checkout's kladder and with another's (--base, the src/ folder of an older checkout),
alternating round by round (base, new, then new, base, ...), so that a drift of the machine
falls on both alike; the median wall time of each and of each rung's own seconds (the report's,
without start-up). Without --base, this tree alone. `--variant NAME:KEY=VAL[,KEY=VAL]` adds this
tree run with those environment variables (`--variant fork:KLADDER_FORKSERVER=1`). The first climb
of each tree is a warm-up (Triton's and the OS's caches), not counted.

Where a rung's time goes: each rung's seconds split into the sum of its points' stages (the
report's `stages`: inputs, kernel, reference, checks, ...) and the rest ("between points": worker
and child-process starts, the parent's own work), medians over the rounds. The result is written
after every climb (`complete: false` until the last), so a run cut at a time limit keeps its
rounds; `--deadline-s S` starts no climb that would end past S seconds (judged by that tree's
slowest climb so far).

The yardstick of issue 25 is the zoo's rmsnorm twin's default climb on the H200:
    python bench/climb_speed.py --base .bench/base/src --device cuda --rounds 3 --json speed.json

usage: python bench/climb_speed.py [--zoo rmsnorm_n_tail | --spec REF] [--base SRC] [--rungs 1-3]
                                   [--device auto] [--rounds 3] [--no-warmup] [--json PATH]
                                   [--variant NAME:KEY=VAL] [--deadline-s S] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")


def climb_command(args, out: str) -> list[str]:
    target = ["zoo", "climb", args.zoo, "--fixed"] if args.spec is None else ["climb", args.spec]
    cmd = [sys.executable, "-m", "kladder.tools.cli", *target, "--device", args.device, "--json", out,
           "--log", out + ".jsonl", "--quiet"]
    return cmd + (["--rungs", args.rungs] if args.rungs else [])


def breakdown(rung: dict) -> dict:
    """A rung's seconds split into its points' stages and the rest (between points)."""
    stages: dict[str, float] = {}
    for p in rung["points"]:
        for k, v in (p.get("stages") or {}).items():
            stages[k] = stages.get(k, 0.0) + v
    stages["between points"] = max(0.0, rung["seconds"] - sum(p.get("seconds") or 0.0 for p in rung["points"]))
    return {k: round(v, 3) for k, v in stages.items()}


def climb(args, src: str, out: str, extra_env: dict) -> dict:
    """One climb with the kladder of `src`: its wall time, its rungs' own seconds and their split."""
    import json
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and os.path.abspath(p) != os.path.abspath(SRC)]          # what else the environment brings (wheels)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.abspath(src), *rest]), **extra_env}
    t0 = time.perf_counter()
    p = subprocess.run(climb_command(args, out), env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):                # 1: a point failed (the twin should not, but it is a result)
        raise SystemExit(f"the climb with {src} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(out) as f:
        rep = json.load(f)
    rungs = {str(r["rung"]): {"seconds": r["seconds"], "points": len(r["points"]), "split": breakdown(r)}
             for r in rep["rungs"] if r["climbed"]}
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        shutil.copy(out, os.path.join(args.keep, os.path.basename(out)))
    return {"wall_s": wall, "exit": p.returncode, "rungs": rungs}


def median_split(runs: list[dict], k: str) -> dict:
    splits = [r["rungs"][k]["split"] for r in runs if k in r["rungs"]]
    names = sorted({n for s in splits for n in s}, key=lambda n: -statistics.median(s.get(n, 0.0) for s in splits))
    return {n: round(statistics.median(s.get(n, 0.0) for s in splits), 2) for n in names}


def summary(runs: list[dict]) -> dict:
    rungs = sorted({k for r in runs for k in r["rungs"]}, key=int)
    return {"wall_s": [round(r["wall_s"], 2) for r in runs],
            "wall_s_median": round(statistics.median(r["wall_s"] for r in runs), 2),
            "exits": [r["exit"] for r in runs],
            "rungs": {k: {"points": runs[0]["rungs"].get(k, {}).get("points"),
                          "seconds": [round(r["rungs"][k]["seconds"], 2) for r in runs if k in r["rungs"]],
                          "median_s": round(statistics.median(r["rungs"][k]["seconds"] for r in runs if k in r["rungs"]), 2),
                          "split_median_s": median_split(runs, k)}
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
    lines.append("")
    lines.append("where each rung's time goes (medians, seconds): the points' stages, and between points")
    for name, t in trees.items():
        for k in rungs:
            if k in t["rungs"]:
                split = ", ".join(f"{n} {v:.1f}" for n, v in t["rungs"][k]["split_median_s"].items() if v >= 0.05)
                lines.append(f"  {name} rung {k}: {split}")
    return "\n".join(lines)


def write(args, result: dict) -> None:
    if args.json:
        if SRC not in sys.path:                        # once: it is written after every climb
            sys.path.insert(0, SRC)
        from kladder.report.jsonout import dumps, write_atomic
        write_atomic(args.json, dumps(result, indent=1) + "\n")


def variant(text: str) -> tuple[str, dict]:
    name, _, pairs = text.partition(":")
    env = dict(kv.split("=", 1) for kv in pairs.split(",") if kv)
    if not name or not env:
        raise SystemExit(f"--variant: got {text!r}; give NAME:KEY=VAL[,KEY=VAL] (fork:KLADDER_FORKSERVER=1)")
    return name, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--zoo", default="rmsnorm_n_tail", help="a zoo case whose fixed twin is climbed (default rmsnorm_n_tail)")
    ap.add_argument("--spec", default=None, help="a spec reference (path.py::name) climbed instead of a zoo twin")
    ap.add_argument("--base", default=None, help="src/ of the checkout to compare with")
    ap.add_argument("--rungs", default="", help="rungs to climb (default: every rung built)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-warmup", action="store_true", help="count every climb (no warm-up climb per tree)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VAL",
                    help="this tree again with environment variables set (repeatable)")
    ap.add_argument("--deadline-s", type=float, default=None, help="start no climb that would end past this many seconds")
    ap.add_argument("--keep", default=None, help="a folder to keep every climb's JSON report in")
    ap.add_argument("--json")
    args = ap.parse_args()
    trees = [("new", SRC, {})] + [(name, SRC, env) for name, env in map(variant, args.variant)]
    trees += [("base", args.base, {})] if args.base else []
    runs: dict[str, list] = {name: [] for name, _, _ in trees}
    t0, slowest, cut = time.perf_counter(), {name: 0.0 for name, _, _ in trees}, False
    result = {"target": args.spec or f"zoo {args.zoo} --fixed", "device": args.device, "rungs": args.rungs or "default",
              "rounds": args.rounds, "warmup": not args.no_warmup, "cores": os.cpu_count(),
              "variants": {name: env for name, _, env in trees if env}, "complete": False}
    with tempfile.TemporaryDirectory() as d:
        if not args.no_warmup:
            for name, src, env in trees:
                climb(args, src, os.path.join(d, f"warm-{name}.json"), env)
        for r in range(args.rounds):
            for name, src, env in trees if r % 2 else trees[::-1]:
                if args.deadline_s and time.perf_counter() - t0 + slowest[name] > args.deadline_s:
                    cut = True
                    continue
                runs[name].append(climb(args, src, os.path.join(d, f"{name}{r}.json"), env))
                slowest[name] = max(slowest[name], runs[name][-1]["wall_s"])
                result.update(load_avg=round(os.getloadavg()[0], 2),
                              trees={n: summary(rs) for n, rs in runs.items() if rs})
                write(args, result)
    result["complete"] = not cut
    write(args, result)
    done = min(len(rs) for rs in runs.values())
    print(f"{result['target']} on {args.device}, {done} of {args.rounds} alternating rounds (medians), "
          f"{result['cores']} cores, load {result.get('load_avg')}" + (" (cut by --deadline-s)" if cut else ""))
    if result.get("trees"):
        print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
