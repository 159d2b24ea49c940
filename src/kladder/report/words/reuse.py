"""The words of the outcome store (history/outcomes.py) and of a climb stopped early (-x): what a
climb reused and from which climbs, what ran and why, rung 5's evidence kept across climbs,
and the one line a spec of a climb of many specs."""
from __future__ import annotations

from ...core.facts import AccumulatedFacts, ReusedFacts, ReuseFacts

PART_NAMES = {"kernel": "the kernel's code", "reference": "the reference's code", "spec": "the spec's declarations",
              "toolchain": "the toolchain or the device", "kladder": "kladder", "env": "the environment",
              "options": "the device or --timeout"}


def climbs_text(numbers: list[int], run_ids: list[str]) -> str:
    """"climb #12", "climbs #10, #12", or the run id of a climb the history does not number."""
    if numbers:
        shown = ", ".join(f"#{n}" for n in numbers[:6]) + (f" and {len(numbers) - 6} more" if len(numbers) > 6 else "")
        return f"climb{'s' if len(numbers) > 1 else ''} {shown}"
    if run_ids:
        return f"climb {run_ids[0]}" + (f" and {len(run_ids) - 1} more" if len(run_ids) > 1 else "")
    return "earlier climbs"


def changed_text(x: ReuseFacts) -> str:
    if not x.changed:
        return ""
    since = f" since climb #{x.since}" if x.since is not None else " since the last climb"
    return ", ".join(PART_NAMES.get(p, p) for p in x.changed) + " changed" + since


def reuse_text(x: ReuseFacts) -> str:
    """"312 of 330 points reused from climb #12; 18 run (the kernel's code changed since climb #12)"."""
    if x.why_not:
        return f"no point reused: {x.why_not}; {x.ran:,} run"
    if x.fresh:
        return f"no point reused (--fresh): {x.ran:,} run, their outcomes kept for the next climb"
    why = changed_text(x)
    if not x.reused:
        return f"no point reused: {x.ran:,} run" + (f" ({why})" if why else "")
    text = f"{x.reused:,} of {x.points:,} points reused from {climbs_text(x.climbs, x.run_ids)}; {x.ran:,} run"
    return text + (f" ({why})" if why and x.ran else "") + (" (--accumulate: rung 5's clean points ran again)"
                                                           if x.accumulate else "")


def reused_text(x: ReusedFacts) -> str:
    """A reused point: "reused from climb #12 (2026-12-06T18:20:36)"."""
    which = f"climb #{x.climb}" if x.climb is not None else f"climb {x.run_id}"
    return f"reused from {which} ({x.kept}): not run in this climb, its key unchanged"


def accumulated_text(x: AccumulatedFacts, wrong: str = "wrong") -> str:
    """"over 8 climbs since 2026-12-01: 0 wrong in 1,200,000 calls: rate < 2.5e-06 at 95%"."""
    return (f"over {x.climbs:,} climbs under the same key since {x.since}: 0 {wrong} in {x.calls:,} calls: rate < "
            f"{x.bound:.2g} at {x.conf:.0%}")


def stopped_text(stopped_at: int, rungs: list[int]) -> str:
    """"rungs 3-8 not climbed: stopped at rung 2, -x"."""
    if not rungs:
        return f"stopped at rung {stopped_at}, -x"
    spans, start = [], rungs[0]
    for a, b in zip(rungs, [*rungs[1:], None], strict=False):
        if b != a + 1:
            spans.append(f"{start}-{a}" if a != start else f"{a}")
            start = b
    return f"rung{'s' if len(rungs) > 1 else ''} {', '.join(spans)} not climbed: stopped at rung {stopped_at}, -x"
