"""Compare the --json reports of two climbs of the same cases (tests/facts_json/climb.sh):
every field and value the same, times, paths, run ids and fingerprints left out. Messages
may be split over lines where they were one (torch.testing's manner): every string is compared
with its separators (". ", "; ", newlines) folded to one space, and each such change listed.
A rung-5 point its time budget ended is compared by its verdict and its structure (keys and
types), since its call count, rate and words vary run to run.
usage: python tests/facts_json/compare.py BEFORE_DIR AFTER_DIR"""
import json
import os
import re
import sys

IGNORED = {"seconds", "started", "run_id", "log", "fingerprint", "stages", "ended", "calls_s", "kladder_version",
           "device_name", "waited_s", "alone_s", "host_cpu_s"}


def fold(s: str) -> str:
    return re.sub(r"[.;]?(\s+)", " ", s)


def timed(point) -> bool:
    """A rung-5 point its time budget ended: its call counts, rates and words vary run to run."""
    return any(f.get("facts", {}).get("stopped") == "seconds" for f in point.get("findings", [])) or \
        ((point.get("note") or {}).get("facts") or {}).get("stopped") == "seconds"


def shape(v):
    """A value's structure: keys and types, not the numbers."""
    if isinstance(v, dict):
        return {k: shape(x) for k, x in v.items() if k not in IGNORED}
    if isinstance(v, list):
        return [shape(x) for x in v[:1]]
    return type(v).__name__


def walk(a, b, where, diffs, reworded):
    if isinstance(a, dict) and isinstance(b, dict) and "rung" in a and "status" in a and timed(a) and timed(b):
        kept = ("id", "status", "failure", "kind", "mode", "why")
        walk({k: a.get(k) for k in kept}, {k: b.get(k) for k in kept}, where, diffs, reworded)
        if shape(a) != shape(b):
            diffs.append(f"{where}: another structure")
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k in IGNORED:
                continue
            if k not in a or k not in b:
                diffs.append(f"{where}.{k}: only in {'before' if k in a else 'after'}")
                continue
            walk(a[k], b[k], f"{where}.{k}", diffs, reworded)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{where}: {len(a)} items before, {len(b)} after")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            walk(x, y, f"{where}[{i}]", diffs, reworded)
    elif isinstance(a, str) and isinstance(b, str):
        if a != b:
            (reworded if fold(a) == fold(b) else diffs).append(f"{where}: {a!r} -> {b!r}")
    elif a != b or type(a) is not type(b):
        diffs.append(f"{where}: {a!r} -> {b!r}")


def main(before: str, after: str) -> int:
    bad = 0
    for name in sorted(n for n in os.listdir(before) if n.endswith(".json")):
        with open(os.path.join(before, name)) as f:
            a = json.load(f)
        if not os.path.exists(os.path.join(after, name)):
            print(f"{name}: not in {after}")
            continue
        with open(os.path.join(after, name)) as f:
            b = json.load(f)
        diffs, reworded = [], []
        walk(a, b, name, diffs, reworded)
        n = sum(len(r["points"]) for r in a.get("rungs", []))
        print(f"{name}: {n} points, {len(diffs)} differences, {len(reworded)} messages split over lines")
        for d in diffs[:20]:
            print("  DIFF", d[:400])
        for r in reworded[:2]:
            print("  split", r[:400])
        bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
