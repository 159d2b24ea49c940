"""`kladder zoo climb` over some cases, one climb at a time against climbs side by side
(--cases-at-once), alternating: wall time of each, and whether the tables (verdicts and
counts of failed points, timings left out) are the same.

usage: python bench/zoo_at_once.py [--cases a,b,c] [--at-once 1,2] [--rounds 1] [--device cpu] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# four small cases of four rungs (17-20 s each on the 2-core machine, one at a time)
CASES = "router_tie_pack,assumes_contiguous,silent_fallback,wrong_path_dispatch"
DRIVER = """
import sys
from kladder import cases
from kladder.tools.cli import main
keep = sys.argv[1].split(",")
every = cases.case_modules
cases.case_modules = lambda: {k: v for k, v in every().items() if k in keep}
sys.exit(main(sys.argv[2:]))
"""


def run(names: str, at_once: int, device: str) -> tuple[float, list[str], int]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", DRIVER, names, "zoo", "climb", "--device", device, "-q",
                        "--cases-at-once", str(at_once)], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    table = [line.rsplit("  [", 1)[0] for line in p.stdout.splitlines() if "  buggy: " in line]
    table += [line for line in p.stdout.splitlines() if line.startswith("zoo on ")]
    return dt, table, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--at-once", default="1,2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json")
    args = ap.parse_args()
    widths = [int(w) for w in args.at_once.split(",")]
    times: dict[int, list[float]] = {w: [] for w in widths}
    tables: dict[int, list[list[str]]] = {w: [] for w in widths}
    codes: dict[int, list[int]] = {w: [] for w in widths}
    for r in range(args.rounds):
        for w in (widths if r % 2 == 0 else widths[::-1]):
            dt, table, code = run(args.cases, w, args.device)
            times[w].append(dt)
            tables[w].append(table)
            codes[w].append(code)
    first = tables[widths[0]][0]
    same = all(t == first for w in widths for t in tables[w])
    print(f"{len(args.cases.split(','))} cases, {args.rounds} round(s), load average {os.getloadavg()[0]:.2f}, "
          f"{os.cpu_count()} cores")
    for w in widths:
        print(f"--cases-at-once {w}: median {statistics.median(times[w]):.1f} s  (exit {codes[w]})")
    print("tables identical" if same else "TABLES DIFFER")
    for line in first:
        print("  " + line)
    if not same:
        for w in widths:
            for t in tables[w]:
                print(f"-- at once {w}:")
                print("\n".join("  " + line for line in t))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": args.cases.split(","), "times_s": times, "tables": tables, "exit": codes,
                       "identical": same, "load_average": os.getloadavg()[0], "cores": os.cpu_count()}, f, indent=1)


if __name__ == "__main__":
    main()
