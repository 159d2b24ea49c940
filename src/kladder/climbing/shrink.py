"""The smallest failing point, and what decides its failure: from a point that failed, search
for the smallest sizes (and the simplest values: normal inputs, contiguous layouts) that still
fail the same way (the same check), each candidate a real run through the caller's `run` (a
Runner's: in a worker, replayed, judged as a climb judges), within a time budget.

Values first, then shapes:
1. Values. A point with value kinds (rung 2's `x: huge`) runs with normal values at its own
   shape: where that passes, the kinds are part of the cause and are kept; where it fails the
   same way, they are dropped. Layouts likewise (contiguous).
2. Shapes. Per dim, its floor, then bisection between the last passing and the first failing
   size, the values kept; the dims are swept again until nothing moves. A point's dims are
   independent integers with a known floor, so the search is plain, not Hypothesis's.
3. The edge. Where a dim's bisection ends (`passes` passed, `fails` failed), both sizes run
   again under SEEDS other seeds: other inputs of the same kinds at the same sizes. A size
   below the edge that fails under another seed moves the point there, and the search goes on
   below it. An edge is a shape's only when it holds under every seed: `fails` fails and
   `passes` passes each time. A float16 accumulator that overflows once a row's sum of squares
   passes 65504 "fails from N = 662" with one seed and from N = 640 with another: the values,
   not the shape, decide where.

What decides it (facts.ShrinkCauseFacts, said by report/words/shrinking.py): the values (the
point needs its value kinds and no shape edge holds: "fails for x: huge at every shape tried,
down to M = 1, N = 1"), likewise a layout (contiguous inputs pass), a shape (an edge that holds under every seed: "N = 257 fails and
N = 256 passes, under 3 seeds each"), the inputs (normal values, an edge that moves with the
seed), or the floor (normal values fail at every dim's floor: no value kind is needed, and no
smaller shape can show an edge).

A point at a size cliff (2^31 bytes or elements: rung 1's "big" points) cannot shrink: below
the cliff it is another point, and the report says so."""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

CLIFF_KINDS = ("big",)
SEEDS = 2              # other seeds each side of an edge runs under (3 input sets in all)
MOVES = 4              # times one dim's edge may move down under another seed before the search stops there


def cannot_shrink(point) -> str | None:
    """Why this point cannot be shrunk, or None."""
    if point.kind in CLIFF_KINDS:
        return ("it fails past a size cliff (2^31 or 2^32 bytes or elements): every smaller size is below the cliff, "
                "where the offsets it exercises fit")
    if point.mode not in ("eager", ""):
        return f"its failure is about the {point.mode} mode's calls, not its sizes"
    if point.replay or point.ranks:
        return "its inputs are a captured call's or a collective's, whose sizes are theirs"
    return None


def signature(outcome) -> str | None:
    """What "fails the same way" compares: the headline finding's check."""
    if str(outcome.status) != "failed" or outcome.headline is None:
        return None
    return str(outcome.headline.check)


def with_dims(point, sizes: dict[str, int], why: str):
    return dataclasses.replace(point, dims=tuple(sizes.items()), why=why)


def shrink(point, first_outcome, run: Callable, spec, budget_s: float = 60.0) -> dict:
    """The smallest point that fails as `first_outcome` did, and what decides it; facts for the
    report and JSON (`cause`: facts.ShrinkCauseFacts as a dict)."""
    t0 = time.monotonic()
    why_not = cannot_shrink(point)
    target = signature(first_outcome)
    facts = {"from": point.to_dict(), "check": target, "method": "values first, then each dim's floor and "
             "bisection, each edge run again under other seeds", "runs": 0, "complete": False, "passes_at": {},
             "smallest": None, "cannot_shrink": why_not, "cause": None}
    if target == "hang" and not why_not:
        why_not = facts["cannot_shrink"] = ("it hung: every candidate that hangs too costs the whole timeout "
                                            "(and a fresh worker); the point's own repro is the smallest known")
    if why_not or target is None:
        return facts
    search = Search(point, first_outcome, run, target, t0 + budget_s)
    done = search.values() and search.shapes(spec)
    best = search.best
    facts.update({"complete": bool(done), "smallest": best.to_dict(), "smallest_id": best.id,
                  "outcome_status": str(search.outcome.status), "runs": search.runs, "passes_at": search.passes_at,
                  "cause": search.cause(spec, bool(done)).to_dict(), "seconds": round(time.monotonic() - t0, 3)})
    return facts


class Search:
    """One shrinking: the smallest point failing the `target` check so far, and what the runs showed."""

    def __init__(self, point, outcome, run: Callable, target: str, deadline: float):
        self.best, self.outcome, self.run, self.target, self.deadline = point, outcome, run, target, deadline
        self.runs = 0
        self.seen: dict[tuple, str] = {}                 # key(point) -> what its run gave
        self.shapes_failed: dict[tuple, bool] = {}       # (dims, values, layouts) tried -> failed under some seed
        self.searched: dict[str, tuple] = {}             # dim -> the best point's key when its search ended
        self.passes_at: dict[str, dict] = {}             # dim -> the size just below its smallest failing one
        self.edges: dict[str, dict] = {}                 # dim -> facts.EdgeFacts' fields
        self.milder: str | None = None                   # normal values at the failing point's shape: what they gave
        self.milder_at: tuple = ()
        self.contiguous: str | None = None               # contiguous layouts there: what they gave

    # ------------------------------------------------------------------ one run
    def fails(self, candidate, keep: bool = True) -> bool | None:
        """Whether `candidate` fails the same way (then, with `keep`, it is the best so far); None:
        the budget is spent."""
        if time.monotonic() > self.deadline:
            return None
        self.runs += 1
        o = self.run(candidate)
        sig = signature(o)
        self.seen[key(candidate)] = str(o.status) if sig in (None, self.target) else f"failed ({sig})"
        same = sig == self.target
        shape = (candidate.dims, candidate.values, candidate.layouts)
        self.shapes_failed[shape] = self.shapes_failed.get(shape, False) or same
        if same and keep:
            self.best, self.outcome = candidate, o
        return same

    # ------------------------------------------------------------------ 1. values
    def values(self) -> bool:
        """Normal values, then contiguous layouts, at the failing point's shape: kept where the
        failure needs them."""
        self.milder_at = self.best.dims
        for field in ("values", "layouts"):
            if not getattr(self.best, field):
                continue
            simpler = dataclasses.replace(self.best, **{field: ()})
            got = self.fails(simpler)
            if got is None:
                return False
            if field == "values":
                self.milder = self.seen[key(simpler)]
            else:
                self.contiguous = self.seen[key(simpler)]
        b = self.best
        self.shapes_failed[(b.dims, b.values, b.layouts)] = True
        return True

    # ------------------------------------------------------------------ 2. shapes
    def shapes(self, spec) -> bool:
        for _ in range(3):                                   # sweeps until no dim moves
            moved = False
            for d, dim in spec.dims.items():
                if d not in self.best.sizes or self.searched.get(d) == key(self.best, but=d):
                    continue                                 # nothing else moved since this dim's search ended
                for _ in range(MOVES + 1):                   # again from the floor while the edge moves down
                    got = self._dim(d, dim)
                    if got is None:
                        return False
                    moved |= got != "same"
                    if got != "lower":
                        break
                self.searched[d] = key(self.best, but=d)
            if not moved:
                return True
        return True

    def _sizes_of(self, d: str, dim) -> list[int]:
        """The sizes d takes up to the failing one: a range, or a Dim(sizes=[...])'s own (bisected by index)."""
        now = self.best.sizes[d]
        return [v for v in dim.sizes if v <= now] if dim.sizes else range(dim.min, now + 1)

    def _at(self, d: str, v: int):
        return with_dims(self.best, {**self.best.sizes, d: v}, f"shrunk: {d} = {v}")

    def _dim(self, d: str, dim) -> str | None:
        """One dim shrunk: "same" (it did not move), "moved", "lower" (a size below its edge failed
        under another seed: search it again from there), None (out of time)."""
        vals = self._sizes_of(d, dim)
        start = self.best.sizes[d]
        lo, hi = 0, len(vals) - 1
        if hi <= lo:
            return "same"
        got = self.fails(self._at(d, vals[lo]))
        if got is None:
            return None
        if got:
            self.passes_at.pop(d, None)
            self.edges.pop(d, None)
            return "moved"
        while hi - lo > 1:                                   # lo passes (or fails otherwise), hi fails the same way
            mid = (lo + hi) // 2
            got = self.fails(self._at(d, vals[mid]))
            if got is None:
                return None
            lo, hi = (lo, mid) if got else (mid, hi)
        below = self._at(d, vals[lo])
        self.passes_at[d] = {"size": vals[lo], "status": self.seen.get(key(below), "unknown")}
        edge = self._edge(d, below)
        if edge is None:
            return None
        if edge == "lower":
            return "lower"
        return "same" if vals[hi] == start else "moved"

    # ------------------------------------------------------------------ 3. the edge
    def _edge(self, d: str, below) -> str | None:
        """The edge of dim d (the best point fails, `below` passed) under other seeds: "lower" when
        `below` fails under one (the point moves there), else "held" or "moves"; None: out of time."""
        at = self.best
        prior = self.edges.get(d, {})
        passes_under = fails_under = 1
        for k in range(1, SEEDS + 1):
            got = self.fails(below.shifted(k))
            if got is None:
                return None
            if got:                                          # the best point is now `below` under that seed
                self.edges[d] = {"moved_down": prior.get("moved_down", 0) + 1}
                return "lower"
            passes_under += self.seen.get(key(below.shifted(k))) == "passed"
        passes_under -= self.seen.get(key(below)) != "passed"
        for k in range(1, SEEDS + 1):
            got = self.fails(at.shifted(k), keep=False)
            if got is None:
                return None
            fails_under += bool(got)
        self.edges[d] = {"dim": d, "fails": at.sizes[d], "passes": below.sizes[d], "seeds": SEEDS + 1,
                         "fails_under": fails_under, "passes_under": passes_under,
                         "moved_down": prior.get("moved_down", 0)}
        return "held" if fails_under == passes_under == SEEDS + 1 else "moves"

    # ------------------------------------------------------------------ what decides it
    def cause(self, spec, done: bool):
        from ..core.facts import EdgeFacts, ShrinkCauseFacts
        best = self.best
        edges = [EdgeFacts(**e) for d, e in self.edges.items() if "dim" in e and d in best.sizes
                 and e["fails"] == best.sizes[d]]
        floors = all(v == _floor(spec.dims[d]) for d, v in best.sizes.items() if d in spec.dims)
        tried = [f for (_, values, layouts), f in self.shapes_failed.items()
                 if values == best.values and layouts == best.layouts]
        needs_values = bool(best.values) and self.milder == "passed"
        if not done:
            kind = "unsettled"
        elif any(e.fails_under == e.passes_under == e.seeds for e in edges):
            kind = "shape"
        elif needs_values:
            kind = "values"
        elif best.layouts and self.contiguous == "passed":
            kind = "layout"
        elif edges:
            kind = "inputs"
        else:
            kind = "floor"
        return ShrinkCauseFacts(kind=kind, values=[[n, v] for n, v in best.values], milder=self.milder,
                                milder_at=[[n, v] for n, v in self.milder_at], layouts=[[n, v] for n, v in best.layouts],
                                contiguous=self.contiguous, floors=floors,
                                every_shape=bool(tried) and all(tried), shapes=len(tried), edges=edges)


def key(point, but: str | None = None) -> tuple:
    """What a run depends on (its `why` aside); `but`: the point's dims without that one (and
    its seed left out), to tell whether anything but dim `but` moved."""
    dims = tuple((d, v) for d, v in point.dims if d != but) if but else point.dims
    return (dims, None if but else point.seed, point.values, point.layouts, point.dtypes, point.config)


def _floor(dim) -> int:
    return dim.sizes[0] if dim.sizes else dim.min


def shrink_failures(report, runner, repro: Callable, budget_s: float = 120.0) -> list[dict]:
    """A climb's hook: each climbed rung's first failure (failed, and failed again when replayed)
    shrunk with `runner` (the climb's, before it closes), the budget shared in rung order. The
    facts of each, with its rung, the failing point's id and the smallest point's repro."""
    from ..core.point import Point
    t0 = time.monotonic()
    out = []
    for rr in report.rungs:
        first = next((o for o in rr.outcomes if str(o.status) == "failed"), None)
        if first is None:
            continue
        left = budget_s - (time.monotonic() - t0)
        facts = shrink(first.point, first, runner.run, runner.spec, max(0.0, left))
        facts.update(rung=rr.rung, failed_id=first.point.id)
        if facts.get("smallest"):
            facts["repro"] = repro(Point.from_dict(facts["smallest"]))
        out.append(facts)
    return out
