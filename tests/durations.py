"""tests/durations.json from a measured run: `python tests/durations.py DIR...`, each DIR a
KLADDER_TEST_CPU folder (tests/conftest.py: one JSON line a test with its wall and CPU
seconds). The file holds each test's wall seconds (its CPU seconds miss the processes the
suite's fork server forked for it), only for tests of 5 s or more; tests/conftest.py's scheduler
sends the longest work first by it. A stale file, or one measured on a loaded machine, only
orders the work less well: nothing is judged by it."""
import json
import os
import sys


def node_id(test: str) -> str:
    """The node id without xdist's group suffix (`test_x[a]@group`, pytest < 9.2 with xdist's
    own loadgroup)."""
    at, bracket = test.rfind("@"), test.rfind("]")
    return test[:at] if at > bracket else test


def main(dirs: list[str]) -> int:
    cost: dict[str, float] = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".jsonl"):
                with open(os.path.join(d, name)) as f:
                    for line in f:
                        rec = json.loads(line)
                        test = node_id(rec["test"])
                        cost[test] = max(cost.get(test, 0.0), rec["wall_s"])
    kept = {t: round(s, 1) for t, s in sorted(cost.items()) if s >= 5.0}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")
    with open(out, "w") as f:
        json.dump(kept, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"{len(kept)} of {len(cost)} tests at 5 s or more: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
