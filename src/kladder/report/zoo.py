"""The words of `kladder zoo climb` over every case: one line a case, the count at the end
(the rows and the tally are data: zoo_rows.py)."""
from __future__ import annotations

from ..core.zoo_rows import CaseRow, Tally, Verdict
from .words import fingerprint_text

VERDICT = {Verdict.CAUGHT: "caught", Verdict.NEEDS_GPU: "needs a GPU (skipped, or a race the CPU cannot run)",
           Verdict.MISSED: "MISSED"}


def case_title(name: str, case: dict) -> str:
    return f"{name} (rung {case['rung']}, {case['gap']}; mirrors {case['mirrors']})"


def row_text(row: CaseRow) -> str:
    low, nfail, ref = row.bug.lowest_failing_rung, len(row.bug.failures), row.reference_rung
    bug_text = f"{nfail} failed point{'s' if nfail != 1 else ''}, lowest failing rung {low}" if low else "no failure"
    if not row.bug_climbed:
        bug_text = f"not climbed on {row.bug.device}"
    if ref is not None:
        bug_text += f"; the reference not independent at rung {ref} (broken: the bug is the reference's)"
    twin_text = "twin clean" if row.twin_clean else f"twin FALSE ALARM ({len(row.twin.failures)} failed)"
    return f"{row.name:24} rung {row.rung}  buggy: {VERDICT[row.verdict]:8} ({bug_text}); {twin_text}  [{row.seconds:.1f} s]"


def summary_text(t: Tally, device: str) -> str:
    gpu = f" ({t.need_gpu} need a GPU)" if t.need_gpu else ""
    return (f"\nzoo on {device}: {t.caught}/{t.cases} buggy kernels caught{gpu}; "
            f"{t.twins_clean}/{t.cases} fixed twins clean\n")


def interrupted_text(name: str) -> str:
    return f"\ninterrupted during {name}: the table holds the cases climbed before it\n"


def env_text(rows: list[CaseRow]) -> str:
    seen = [r.fingerprint for row in rows for r in (row.bug, row.twin) if r.fingerprint]
    return f"env: {fingerprint_text(seen[0])}\n" if seen else ""
