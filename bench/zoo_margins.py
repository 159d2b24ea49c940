"""How far past its budget a zoo case's value failures are: err / allowed at each failing point's
largest difference, over a rung's CPU points (seed 0), in this process as a worker runs them.
A near miss (within checks/peer.SETTLE_MARGIN x its budget) is settled with more correct runs
before it is blamed; the zoo's value bugs must stay past that margin.

usage: TRITON_INTERPRET=1 python bench/zoo_margins.py CASE RUNG [--limit 40] [--budget-s 240] [--json PATH]
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("rung", type=int)
    ap.add_argument("--limit", type=int, default=40, help="points at most")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    from kladder.checks.peer import SETTLE_MARGIN
    from kladder.core.fingerprint import fingerprint
    from kladder.climbing.ladder import rung_points
    from kladder.report.jsonout import dumps
    from kladder.run.trial import run_point
    from kladder.core.sizes import CPU_BUDGET, is_big
    spec = importlib.import_module(f"kladder.zoo.{args.case}").spec
    t0, n, margins = time.time(), 0, []
    for p in rung_points(spec, args.rung, CPU_BUDGET, 0):
        if p.needs == "cuda" or is_big(spec, p.sizes):
            continue
        n += 1
        for f in run_point(spec, p, "cpu").outcome.findings:
            if f.check == "values" and f.largest is not None and f.largest.allowed:
                margins.append({"point": p.id, "budget": f.facts.to_dict().get("budget", "default"),
                                "margin": abs(f.largest.kernel - f.largest.reference) / f.largest.allowed})
        if n >= args.limit or time.time() - t0 > args.budget_s:
            break
    margins.sort(key=lambda m: m["margin"])
    doc = {"fingerprint": fingerprint(device="cpu"), "case": args.case, "rung": args.rung, "points": n,
           "failed_on_values": len(margins), "settle_margin": SETTLE_MARGIN, "smallest": margins[:5]}
    print(dumps(doc, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            f.write(dumps(doc))
    return 0 if all(m["margin"] > SETTLE_MARGIN for m in margins) else 1


if __name__ == "__main__":
    sys.exit(main())
