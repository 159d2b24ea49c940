"""What finding a mask's pattern costs (checks/pattern.describe, the words "most elements of every
row" come from), this tree against another's (--base, the src/ folder of a checkout: `git archive
COMMIT src | tar -x -C DIR`), interleaved round by round, each in a process of its own, the same
masks (seeded). Three kinds of mask at `--elements` elements, shaped as RoPE's big point's q
(B x H x T x 256): most elements of every row wrong (a kernel that writes its input in place), every
other row wrong whole, a few scattered elements. Medians of the rounds, and each kind's pattern,
which must be the same on both sides.

Before the sixth session a 2^30-element mask took 18 s on this 2-core CPU (every wrong row made a
Python int, the count widened every element to int64) and a GPU's masks were copied to the host
first. usage: python bench/pattern_speed.py [--base DIR/src] [--elements 268435456] [--rounds 3] [--device cpu] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
KINDS = ("most_of_every_row", "whole_rows", "scattered")

CHILD = r"""
import json, sys, time, torch
from kladder.checks.pattern import Where, describe
kind, elements, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = 256
rows = elements // d
g = torch.Generator(device=device).manual_seed(0)
if kind == "most_of_every_row":
    bad = torch.rand(rows, d, generator=g, device=device) > 0.004
elif kind == "whole_rows":
    bad = torch.zeros(rows, d, dtype=torch.bool, device=device)
    bad[1::2] = True
else:                                              # 100 elements, each in a row of its own, far apart
    bad = torch.zeros(rows, d, dtype=torch.bool, device=device)
    at = torch.arange(100, device=device)
    bad[at * (rows // 100), (at * 37) % d] = True
bad = bad.reshape(16, -1, rows // 16 // 32 if rows >= 512 else 1, d) if rows >= 512 else bad
where = Where(tuple("BHTD"[-bad.dim():]), {})
if device == "cuda":
    torch.cuda.synchronize()
t = time.perf_counter()
p = describe(bad, where)
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - t, "pattern": [p.kind, getattr(p, "n_bad", None)]}))
"""


def one(src: str, kind: str, elements: int, device: str) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    p = subprocess.run([sys.executable, "-c", CHILD, kind, str(elements), device], env=env, capture_output=True,
                       text=True, timeout=900)
    if p.returncode:
        return {"error": p.stderr.strip()[-500:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default=None, help="another checkout's src/ folder, timed beside this one")
    ap.add_argument("--elements", type=int, default=1 << 28)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    sides = {"this": SRC, **({"base": os.path.abspath(args.base)} if args.base else {})}
    runs: dict = {s: {k: [] for k in KINDS} for s in sides}
    for _ in range(args.rounds):
        for kind in KINDS:
            for side, src in sides.items():
                runs[side][kind].append(one(src, kind, args.elements, args.device))
    out = {"elements": args.elements, "device": args.device, "rounds": args.rounds, "base": args.base, "kinds": {}}
    for kind in KINDS:
        row = {}
        for side in sides:
            got = runs[side][kind]
            secs = [r["seconds"] for r in got if "seconds" in r]
            row[side] = {"median_s": round(statistics.median(secs), 3) if secs else None,
                         "pattern": next((r["pattern"] for r in got if "pattern" in r), None),
                         "errors": [r["error"] for r in got if "error" in r]}
        if "base" in row and row["base"]["median_s"] and row["this"]["median_s"]:
            row["base_over_this"] = round(row["base"]["median_s"] / row["this"]["median_s"], 2)
            row["same_pattern"] = row["base"]["pattern"] == row["this"]["pattern"]
        out["kinds"][kind] = row
        print(kind, json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
