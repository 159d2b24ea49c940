"""The zoo table's data: one typed row a case (the buggy kernel's and the twin's reports, the
verdict as an enum member), and the tally of the rows. zoo_run.py makes them, report/zoo.py
words them; nothing reads a sentence back."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .outcome import NoteKind, Status
from .results import ClimbReport


class Verdict(enum.Enum):
    """What the climb says of a case's buggy kernel."""
    CAUGHT = "caught"            # a point failed (the lowest failing rung is in the report), or the climb found the
                                 # reference not independent (zoo_rows.reference_rung: a BROKEN point)
    NEEDS_GPU = "needs_gpu"      # nothing failed, and the case needs CUDA that this device is not
    MISSED = "missed"            # nothing failed on a device the case can run on


@dataclass(frozen=True)
class CaseRow:
    name: str
    rung: int                    # the case's own rung (CASE["rung"])
    bug: ClimbReport
    twin: ClimbReport
    verdict: Verdict
    twin_clean: bool             # no false alarm: the twin passed, or (a GPU case off CUDA) ran nothing
    seconds: float               # both climbs of the case, as the table's reader waited for them
    reference_rung: int | None = None   # where the buggy kernel's climb found its reference not independent
    bug_climbed: bool = True     # False: a GPU case's buggy kernel off CUDA, not climbed (zoo_run.py)

    @property
    def ok(self) -> bool:
        return self.twin_clean and self.verdict is not Verdict.MISSED


def judge_case(name: str, case: dict, bug: ClimbReport, twin: ClimbReport, device: str, seconds: float,
               bug_climbed: bool = True) -> CaseRow:
    """A case's row from its two reports: caught when the buggy kernel failed somewhere; a GPU
    case off CUDA that fails nothing needs a GPU (its points skipped, or a race the CPU cannot
    run; or its buggy kernel not climbed there), and its twin may run nothing there without a
    false alarm."""
    needs_gpu = "cuda" in case["needs"] and device != "cuda"
    ref = reference_rung(bug)
    caught = bug.lowest_failing_rung is not None or ref is not None
    verdict = Verdict.CAUGHT if caught else Verdict.NEEDS_GPU if needs_gpu else Verdict.MISSED
    clean = twin.exit_code == 0 or (needs_gpu and twin.nothing_ran)
    return CaseRow(name, case["rung"], bug, twin, verdict, clean, seconds, ref, bug_climbed)


def reference_rung(report: ClimbReport) -> int | None:
    """The lowest rung where the reference was found not independent of the kernel (a BROKEN
    point, the spec's problem: checks/independence.py). A case whose bug is its reference
    (shared_kernel_reference: two paths, one kernel) is caught there: the climb flags the
    reference itself, not a failure of the kernel."""
    rungs = [o.point.rung for o in report.outcomes if o.status == Status.BROKEN and o.note is not None
             and o.note.kind == NoteKind.REFERENCE_NOT_INDEPENDENT]
    return min(rungs) if rungs else None


@dataclass(frozen=True)
class Tally:
    cases: int
    caught: int
    need_gpu: int
    twins_clean: int
    ok: bool                     # every twin clean, every buggy kernel caught or needing a GPU


def tally(rows: list[CaseRow]) -> Tally:
    return Tally(len(rows), sum(r.verdict is Verdict.CAUGHT for r in rows),
                 sum(r.verdict is Verdict.NEEDS_GPU for r in rows), sum(r.twin_clean for r in rows),
                 all(r.ok for r in rows))
