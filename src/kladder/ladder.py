"""Climb the ladder: for each rung, generate its points, run each in an isolated worker,
record every outcome as it arrives. The top level reads as a list of rungs.

`Runner.run(point)` runs one point the way a climb does (skipped when it cannot run here,
alone in a fresh worker when its mode is about process state, replayed when it fails, and
re-run alone when it is its rung's first failure); `kladder climb`, `kladder repro` and the
pytest plugin all run points through it."""
from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

from .outcome import Check, Note, NoteKind, Outcome, Replay, Status
from .point import Point
from .report.data import ClimbReport, RungReport
from .run.isolation import Pool, point_timeout
from .rungs import BUILT, BY_NUMBER, RUNGS
from .sizes import CPU_BUDGET, budget_for, is_big, total_bytes
from .spec import Spec
from .version import __version__

MEMORY_HEADROOM = 0.85          # leave room for the reference's rows and the allocator's slack


class UsageError(ValueError):
    """A bad request (rung, device, path): exit status 2."""


@dataclass
class Options:
    rungs: tuple[int, ...] = BUILT
    device: str = "auto"
    timeout_s: float | None = None
    log_path: str | None = None
    replay: str | None = None            # a capture directory: its calls become rung-2 points
    seed: int = 0                        # shifts every point's seed (--seed): false alarms are seed-dependent
    on_outcome: Callable[[Outcome], None] | None = field(default=None, repr=False)


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise UsageError(f"--device {device!r}: use auto, cpu or cuda.")
    if device == "cpu":
        return "cpu"
    import torch
    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise UsageError("--device cuda: torch sees no CUDA device here; use --device cpu (Triton's interpreter).")
    return "cpu"


def parse_rungs(text: str | None) -> tuple[int, ...]:
    """'1', '1,2', '1-3' -> rungs; a rung that is not built yet is a usage error."""
    if not text:
        return BUILT
    rungs: list[int] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo, hi = int(a.lstrip("rR")), int((b or a).lstrip("rR"))
        except ValueError:
            raise UsageError(f"--rungs {text!r}: give rung numbers such as 1, 1,2 or 1-3.") from None
        rungs += range(lo, hi + 1)
    for r in rungs:
        if r not in BY_NUMBER:
            raise UsageError(f"--rungs {text!r}: rung {r} does not exist; the ladder has rungs 1-8.")
        if not BY_NUMBER[r].built:
            raise UsageError(f"--rungs {text!r}: rung {r} ({BY_NUMBER[r].title}) is not built in kladder {__version__} "
                             f"yet; built rungs: {', '.join(map(str, BUILT))}.")
    return tuple(sorted(set(rungs)))


def repro_command(ref: str, device: str, point: Point) -> str:
    defaults = {"why": "", "config": [], "kind": "edge", "needs": "", "mode": "eager", "partner": []}
    d = {k: v for k, v in point.to_dict().items() if defaults.get(k, object()) != v and k != "why"}
    return f"kladder repro {shlex.quote(ref)} {shlex.quote(json.dumps(d, separators=(',', ':')))} --device {device}"


def skip_note(spec: Spec, point: Point, device: str, free_bytes: int | None) -> Note | None:
    if point.mode == "model":
        return None                      # the model sizes its own tensors
    need = total_bytes(spec, point.sizes, point.dtype_of)
    # a point past every small budget is a GPU point by its sizes, whatever its `needs` says
    if device != "cuda" and (point.needs == "cuda" or is_big(spec, point.sizes)):
        return Note(NoteKind.GPU_POINT, {"need_bytes": need, "budget": CPU_BUDGET.text()})
    if device == "cuda" and free_bytes is not None and need > MEMORY_HEADROOM * free_bytes:
        return Note(NoteKind.NO_DEVICE_MEMORY, {"need_bytes": need, "free_bytes": free_bytes})
    return None


# A-B-A is about state one call leaves for the next: each runs alone in a new worker, so
# that its A is the first call of a fresh process (else the points before it set the state).
FRESH_PROCESS_MODES = ("aba",)
# A hang costs its whole timeout again, a crash or a device fault a new worker: reported
# as seen. Every other failure is replayed once before it is reported.
NOT_REPLAYED = (Check.HANG, Check.CRASHED, Check.DEVICE_FAULT, Check.CAPTURE)


class Runner:
    """Runs points of one spec on one device, in a pool of workers, as a climb runs them."""

    def __init__(self, ref: str, spec: Spec, device: str, timeout_s: float | None = None):
        self.ref, self.spec, self.device = ref, spec, device
        self.timeout = point_timeout(spec, device, timeout_s)
        self.pool = Pool(ref, device)
        self.failed_rungs: set[int] = set()

    @property
    def device_name(self) -> str:
        return self.pool.device_name

    def run(self, point: Point) -> Outcome:
        free = self.pool.free_bytes() if self.device == "cuda" else None
        note = skip_note(self.spec, point, self.device, free)
        fresh = point.mode in FRESH_PROCESS_MODES
        outcome = Outcome(point, Status.SKIPPED, note=note) if note else self.pool.run(point, self.timeout, fresh=fresh)
        if outcome.status == Status.FAILED and outcome.headline.check not in NOT_REPLAYED:
            _replayed(outcome, self.pool.run(point, self.timeout, fresh=fresh))
            if outcome.status == Status.FAILED and not fresh and point.rung not in self.failed_rungs:
                _alone(outcome, self.pool.run(point, self.timeout, fresh=True))
        if outcome.status == Status.FAILED:
            self.failed_rungs.add(point.rung)
        outcome.repro = repro_command(self.ref, self.device, point)
        return outcome

    def close(self) -> None:
        self.pool.close()


def _replayed(first: Outcome, again: Outcome) -> None:
    """A failure that does not recur is flaky, reported with its observed rate."""
    if again.status == Status.FAILED:
        first.replay = Replay.FAILED_AGAIN
    else:
        first.status, first.replay, first.replay_status = Status.FLAKY, Replay.FLAKY, again.status


def _alone(outcome: Outcome, alone: Outcome) -> None:
    """The rung's first failure is re-run alone in a new worker, as its repro command runs it.
    If it passes there, the failure depends on state left by earlier points in the worker:
    real (a server is a long-lived process) but rung 4's gap, and the repro will pass."""
    if alone.status == Status.PASSED:
        outcome.replay = Replay.ALONE_PASSES


def rung_points(spec: Spec, rung: int, budget, seed: int = 0, replay: str | None = None):
    """The points a climb runs at `rung`, in order, each seed shifted by `seed`: `kladder points`
    lists exactly these."""
    extra = {"replay": replay} if rung == 2 and replay else {}
    for point in BY_NUMBER[rung].points(spec, budget, **extra):
        yield point.shifted(seed)


def climb(ref: str, spec: Spec, opts: Options) -> ClimbReport:
    device = resolve_device(opts.device)
    budget = budget_for(device)
    report = ClimbReport(spec.name, ref, device, started=_dt.datetime.now().isoformat(timespec="seconds"),
                         kladder_version=__version__, log_path=opts.log_path or "")
    t0 = time.perf_counter()
    runner = Runner(ref, spec, device, opts.timeout_s)
    log = open(opts.log_path, "a") if opts.log_path else None
    try:
        for rung in RUNGS:
            report.rungs.append(RungReport(rung.number, rung.title, climbed=False,
                                           note="not built yet" if not rung.built else "not asked for (--rungs)"))
        for rr in report.rungs:
            if rr.rung in opts.rungs and BY_NUMBER[rr.rung].built:
                rr.climbed, rr.note = True, ""
                _climb_rung(rr, spec, budget, runner, report, log, opts)
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        runner.close()
        if log:
            log.close()
        report.seconds = time.perf_counter() - t0
    return report


def _climb_rung(rr: RungReport, spec, budget, runner: Runner, report, log, opts: Options):
    from .report.jsonout import outcome_dict
    t0 = time.perf_counter()
    on_outcome = opts.on_outcome
    try:
        for point in rung_points(spec, rr.rung, budget, opts.seed, opts.replay):
            outcome = runner.run(point)
            report.device_name = runner.device_name or report.device_name
            rr.outcomes.append(outcome)
            if log:
                log.write(json.dumps(outcome_dict(outcome)) + "\n")
                log.flush()
            if on_outcome:
                on_outcome(outcome)
    finally:
        rr.seconds = time.perf_counter() - t0


def default_log_path(spec_name: str) -> str:
    os.makedirs(os.path.join(".kladder", "log"), exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(".kladder", "log", f"{spec_name}-{stamp}.jsonl")
