"""The smallest failing point: from a point that failed, search for the smallest sizes (and
the simplest values: normal inputs, contiguous layouts, the first dtype) that still fail the
same way (the same check), each candidate a real run through the caller's `run` (a Runner's:
in a worker, replayed, judged as a climb judges), within a time budget.

The search is plain, not Hypothesis's: a point's dims are independent integers with a known
floor, so per dim it tries the floor, then bisects between the last passing and the first
failing size; it sweeps the dims again until nothing moves. What it finds is the smallest
size of the failing run that holds the point (a bug wrong only in a band, N in [1000, 1100],
shrinks to 1000 from anywhere in it), with the size just below that passes ("passes at N =
999"). A point at a size cliff (2^31 bytes or elements: rung 1's "big" points) cannot shrink:
below the cliff it is another point, and the report says so."""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

CLIFF_KINDS = ("big",)


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
    """The smallest point that fails as `first_outcome` did; facts for the report and JSON."""
    t0 = time.monotonic()
    why_not = cannot_shrink(point)
    target = signature(first_outcome)
    facts = {"from": point.to_dict(), "check": target, "method": "plain search: each dim's floor, then bisection",
             "runs": 0, "complete": False, "passes_at": {}, "smallest": None, "cannot_shrink": why_not}
    if target == "hang" and not why_not:
        why_not = facts["cannot_shrink"] = ("it hung: every candidate that hangs too costs the whole timeout "
                                            "(and a fresh worker); the point's own repro is the smallest known")
    if why_not or target is None:
        return facts
    state = {"best": point, "outcome": first_outcome, "seen": {}}

    def fails(candidate) -> bool | None:
        if time.monotonic() - t0 > budget_s:
            return None                                      # out of time: stop where we are
        facts["runs"] += 1
        o = run(candidate)
        state["seen"][candidate.dims] = str(o.status) if signature(o) in (None, target) else f"failed ({signature(o)})"
        if signature(o) == target:
            state["best"], state["outcome"] = candidate, o
            return True
        return False

    done = _simplify(state, fails) and _sizes(state, fails, spec, facts["passes_at"])
    best = state["best"]
    facts.update({"complete": bool(done), "smallest": best.to_dict(), "smallest_id": best.id,
                  "outcome_status": str(state["outcome"].status), "seconds": round(time.monotonic() - t0, 3)})
    return facts


def _simplify(state, fails) -> bool:
    """Normal values, contiguous layouts, the first dtype of each choice, where the failure stays."""
    for field, simple in (("values", ()), ("layouts", ())):
        if getattr(state["best"], field):
            got = fails(dataclasses.replace(state["best"], **{field: simple}))
            if got is None:
                return False
    return True


def _sizes(state, fails, spec, passes_at: dict) -> bool:
    for _ in range(3):                                       # sweeps until no dim moves
        moved = False
        for d, dim in spec.dims.items():
            sizes = state["best"].sizes
            if d not in sizes:
                continue
            # the sizes d takes up to the failing one: a range, or a Dim(sizes=[...])'s own (bisected by index)
            vals = [v for v in dim.sizes if v <= sizes[d]] if dim.sizes else range(dim.min, sizes[d] + 1)
            lo, hi = 0, len(vals) - 1
            if hi <= lo:
                continue
            got = fails(with_dims(state["best"], {**sizes, d: vals[lo]}, f"shrunk: {d} = {vals[lo]}"))
            if got is None:
                return False
            if got:
                moved = True
                passes_at.pop(d, None)
                continue
            while hi - lo > 1:                               # lo passes (or fails otherwise), hi fails the same way
                mid = (lo + hi) // 2
                got = fails(with_dims(state["best"], {**state["best"].sizes, d: vals[mid]}, f"shrunk: {d} = {vals[mid]}"))
                if got is None:
                    return False
                lo, hi = (lo, mid) if got else (mid, hi)
            moved |= vals[hi] != sizes[d]
            below = with_dims(state["best"], {**state["best"].sizes, d: vals[lo]}, "").dims
            passes_at[d] = {"size": vals[lo], "status": state["seen"].get(below, "unknown")}
        if not moved:
            return True
    return True


def shrink_failures(report, runner, repro: Callable, budget_s: float = 120.0) -> list[dict]:
    """A climb's hook: each climbed rung's first failure (failed, and failed again when replayed)
    shrunk with `runner` (the climb's, before it closes), the budget shared in rung order. The
    facts of each, with its rung, the failing point's id and the smallest point's repro."""
    from .point import Point
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
