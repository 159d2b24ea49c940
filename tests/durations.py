"""tests/durations.json from a measured run: `python tests/durations.py DIR...`, each DIR a
KLADDER_TEST_CPU folder (tests/conftest.py: one JSON line a test with its wall and CPU seconds,
the CPU of the processes the suite's fork server forked for it included). The file holds each
test's expected seconds on an idle machine, only for tests of 1 s or more; tests/conftest.py's
scheduler sends the dearest work first by it. The estimate: the test's CPU seconds (what a
loaded machine does not inflate much), or, for a test that mostly waits, its wall seconds scaled
to the share of a core it could get at the load it ran beside (2 cores: 2 / load). `--keep`: the
tests these folders did not measure keep their seconds from the file as it is (a run of part of
the suite refreshes that part). A stale file, or one measured on a loaded machine, only orders
the work less well: nothing is judged by it."""
import json
import os
import sys


def node_id(test: str) -> str:
    """The node id without xdist's group suffix (`test_x[a]@group`, pytest < 9.2 with xdist's
    own loadgroup)."""
    at, bracket = test.rfind("@"), test.rfind("]")
    return test[:at] if at > bracket else test


def estimate(rec: dict, cores: int = 2) -> float:
    """A test's seconds on an idle machine of `cores` cores, from one measured run of it."""
    share = min(1.0, cores / max(rec.get("load1", 0.0), 1e-9))
    return max(rec.get("cpu_s", 0.0), rec["wall_s"] * share)


def main(dirs: list[str]) -> int:
    keep = "--keep" in dirs
    dirs = [d for d in dirs if d != "--keep"]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")
    cost: dict[str, float] = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".jsonl"):
                with open(os.path.join(d, name)) as f:
                    for line in f:
                        rec = json.loads(line)
                        test = node_id(rec["test"])
                        cost[test] = max(cost.get(test, 0.0), estimate(rec))
    kept = {t: round(s, 1) for t, s in sorted(cost.items()) if s >= 1.0}
    if keep and os.path.exists(out):
        with open(out) as f:
            kept = dict(sorted({**{t: s for t, s in json.load(f).items() if t not in cost}, **kept}.items()))
    with open(out, "w") as f:
        json.dump(kept, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"{len(kept)} of {len(cost)} tests at 1 s or more: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
