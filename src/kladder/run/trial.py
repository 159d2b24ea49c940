"""One point, in the current process: the point's mode calls the kernel and yields what it
observed; each observation goes to the checks as it comes (a mode may overwrite a buffer on
its next call). Runs inside a worker (isolation.py); returns an Outcome and never prints.
Whether the process survives the point (a device fault poisons it) is `fatal` on the result."""
from __future__ import annotations

import time

from ..checks import Judge
from ..core.outcome import KernelError, Note, NoteKind, Outcome, Skip, SpecBroken, Status
from ..core.point import Point
from ..core.spec import Spec
from . import faults, interpreter, modes
from .faults import Result
from .harness import Harness
from .hashes import output_hashes
from .stages import CLOCK, driven
from .modes.base import (
    Call,
    Flagged,
    Imported,
    Measured,
    Ran,
    Ranks,
    Repeats,
    Same,
    Sanitized,
    Scores,
    StreamBatch,
    Streamed,
    Traces,
    Uncaptured,
)


def run_point(spec: Spec, point: Point, device: str, watch=None) -> Result:
    """`watch` (run/debug.Watch, in `kladder repro --pdb/--save` only): told of each call after its
    judgement and of the kernel's exception, in this process; a worker passes none."""
    t0 = time.perf_counter()
    CLOCK.reset()
    try:
        result = _run(spec, point, device, watch)
    finally:
        stages = CLOCK.stop()
    result.outcome.seconds = time.perf_counter() - t0
    result.outcome.stages = stages
    return result


def judge_call(h: Harness, judge: Judge, seen: Call, hashes: dict | None = None, watch=None) -> None:
    """One call judged: at the dtype's default first, then, for the outputs whose verdict the
    honest peer decides, with their peers (computed only then: a passing point costs one
    reference run). `hashes` gets each output's hash (the first call's), before the checks."""
    outputs = h.outputs(seen.prep, seen.returned)
    if hashes is not None:
        output_hashes(outputs, hashes)
    expected = h.expected(seen.prep)
    before = len(judge.findings)
    needs = judge.call(seen.prep, outputs, seen.returned, expected, seen.label, interpreter.rounding_touched(h.touched))
    if needs:
        judge.settle(h.peers(seen.prep, needs, expected.refs))
    if watch is not None:
        watch.judged(seen, outputs, expected, judge.findings[before:], judge.masks)


def _judge_repeats(h: Harness, judge: Judge, seen: Repeats) -> None:
    """Rung 5's calls: the worst against the reference of its inputs, with its peers on demand."""
    if seen.worst is None:
        judge.repeats(seen, None)
        return
    expected = h.expected(seen.worst_prep)
    judge.repeats(seen, expected, lambda names: h.peers(seen.worst_prep, {n: "values" for n in names}, expected.refs))


def _judge_stream(h: Harness, judge: Judge, seen: StreamBatch) -> None:
    """One batch of rung 5's stream, each call against its own reference; the honest peer of a
    call's inputs asked only for a call that fails the default where a peer may excuse it."""
    def peers(j: int, names: list) -> dict:
        refs = {n: r[j] for n, r in seen.refs.items()}
        return h.peers(seen.preps[j], {n: "values" for n in names}, refs)
    judge.stream_batch(seen, peers, interpreter.rounding_touched(h.touched))


def _made_up(point: Point, h: Harness) -> Result | None:
    """A point whose calls touched a feature Triton's interpreter computes wrong (bfloat16
    arithmetic on raw bits): its results are the interpreter's, not the kernel's. Not judged on
    the CPU, whatever they are: never failed, never passed."""
    defect = interpreter.garbage(h.touched)
    if defect is None:
        return None
    feature, evidence = defect
    return Result(Outcome(point, Status.SKIPPED, note=Note.of(NoteKind.INTERPRETER_DEFECT, feature=feature, **evidence)))


def _run(spec: Spec, point: Point, device: str, watch=None) -> Result:
    interpreted = interpreter.on()             # decided once here, passed down: nothing below reads the environment
    h = Harness(spec, point, device, interpreted=interpreted)
    mode = modes.get(point.mode)
    judge = Judge(spec, point, device, interpreted=interpreted, judges_mutations=mode.judges_mutations)
    rows, fatal, hashes = None, False, {}
    try:
        if mode.needs_cuda and device != "cuda":
            raise Skip(NoteKind.MODE_NEEDS_CUDA, mode=point.mode)
        for seen in driven(mode.observe(h)):
            if isinstance(seen, Call):
                rows = rows or seen.prep.rows
                judge_call(h, judge, seen, hashes, watch)
            elif isinstance(seen, Uncaptured):
                fatal = device == "cuda"             # a failed capture may leave the context unusable
                if seen.skip:
                    return Result(Outcome(point, Status.SKIPPED, note=Note.of(NoteKind.GRAPHS_NOT_CLAIMED, **seen.facts)), fatal=fatal)
                judge.uncaptured(seen.facts)
            elif isinstance(seen, Same):
                judge.same(seen.before, seen.after, seen.cause, seen.call, seen.facts)
            elif isinstance(seen, Traces):
                judge.traces(seen)
            elif isinstance(seen, Scores):
                judge.scores(seen.measured)
            elif isinstance(seen, Measured):
                judge.measured(seen.note)
            elif isinstance(seen, Ran):
                judge.ran(seen)
            elif isinstance(seen, Flagged):
                judge.flagged(seen)
            elif isinstance(seen, Imported):
                judge.imported(seen)
            elif isinstance(seen, Ranks):
                judge.ranks(seen)
            elif isinstance(seen, Repeats):
                _judge_repeats(h, judge, seen)
                # a capture that failed may leave the context unusable: the worker is replaced after it
                fatal = seen.fallback is not None and device == "cuda"
            elif isinstance(seen, StreamBatch):
                _judge_stream(h, judge, seen)
            elif isinstance(seen, Streamed):
                judge.streamed(seen)
            elif isinstance(seen, Sanitized):
                judge.sanitized(seen)
            else:                                # kladder's own bug: an observation nothing judges is never dropped
                raise TypeError(f"mode {str(point.mode)!r} yielded a {type(seen).__name__}: no check takes it "
                                f"(run/trial.py judges each observation type of run/modes/base.py).")
    except Skip as e:
        return Result(Outcome(point, Status.SKIPPED, note=e.note))
    except SpecBroken as e:
        return Result(Outcome(point, Status.BROKEN, note=e.note))
    except KernelError as k:
        if watch is not None:
            watch.raised(h, k)
        return _made_up(point, h) or faults.kernel_error(spec, point, k, device)
    except Exception as e:  # OOM while preparing, or a fault outside the call
        result = faults.outside_call(point, e)
        if result is None:
            raise
        return result
    if judge.broken is not None:             # the reference's fault is the spec's, never the kernel's
        return Result(Outcome(point, Status.BROKEN, note=judge.broken, rows=rows, warnings=judge.warnings), fatal=fatal)
    made_up = _made_up(point, h)
    if made_up is not None:
        return made_up
    if judge.unjudged is not None and not judge.findings:
        return Result(Outcome(point, Status.SKIPPED, note=judge.unjudged))
    status = Status.FAILED if judge.findings else Status.PASSED
    return Result(Outcome(point, status, judge.findings, note=judge.note, rows=rows,
                          warnings=judge.warnings, hashes=hashes), fatal=fatal)
