"""Incremental climbs (issue 32 item 1): a spec climbed cold (an empty outcome store, empty
Triton and Inductor caches), again with nothing changed, and again after a one-line change of
its kernel, each through the CLI as a user runs it; the wall time of each (medians over the
rounds), the points reused and run, and for comparison the CLI's own start on the same spec
(`kladder points REF --rungs 1`: Python, torch, Triton and the spec imported, nothing run).

Each target is a copy of its spec file in a temporary folder (so the edit never touches the
repository): the trivial spec (tests/specs/trivial.py) and the zoo's rmsnorm twin
(kladder/zoo/rmsnorm_n_tail.py::fixed). The edit is one line of the kernel that changes its code
and not its results (trivial: `2 * x` -> `x * 2` in the kernel; rmsnorm: the fixed Triton kernel's
`other=0.0` -> `other=0.00` in its load of w). Every round has its own history file and its own
cache folders (the same for its three climbs: the cold climb's caches are empty; the cache folders
are no part of the key).

    python bench/incremental.py --device cpu --rounds 3 --json incremental.json
    python bench/incremental.py --device cuda --rounds 3 --json incremental-h100.json   # on a GPU

usage: python bench/incremental.py [--device auto] [--rounds 3] [--targets trivial,rmsnorm] [--rungs R]
                                   [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
TARGETS = {
    "trivial": (os.path.join(HERE, "..", "tests", "specs", "trivial.py"), "spec",
                ("kernel=lambda x: 2 * x", "kernel=lambda x: x * 2")),
    "rmsnorm": (os.path.join(SRC, "kladder", "zoo", "rmsnorm_n_tail.py"), "fixed",
                # the fixed kernel's load of w (the buggy one's text is the same: the second occurrence is the twin's)
                ("w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)", "w = tl.load(w_ptr + cols, mask=cols < N, other=0.00)")),
}


def _env(folder: str) -> dict:
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.abspath(SRC), *rest])}
    env.pop("KLADDER_STORE", None)
    env["KLADDER_HISTORY"] = os.path.join(folder, "history.sqlite")
    env["TRITON_CACHE_DIR"] = os.path.join(folder, "triton-cache")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "inductor-cache")
    return env


def _edit_twin(path: str, old: str, new: str) -> None:
    """The edit in the fixed twin's kernel: the last occurrence (the twin is defined after the bug)."""
    with open(path) as f:
        text = f.read()
    at = text.rfind(old)
    if at < 0:
        raise SystemExit(f"{path}: {old!r} not found; the bench's edit needs updating")
    with open(path, "w") as f:
        f.write(text[:at] + new + text[at + len(old):])


def climb(args, folder: str, ref: str, name: str) -> dict:
    out = os.path.join(folder, f"{name}.json")
    cmd = [sys.executable, "-m", "kladder.tools.cli", "climb", ref, "--device", args.device, "--json", out,
           "--log", out + ".jsonl", "--quiet"] + (["--rungs", args.rungs] if args.rungs else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=_env(folder), cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(out) as f:
        rep = json.load(f)
    reuse = rep.get("reuse") or {}
    return {"wall_s": round(wall, 2), "climb_s": rep["seconds"], "exit": p.returncode, "points": reuse.get("points"),
            "reused": reuse.get("reused"), "ran": reuse.get("ran"), "changed": reuse.get("changed")}


def cli_start(args, folder: str, ref: str) -> float:
    cmd = [sys.executable, "-m", "kladder.tools.cli", "points", ref, "--device", args.device, "--rungs", "1"]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=_env(folder), cwd=folder, capture_output=True, text=True, check=True)
    return round(time.perf_counter() - t0, 2)


def one_round(args, target: str) -> dict:
    source, name, (old, new) = TARGETS[target]
    folder = tempfile.mkdtemp(prefix=f"kladder-incr-{target}-")
    try:
        path = os.path.join(folder, f"{target}_spec.py")
        shutil.copy(source, path)
        ref = f"{path}::{name}"
        row = {"start_s": cli_start(args, folder, ref)}
        row["cold"] = climb(args, folder, ref, "cold")
        row["again"] = climb(args, folder, ref, "again")
        _edit_twin(path, old, new)
        row["edit"] = climb(args, folder, ref, "edit")
        return row
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def summary(rows: list[dict]) -> dict:
    out = {"start_s": statistics.median(r["start_s"] for r in rows)}
    for k in ("cold", "again", "edit"):
        out[k] = {"wall_s": statistics.median(r[k]["wall_s"] for r in rows),
                  "climb_s": statistics.median(r[k]["climb_s"] for r in rows),
                  "points": rows[0][k]["points"], "reused": [r[k]["reused"] for r in rows],
                  "ran": [r[k]["ran"] for r in rows], "exits": [r[k]["exit"] for r in rows]}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", default="trivial,rmsnorm")
    ap.add_argument("--rungs", default="", help="rungs to climb (default: every rung built)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise SystemExit(f"--targets: {unknown}; choose from {sorted(TARGETS)}")
    result = {"device": args.device, "rounds": args.rounds, "rungs": args.rungs or "all", "targets": {},
              "load1": [round(os.getloadavg()[0], 2)]}
    for target in targets:
        rows = []
        for i in range(args.rounds):                 # the targets' rounds in turn would mix caches; one target at a time
            rows.append(one_round(args, target))
            result["load1"].append(round(os.getloadavg()[0], 2))
            print(f"{target} round {i + 1}: " + json.dumps(rows[-1]), flush=True)
        result["targets"][target] = {"rounds": rows, "median": summary(rows)}
        m = result["targets"][target]["median"]
        print(f"{target}: CLI start {m['start_s']:.1f} s; cold {m['cold']['wall_s']:.1f} s; again "
              f"{m['again']['wall_s']:.1f} s ({m['again']['reused']} of {m['again']['points']} reused); after a one-line "
              f"kernel change {m['edit']['wall_s']:.1f} s ({m['edit']['ran']} ran)", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
