"""Climb the ladder: for each rung, generate its points, run each in an isolated worker,
record every outcome as it arrives. The top level reads as a list of rungs."""
from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

from . import __version__
from .gaps import BUILT
from .gaps.shapes import CPU_BUDGET, GPU_BUDGET, Budget
from .isolate import Pool
from .outcome import FAILED, FLAKY, PASSED, SKIPPED, Outcome
from .point import Point
from .report.model import RUNG_TITLES, ClimbReport, RungReport
from .sizes import human_bytes, total_bytes
from .spec import Spec

DEFAULT_TIMEOUT_S = {"cpu": 120.0, "cuda": 120.0}
MEMORY_HEADROOM = 0.85          # leave room for the reference's rows and the allocator's slack


class UsageError(ValueError):
    """A bad request (rung, device, path): exit status 2."""


@dataclass
class Options:
    rungs: tuple[int, ...] = tuple(BUILT)
    device: str = "auto"
    timeout_s: float | None = None
    log_path: str | None = None
    replay: str | None = None            # a capture directory: its calls become rung-2 points
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
        return tuple(BUILT)
    rungs: list[int] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo, hi = int(a.lstrip("rR")), int((b or a).lstrip("rR"))
        except ValueError:
            raise UsageError(f"--rungs {text!r}: give rung numbers such as 1, 1,2 or 1-3.") from None
        rungs += range(lo, hi + 1)
    for r in rungs:
        if r not in RUNG_TITLES:
            raise UsageError(f"--rungs {text!r}: rung {r} does not exist; the ladder has rungs 1-8.")
        if r not in BUILT:
            raise UsageError(f"--rungs {text!r}: rung {r} ({RUNG_TITLES[r]}) is not built in kladder {__version__} "
                             f"yet; built rungs: {', '.join(map(str, BUILT))}.")
    return tuple(sorted(set(rungs)))


def repro_command(ref: str, device: str, point: Point) -> str:
    defaults = {"why": "", "config": [], "kind": "edge", "needs": "", "mode": "eager", "partner": []}
    d = {k: v for k, v in point.to_dict().items() if defaults.get(k, object()) != v and k != "why"}
    return f"kladder repro {shlex.quote(ref)} {shlex.quote(json.dumps(d, separators=(',', ':')))} --device {device}"


def skip_reason(spec: Spec, point: Point, device: str, free_bytes: int | None) -> str | None:
    if point.kind == "model":
        return None                      # the model sizes its own tensors
    need = total_bytes(spec, point.sizes, point.dtype_of)
    if point.needs == "cuda" and device != "cuda":
        return (f"a GPU point ({human_bytes(need)} of tensors): over the CPU budget ({CPU_BUDGET.text()}), "
                "since the Triton interpreter runs every program in Python; climb with --device cuda")
    if device == "cuda" and free_bytes is not None and need > MEMORY_HEADROOM * free_bytes:
        return f"needs {human_bytes(need)} of tensors; the device has {human_bytes(free_bytes)} free"
    return None


def climb(ref: str, spec: Spec, opts: Options) -> ClimbReport:
    device = resolve_device(opts.device)
    budget = CPU_BUDGET if device == "cpu" else GPU_BUDGET
    timeout = opts.timeout_s or spec.timeout_s or DEFAULT_TIMEOUT_S[device]
    report = ClimbReport(spec.name, ref, device, started=_dt.datetime.now().isoformat(timespec="seconds"),
                         kladder_version=__version__, log_path=opts.log_path or "")
    t0 = time.perf_counter()
    pool = Pool(ref, device)
    log = open(opts.log_path, "a") if opts.log_path else None
    try:
        for rung in sorted(set(opts.rungs) | set(RUNG_TITLES)):
            report.rungs.append(RungReport(rung, RUNG_TITLES[rung], climbed=False,
                                           note="not built yet" if rung not in BUILT else "not asked for (--rungs)"))
        for rr in report.rungs:
            if rr.rung in opts.rungs and rr.rung in BUILT:
                rr.climbed, rr.note = True, ""
                _climb_rung(rr, spec, ref, device, budget, timeout, pool, report, log, opts.on_outcome, opts.replay)
    except KeyboardInterrupt:
        report.interrupted = True
    finally:
        pool.close()
        if log:
            log.close()
        report.seconds = time.perf_counter() - t0
    return report


def _climb_rung(rr: RungReport, spec, ref, device, budget: Budget, timeout, pool: Pool, report, log, on_outcome, replay=None):
    t0 = time.perf_counter()
    try:
        extra = {"replay": replay} if rr.rung == 2 and replay else {}
        for point in BUILT[rr.rung].points(spec, budget, **extra):
            outcome = _run_one(spec, ref, device, point, timeout, pool, report, rr)
            rr.outcomes.append(outcome)
            if log:
                log.write(json.dumps(outcome.to_dict()) + "\n")
                log.flush()
            if on_outcome:
                on_outcome(outcome)
    finally:
        rr.seconds = time.perf_counter() - t0


def _run_one(spec, ref, device, point, timeout, pool: Pool, report, rung: RungReport) -> Outcome:
    free = pool.free_bytes() if device == "cuda" else None
    report.device_name = pool.device_name or report.device_name
    reason = skip_reason(spec, point, device, free)
    fresh = point.mode in FRESH_PROCESS_MODES
    outcome = Outcome(point, SKIPPED, reason=reason) if reason else pool.run(point, timeout, fresh=fresh)
    if outcome.status == FAILED and outcome.headline.check not in NOT_REPLAYED:
        outcome = _replayed(outcome, pool.run(point, timeout, fresh=fresh))
        if outcome.status == FAILED and not fresh and not any(o.status == FAILED for o in rung.outcomes):
            outcome = _alone(outcome, pool.run(point, timeout, fresh=True))
    outcome.repro = repro_command(ref, device, point)
    return outcome


# A-B-A is about state one call leaves for the next: each runs alone in a new worker, so
# that its A is the first call of a fresh process (else the points before it set the state).
FRESH_PROCESS_MODES = ("aba",)


def _alone(outcome: Outcome, alone: Outcome) -> Outcome:
    """The rung's first failure is re-run alone in a new worker, as its repro command runs it.
    If it passes there, the failure depends on state left by earlier points in the worker:
    real (a server is a long-lived process) but rung 4's gap, and the repro will pass."""
    if alone.status == PASSED:
        outcome.reason = ("passes when run alone in a fresh process: this failure depends on state left by "
                          "earlier points in the same worker (rung 4's A-B-A gap); its repro command will pass")
    return outcome


# A hang costs its whole timeout again, a crash or a device fault a new worker: reported
# as seen. Every other failure is replayed once before it is reported.
NOT_REPLAYED = ("hang", "crashed", "device_fault", "capture")


def _replayed(first: Outcome, again: Outcome) -> Outcome:
    """A failure that does not recur is flaky, reported with its observed rate."""
    if again.status == FAILED:
        first.reason = "replayed: failed again"
        return first
    first.status = FLAKY
    first.reason = f"failed 1 of 2 runs (the replay {again.status}): a race or uninitialised state, not rounding"
    return first


def default_log_path(spec_name: str) -> str:
    os.makedirs(os.path.join(".kladder", "log"), exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(".kladder", "log", f"{spec_name}-{stamp}.jsonl")
