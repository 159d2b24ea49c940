"""Per-file (and with --tests, per-test) sums of the records tests/conftest.py writes under
KLADDER_TEST_CPU=DIR: python costs.py DIR [DIR2] [--tests]; with two directories, side by side."""
import json
import pathlib
import sys
from collections import defaultdict


def load(d):
    recs = {}
    for f in sorted(pathlib.Path(d).glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            recs[r["test"]] = r
    return recs


def by(recs, key):
    out = defaultdict(lambda: [0.0, 0.0, 0, []])
    for name, r in recs.items():
        k = key(name)
        out[k][0] += r["wall_s"]
        out[k][1] += r["cpu_s"]
        out[k][2] += 1
        out[k][3].append(r["load1"])
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    key = (lambda n: n) if "--tests" in sys.argv else (lambda n: n.split("::")[0])
    tabs = [by(load(d), key) for d in args]
    rows = sorted(set().union(*tabs), key=lambda k: -max(t.get(k, [0, 0])[1] for t in tabs))
    head = "".join(f" | {'cpu s':>8} {'wall s':>8} {'n':>4} {'load':>5}" for _ in tabs)
    print(f"{'':70}{head}")
    total = [[0.0, 0.0, 0] for _ in tabs]
    for k in rows:
        line = f"{k[-70:]:70}"
        for i, t in enumerate(tabs):
            if k in t:
                w, c, n, loads = t[k]
                total[i][0] += w
                total[i][1] += c
                total[i][2] += n
                line += f" | {c:8.1f} {w:8.1f} {n:4d} {sum(loads) / len(loads):5.1f}"
            else:
                line += f" | {'-':>8} {'-':>8} {'-':>4} {'':>5}"
        print(line)
    print(f"{'total':70}" + "".join(f" | {c:8.1f} {w:8.1f} {n:4d} {'':>5}" for w, c, n in total))


if __name__ == "__main__":
    main()
