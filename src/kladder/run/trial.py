"""One point, in the current process: the point's mode calls the kernel and yields what it
observed; each observation goes to the checks as it comes (a mode may overwrite a buffer on
its next call). Runs inside a worker (isolation.py); returns an Outcome and never prints.
Whether the process survives the point (a device fault poisons it) is `fatal` on the result."""
from __future__ import annotations

import time

from ..checks import Judge
from ..outcome import KernelError, NoteKind, Outcome, Skip, SpecBroken, Status
from ..point import Point
from ..spec import Spec
from . import faults, modes
from .faults import Result
from .harness import Harness
from .modes.base import Call, Measured, Same, Scores, Traces


def run_point(spec: Spec, point: Point, device: str) -> Result:
    t0 = time.perf_counter()
    result = _run(spec, point, device)
    result.outcome.seconds = time.perf_counter() - t0
    return result


def _run(spec: Spec, point: Point, device: str) -> Result:
    h = Harness(spec, point, device)
    judge = Judge(spec, point, device)
    rows = None
    try:
        if point.mode in modes.MODES_NEEDING_CUDA and device != "cuda":
            raise Skip(NoteKind.MODE_NEEDS_CUDA, mode=point.mode)
        for seen in modes.get(point.mode).observe(h):
            if isinstance(seen, Call):
                rows = rows or seen.prep.rows
                judge.call(seen.prep, h.outputs(seen.prep, seen.returned), seen.returned, h.expected(seen.prep), seen.label)
            elif isinstance(seen, Same):
                judge.same(seen.before, seen.after, seen.cause, seen.call, seen.facts)
            elif isinstance(seen, Traces):
                judge.traces(seen)
            elif isinstance(seen, Scores):
                judge.scores(seen.measured)
            elif isinstance(seen, Measured):
                judge.measured(seen.note)
    except Skip as e:
        return Result(Outcome(point, Status.SKIPPED, note=e.note))
    except SpecBroken as e:
        return Result(Outcome(point, Status.BROKEN, note=e.note))
    except KernelError as k:
        return faults.kernel_error(spec, point, k)
    except Exception as e:  # noqa: BLE001 - OOM while preparing, or a fault outside the call
        result = faults.outside_call(point, e)
        if result is None:
            raise
        return result
    status = Status.FAILED if judge.findings else Status.PASSED
    return Result(Outcome(point, status, judge.findings, note=judge.note, rows=rows,
                          warnings=judge.warnings))
