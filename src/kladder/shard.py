"""`kladder climb --shard I/N`: the I-th of N disjoint slices of a climb's points, for a CI
matrix of runners whose reports `kladder merge` (merge.py) makes one.

How a rung's points are dealt: sorted by (kind, mode, sha256 of the point's JSON) and dealt
round-robin, the deal carried on from rung to rung. Why not a hash of each point alone: a
matrix's wall time is its slowest shard's, and hash-mod-N deals counts binomially (45 points
over 3 shards: about +-3 points, 20 % apart); round-robin deals every rung's points within one
of each other, and the whole climb's too (the deal carries on). Why the sort: the deal then
depends only on the points themselves, never on the order a generator yields them in (a set's
order changes with PYTHONHASHSEED from process to process), and the costly kinds and modes
(big points, A-B-A's fresh processes, a sanitizer's minute) come together in the sorted list,
so each shard gets its share of each. The points are the same on every machine: they are made
from the spec, the seed, the options and the device's budget (CPU or GPU, sizes.budget_for),
never from the machine.

The points a rung makes from earlier failures (rung 5's sanitizer runs on the smallest point
that failed below it) are not dealt: each shard makes them from its own failures and runs them
(they are evidence on a point already failed, so a climb's exit code and lowest failing rung do
not depend on them)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .point import Point


@dataclass(frozen=True)
class Shard:
    index: int       # 1-based, as the flag gives it
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


class ShardError(ValueError):
    """A bad --shard value: a usage error (exit 2)."""


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


def deal(points: list[Point], shard: Shard, start: int = 0) -> list[int]:
    """The positions (in `points`) of the shard's points, in order, dealing from `start` (the
    number of points dealt in the rungs before)."""
    order = sorted(range(len(points)), key=lambda i: deal_key(points[i]))
    return sorted(i for k, i in enumerate(order) if (start + k) % shard.count == shard.index - 1)


class Slicer:
    """One climb's shard: per rung, which of the rung's points it runs, and where each stands
    in the rung's whole list (`kladder merge` puts the shards' points back in that order)."""

    def __init__(self, shard: Shard):
        self.shard = shard
        self.dealt_so_far = 0
        self.dealt: dict[str, int] = {}           # rung -> points of the rung dealt among the shards
        self.positions: dict[str, list[int]] = {}  # rung -> positions of this shard's points

    def take(self, rung: int, points: list[Point], own: list[Point] = ()) -> list[Point]:
        """This shard's points of a rung: its deal of `points`, then `own` (points made from
        this shard's own failures, not dealt), placed after the dealt ones."""
        mine = deal(points, self.shard, self.dealt_so_far)
        self.dealt_so_far += len(points)
        self.dealt[str(rung)] = len(points)
        self.positions[str(rung)] = mine + [len(points) + j for j in range(len(own))]
        return [points[i] for i in mine] + list(own)

    def record(self, options: dict) -> dict:
        """The report's `shard` field (the outcomes are added when it is written)."""
        return {"index": self.shard.index, "count": self.shard.count, "options": options,
                "dealt": dict(self.dealt), "positions": {k: list(v) for k, v in self.positions.items()}}


def options_record(opts) -> dict:
    """What must be the same in every shard of one climb: points and their judgement depend on it."""
    return {"rungs": list(opts.rungs), "seed": opts.seed, "timeout_s": opts.timeout_s, "repeat": opts.repeat,
            "repeat_s": opts.repeat_s, "replay": opts.replay, "budget": opts.budget}
