"""Which slice of a zoo case's own rung CI climbs (tests/conftest.py, ZOO_BATCHES).

    python bench/zoo_shards.py ZOO.json [ZOO.json ...]

Each ZOO.json a `kladder zoo climb --device cpu --json` report (every case, or a batch of
them), each case climbed at its own rung on every point. For each case it prints its cost (the
seconds its points ran, buggy kernel and twin) and, for N = 2, 3, 4, what each --shard I/N of
that rung holds: points, the buggy kernel's failures, the twin's passes, and the share of the
cost; then the cheapest slice that still fails the buggy kernel (caught there) and passes the
twin at MIN_PASSED points (as many as the rung has, where it has fewer), or "all" where no slice
does, or where the whole rung costs under CHEAP seconds. tests/test_zoo.py's assertions on the
failures (which points fail, how) then hold on that slice's points, or the slice is not taken. The slices are kladder's own deal
(shard.py: sorted by kind, mode and a hash of each point, dealt round-robin), so they depend
only on the spec, the seed (0) and the device's budget: the same on every machine. Seconds
measured on a loaded machine are inflated alike, so the shares hold."""
from __future__ import annotations

import json
import sys

MIN_FAILED = 1      # failures a slice must keep: caught there
MIN_PASSED = 5      # the twin's passing points a slice must keep (tests/test_zoo.py asks for 5)
CHEAP = 30.0        # seconds (both kernels) under which the whole rung is climbed


def slices(name: str, rung: int, bug: dict, twin: dict) -> list[tuple[int, int, int, int, int, float]]:
    """[(N, I, points, failed, twin passed, seconds)] for every slice I/N, N = 1..4."""
    from kladder.ladder import rung_points
    from kladder.load import load_spec
    from kladder.shard import Shard, deal
    from kladder.sizes import budget_for
    spec = load_spec(f"kladder.zoo.{name}::spec")
    points = list(rung_points(spec, rung, budget_for("cpu")))
    ids = [p.id for p in points]
    b = {pt["id"]: pt for pt in bug["rungs"][rung - 1]["points"]}
    t = {pt["id"]: pt for pt in twin["rungs"][rung - 1]["points"]}
    if set(ids) != set(b) or set(ids) != set(t):
        raise SystemExit(f"{name}: the report's rung-{rung} points are not the spec's here (another seed or budget?)")
    out = []
    for n in (1, 2, 3, 4):
        for i in range(1, n + 1):
            mine = [ids[j] for j in deal(points, Shard(i, n))]
            failed = sum(b[x]["status"] == "failed" for x in mine)
            passed = sum(t[x]["status"] == "passed" for x in mine)
            secs = sum((b[x].get("seconds") or 0) + (t[x].get("seconds") or 0) for x in mine)
            out.append((n, i, len(mine), failed, passed, secs))
    return out


def choose(rows: list[tuple[int, int, int, int, int, float]]) -> str:
    (_, _, _, all_failed, all_passed, all_secs), *rest = rows
    if all_secs < CHEAP:
        return "all"
    need = min(MIN_FAILED, all_failed)
    ok = [r for r in rest if r[3] >= need and r[4] >= min(MIN_PASSED, all_passed)]
    if not ok:
        return "all"
    n, i, _, _, _, secs = min(ok, key=lambda r: (r[5], r[0]))
    return f"--shard {i}/{n} ({secs / all_secs:.0%} of the cost)"


def main(paths: list[str]) -> int:
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for row in doc["cases"]:
            name, rung = row["case"], row["rung"]
            if not row["buggy"]["rungs"][rung - 1]["climbed"]:
                print(f"{name}: its buggy kernel was not climbed (a GPU case off CUDA)")
                continue
            rows = slices(name, rung, row["buggy"], row["fixed"])
            print(f"{name} (rung {rung}): {rows[0][2]} points, {rows[0][3]} failed, {rows[0][5]:.0f} s; "
                  f"choose {choose(rows)}")
            for n, i, pts, failed, passed, secs in rows[1:]:
                print(f"  {i}/{n}: {pts} points, {failed} failed, twin {passed} passed, {secs / max(rows[0][5], 1e-9):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
