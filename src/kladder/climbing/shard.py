"""`kladder climb --shard I/N`: the I-th of N disjoint slices of a climb's points, for a CI
matrix of runners whose reports `kladder merge` (merge.py) makes one.

How a rung's points are dealt: by their expected cost, the dearest first, each to the shard
whose points so far cost least (longest processing time first), the shards' totals carried on
from rung to rung. A matrix's wall time is its slowest shard's: dealt by count alone, one shard
got every costly point (`--shard 1/2` ran 202 s, `2/2` 23 s). A point's expected cost is its
seconds in the history (the median over the newest unsharded climbs and pytest runs of the spec
on this device that ran it), else its bytes converted at the seconds a byte of the points the
history timed, or, with no history at all, its bytes (and a fixed OVERHEAD_BYTES for what every
point costs). Ties (equal costs: every point of a spec with no history and equal sizes) are
broken by (kind, mode, sha256 of the point's JSON), so the deal depends only on the points and
their costs, never on the order a generator yields them in (a set's order changes with
PYTHONHASHSEED from process to process). The points are the same on every machine: they are made
from the spec, the seed, the options and the device's budget (CPU or GPU, sizes.budget_for),
never from the machine; the costs are the same where the shards read one history (a CI cache,
a shared file; a shard's own climb is left out of it, so shards run one after the other agree).
Each shard's report says which costs it dealt by (`costs`: their source and a digest of the
table), and `kladder merge` refuses shards that dealt by different ones: their slices would
overlap or leave points out.

The points a rung makes from earlier failures (rung 5's sanitizer runs on the smallest point
that failed below it) are not dealt: each shard makes them from its own failures and runs them
(they are evidence on a point already failed, so a climb's exit code and lowest failing rung do
not depend on them)."""
from __future__ import annotations

import hashlib
import json
import statistics
from dataclasses import dataclass, field

from ..core.errors import ShardError
from ..core.point import Point

OVERHEAD_BYTES = 1 << 20     # what every point costs besides its tensors (a worker's round trip, reference, checks)


@dataclass(frozen=True)
class Shard:
    index: int       # 1-based, as the flag gives it
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str | None) -> Shard | None:
    """'2/3' -> Shard(2, 3); a bad value is a ShardError naming the flag, what was given and the fix."""
    if text is None:
        return None
    i, sep, n = text.strip().partition("/")
    try:
        index, count = int(i), int(n)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise ShardError(f"--shard {text!r}: give I/N with 1 <= I <= N, e.g. --shard 1/3 for the first of three "
                         "slices (run 1/3, 2/3 and 3/3, then `kladder merge` their --json reports)")
    return Shard(index, count)


def deal_key(point: Point) -> tuple:
    return (point.kind, point.mode, hashlib.sha256(point.to_json().encode()).hexdigest())


@dataclass
class Costs:
    """The seconds the history recorded for points of one spec (point JSON -> seconds), and what
    a point is expected to cost from them, else from its bytes."""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return "history" if self.seconds else "bytes"

    def digest(self) -> str:
        """The table's fingerprint: shards that dealt by the same one agree on the deal."""
        return hashlib.sha256(json.dumps(sorted(self.seconds.items())).encode()).hexdigest()[:16]

    def record(self) -> dict:
        return {"source": self.source, "known": len(self.seconds), "digest": self.digest()}

    def expected(self, points: list[Point], spec) -> list[float]:
        from ..core.sizes import total_bytes
        size = [OVERHEAD_BYTES + total_bytes(spec, p.sizes, p.dtype_of) for p in points]
        known = [(self.seconds[k], b) for p, b in zip(points, size, strict=True)
                 if (k := p.to_json()) in self.seconds]
        if not known:
            return [float(b) for b in size]
        per_byte = statistics.median(sec / b for sec, b in known)     # the history's seconds a byte
        return [self.seconds.get(p.to_json(), b * per_byte) for p, b in zip(points, size, strict=True)]


def from_history(rows: list[tuple[dict, float]]) -> Costs:
    """Costs from the history's (point dict, seconds) rows: each point's median, to 2 significant digits
    (a deal that a climb's small wobble does not change)."""
    by: dict[str, list[float]] = {}
    for d, sec in rows:
        try:
            key = Point.from_dict(d).to_json()
        except (KeyError, TypeError, ValueError):
            continue                        # a point of an older kladder
        by.setdefault(key, []).append(sec)
    return Costs({k: float(f"{statistics.median(v):.2g}") for k, v in by.items()})


def history_costs(path: str | None, spec: str, device: str) -> Costs:
    """The costs the history at `path` holds for `spec` on `device` (None, or a history that
    cannot be read: none, the deal is by bytes)."""
    import os
    if path is None or not os.path.exists(path):
        return Costs()
    from ..history.store import History, HistoryError
    try:
        h = History(path)
    except HistoryError:
        return Costs()
    try:
        return from_history(h.point_seconds(spec, device))
    except Exception:  # noqa: BLE001 - a damaged history deals by bytes; it never stops a climb
        return Costs()
    finally:
        h.close()


def deal(points: list[Point], shard: Shard, loads: list[float], costs: list[float]) -> list[int]:
    """The positions (in `points`) of the shard's points, in order: the dearest first, each to the
    shard whose points so far cost least (`loads`, each shard's, updated), ties to the lower shard."""
    order = sorted(range(len(points)), key=lambda i: (-costs[i], deal_key(points[i])))
    mine = []
    for i in order:
        j = min(range(shard.count), key=lambda k: (loads[k], k))
        loads[j] += costs[i]
        if j == shard.index - 1:
            mine.append(i)
    return sorted(mine)


class Slicer:
    """One climb's shard: per rung, which of the rung's points it runs, and where each stands
    in the rung's whole list (`kladder merge` puts the shards' points back in that order)."""

    def __init__(self, shard: Shard, spec=None, costs: Costs | None = None):
        self.shard, self.spec = shard, spec
        self.costs = costs or Costs()
        self.loads = [0.0] * shard.count             # each shard's expected seconds (or bytes) so far
        self.dealt: dict[str, int] = {}           # rung -> points of the rung dealt among the shards
        self.positions: dict[str, list[int]] = {}  # rung -> positions of this shard's points

    def take(self, rung: int, points: list[Point], own: list[Point] = ()) -> list[Point]:
        """This shard's points of a rung: its deal of `points`, then `own` (points made from
        this shard's own failures, not dealt), placed after the dealt ones."""
        costs = self.costs.expected(points, self.spec) if self.spec is not None else [1.0] * len(points)
        mine = deal(points, self.shard, self.loads, costs)
        self.dealt[str(rung)] = len(points)
        self.positions[str(rung)] = mine + [len(points) + j for j in range(len(own))]
        return [points[i] for i in mine] + list(own)

    def record(self, options: dict) -> dict:
        """The report's `shard` field (the outcomes are added when it is written)."""
        return {"index": self.shard.index, "count": self.shard.count, "options": options,
                "dealt": dict(self.dealt), "positions": {k: list(v) for k, v in self.positions.items()},
                "costs": self.costs.record()}


def options_record(opts) -> dict:
    """What must be the same in every shard of one climb: points and their judgement depend on it."""
    return {"rungs": list(opts.rungs), "seed": opts.seed, "timeout_s": opts.timeout_s, "repeat": opts.repeat,
            "repeat_s": opts.repeat_s, "replay": opts.replay, "budget": opts.budget}
