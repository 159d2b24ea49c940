"""The words of a climb of many specs (`kladder climb PATH...`, kladder/many.py): one line a spec
as it ends, the failing specs' reports, the totals. Returns text; the CLI prints it."""
from __future__ import annotations

from ..core.outcome import Status
from ..core.results import ClimbReport
from .terminal import literal, render_text

VERDICTS = {0: "PASSED", 1: "FAILED", 2: "NOT STARTED", 5: "NOTHING RAN", 130: "INTERRUPTED"}


def spec_line(report: ClimbReport, width: int = 0) -> str:
    """"PASSED  rmsnorm  kladder.zoo.rmsnorm_n_tail::fixed  35 points: 33 passed, 2 skipped; 35 reused  [0.4 s]"."""
    outs = report.outcomes
    counts = [(s, sum(o.status == s for o in outs)) for s in Status]
    shown = ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in counts if n)
    verdict = VERDICTS.get(report.exit_code, f"EXIT {report.exit_code}")
    if report.exit_code == 1 and not report.failures:
        verdict = "NOT JUDGED"
    low = f"; lowest failing rung {report.lowest_failing_rung}" if report.lowest_failing_rung else ""
    reuse = report.reuse
    took = f"; {reuse.reused} reused" if reuse is not None and reuse.reused else ""
    if report.stopped_at is not None:
        took += f"; stopped at rung {report.stopped_at} (-x)"
    why = f": {report.start_error['message']}" if report.start_error else ""
    return literal(f"{verdict:11} {report.spec:{width}}  {report.ref}  {len(outs)} points"
                   f"{': ' + shown if shown else ''}{low}{took}{why}  [{report.seconds:.1f} s]")


def not_climbed_line(spec: str, ref: str, why: str, width: int = 0) -> str:
    return literal(f"{'NOT CLIMBED':11} {spec:{width}}  {ref}  {why}")


def failed_reports(reports: list[ClimbReport], color: bool = False, verbose: bool = False) -> str:
    """Each failing (or not judged) spec's report as a climb of it alone prints it."""
    return "".join("\n" + render_text(r, color=color, verbose=verbose) for r in reports if r.exit_code not in (0, 5))


def totals_text(reports: list[ClimbReport], not_climbed: int, seconds: float, stopped_by: str | None,
                interrupted: bool) -> str:
    """"3 specs: 2 passed, 1 failed; 97 points: 70 reused, 27 run; 15.2 s"."""
    by = {}
    for r in reports:
        word = VERDICTS.get(r.exit_code, "other").lower()
        by[word] = by.get(word, 0) + 1
    points = sum(len(r.outcomes) for r in reports)
    reused = sum(r.reuse.reused for r in reports if r.reuse is not None)
    n = len(reports) + not_climbed
    parts = ", ".join(f"{v} {k}" for k, v in by.items())
    text = (f"\n{n} spec{'s' if n != 1 else ''}: {parts or 'none climbed'}"
            f"{f', {not_climbed} not climbed' if not_climbed else ''}; {points} points: {reused} reused, "
            f"{points - reused} run; {seconds:.1f} s")
    if stopped_by is not None:
        text += f"\nspecs after {stopped_by} not climbed: stopped at its first failing rung, -x"
    if interrupted:
        text += "\ninterrupted: the specs climbed so far are reported"
    return literal(text) + "\n"
