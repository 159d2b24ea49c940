"""Climb the ladder: for each rung, generate its points, run each in an isolated worker,
record every outcome as it arrives. The top level reads as a list of rungs.

`Runner.run(point)` runs one point the way a climb does (skipped when it cannot run here,
alone in a fresh worker when its mode is about process state, replayed when it fails, and
re-run alone when it is its rung's first failure); `kladder climb`, `kladder repro` and the
pytest plugin all run points through it."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import errno
import json
import os
import shlex
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ..core.outcome import Load, Note, NoteKind, Outcome, Status, Wait
from ..core.point import Point
from ..core.results import ClimbReport, RungReport
from ..report.jsonout import dumps, end_dict, header_dict, outcome_dict
from ..report.words import device_start_error
from ..run import faults, modes, rerun, sampling, timeline
from ..run.pool import Lane, Pool, child_processes
from ..run.timeouts import stage_budget, worker_timeout
from ..run.waits import Waits, waiting
from ..core.rungs import BY_NUMBER, RUNGS, number
from ..core.sizes import (
    CPU_BUDGET,
    KERNEL_STAGES,
    Peak,
    budget_for,
    elements_of,
    host_need,
    is_big,
    numel_of,
    peak_of,
    total_bytes,
)
from ..core.spec import Spec
from .session import EARLY_FROM, Options, cores, cores_to_spare, resolve_device
from ..version import __version__

MEMORY_HEADROOM = 0.85          # leave room for the reference's rows and the allocator's slack


def repro_command(ref: str, device: str, point: Point) -> str:
    defaults = {"why": "", "config": [], "kind": "edge", "needs": "", "mode": "eager", "partner": []}
    d = {k: v for k, v in point.to_dict().items() if defaults.get(k, object()) != v and k != "why"}
    return f"kladder repro {shlex.quote(ref)} {shlex.quote(json.dumps(d, separators=(',', ':')))} --device {device}"


def skip_note(spec: Spec, point: Point, device: str, free_bytes: int | None, peak: Peak | None = None,
              host: tuple[int, int] | None = None) -> Note | None:
    """Why a point cannot run here, or None. With `peak` (a measured point: sizes.Peak) the
    memory it needs is what runs, scaled to its elements, not its declared tensors alone: the
    kernel's part must fit the device, and what the host will hold must fit `host` (its available
    bytes, and the workers sharing them): skipped with the estimate before any worker dies."""
    if point.mode == "model":
        return None                      # the model sizes its own tensors
    note = range_note(spec, point)
    if note is not None:
        return note
    need = total_bytes(spec, point.sizes, point.dtype_of)
    # a point past every small budget is a GPU point by its sizes, whatever its `needs` says
    if device != "cuda" and (point.needs == "cuda" or is_big(spec, point.sizes)):
        return Note.of(NoteKind.GPU_POINT, need_bytes=need, budget=CPU_BUDGET.text())
    if device == "cuda" and free_bytes is not None and need > MEMORY_HEADROOM * free_bytes:
        return Note.of(NoteKind.NO_DEVICE_MEMORY, need_bytes=need, free_bytes=free_bytes)
    if peak is None or modes.traits(point.mode).measured_elsewhere:
        return None
    # a big point has economies of its own that a small one's peak does not scale to (its inputs
    # hashed, not copied; with rows= its reference on sampled rows): its device need stays its
    # tensors', and with rows= its host need too
    big = is_big(spec, point.sizes)
    kernel = peak.scaled(elements_of(spec, point.sizes), KERNEL_STAGES)
    if device == "cuda" and not big and free_bytes is not None and kernel > MEMORY_HEADROOM * free_bytes:
        return Note.of(NoteKind.NO_DEVICE_MEMORY, need_bytes=kernel, free_bytes=free_bytes, measured=peak.point,
                       measured_bytes=peak.bytes)
    held = host_need(peak, spec, point.sizes, device, free_bytes)
    if host is not None and not (big and spec.row_dims) and held > MEMORY_HEADROOM * host[0] / max(host[1], 1):
        return Note.of(NoteKind.NO_HOST_MEMORY, need_bytes=held, share_bytes=host[0] // max(host[1], 1),
                       workers=host[1], measured=peak.point, measured_bytes=peak.bytes)
    return None


def range_note(spec: Spec, point: Point) -> Note | None:
    """A value kind that cannot be drawn inside its input's declared range is skipped for that
    input, with the reason (fill.range_problem): a point that tests nothing is never run."""
    from ..gen.fill import range_problem
    from ..core.notation import ValueKind
    from ..core.sizes import dtype_of
    for name, kind in point.kinds.items():
        if name not in spec.all_tensors or not isinstance(kind, ValueKind):
            continue                     # a padding fill, or an upstream gradient's kind
        rng = spec.range_of(name, point.sizes)
        why = range_problem(kind, dtype_of(spec, name, point.dtype_of), rng)
        if why is not None:
            return Note.of(NoteKind.VALUE_OUT_OF_RANGE, arg=name, value=kind.format(), lo=float(rng[0]),
                           hi=float(rng[1]), why=why)
    return None


def fresh_process(point: Point) -> bool:
    """A point that runs first in a new worker (its mode's base.Mode.starts_fresh: A-B-A, and rung
    5's stream of calls where the spec declares how the model calls a launcher with state)."""
    return modes.traits(point.mode).starts_fresh(point)
# A second lane is worth its worker's start (about 2 s on a 2-core machine) only when there is
# work to share: a lane per this many points, up to --jobs.
POINTS_PER_LANE = 4
# Points that take longest start first (their mode's start_order: compute-sanitizer's child, whose
# torch starts under the tool in seconds; two processes on a cold and a warm cache; three cache-key
# or flag variants; a fresh worker), so that the rest share the other lanes meanwhile (the results
# still come in the rung's order). A mode whose calls all run in processes of their own, new for
# every point (own_processes: a collective's ranks), is never run again alone in a new worker.
# The points that start processes of their own (a fresh worker; a mode's own processes: the
# jit-cache's cold and warm ones, the cache-key and flag variants, the import tracer, a dispatch
# under environment variables; compute-sanitizer's child) spend most of their time starting
# Python, torch and the spec, not calling the kernel: they start at the climb's start on lanes of
# their own (early_lanes), beside rungs 1-3, each forked warm from the fork server, and their rung
# takes their outcomes in its order when it comes (Runner.start_early). From rung 4 on. On CUDA the
# points of any rung whose calls run under torch's profiler in their worker (profiled) start then
# too, one after another on one lane of their own: the profiler's start (CUPTI, seconds) once a climb.


def own_process(point: Point, device: str) -> bool:
    """The point starts a process of its own (see EARLY_FROM)."""
    return fresh_process(point) or child_processes(point, device) > 0 or modes.traits(point.mode).starts_child


def timed(point: Point) -> bool:
    """The point's calls go on for a time budget (rung 5's repetition and stream of calls:
    base.Mode.runs_for_a_budget), a lane's worth of work by itself."""
    return modes.traits(point.mode).runs_for_a_budget


def profiled(point: Point, device: str) -> bool:
    """The point's calls run under torch's profiler in its worker on this device (base.Mode.profiles_on:
    independence, dispatch and flags on CUDA, where no process of their own runs the calls)."""
    return device in modes.traits(point.mode).profiles_on and not own_process(point, device)


def early_lanes(jobs: int, device: str = "cpu", cores: int | None = None) -> int:
    """Lanes for the early points beside the rungs' own: one, and half the jobs where there are
    more (a GPU's four sanitizer children, its cache-key compiles); on CUDA, where the host has four
    cores a job or more (16 for the default 4 jobs of one GPU), as many as the jobs: the early
    points' work is the host's (starting Python and torch, compiling), and on two lanes their 22-26 s
    of the twin's cold climb were as long as rungs 1-3 (docs/results/2026-12-07-h100-cold)."""
    if cores_to_spare(device, jobs, cores or 0):
        return max(1, jobs)
    return max(1, jobs // 2)


class Runner:
    """Runs points of one spec on one device as a climb runs them: skipped when they cannot
    run here, alone in a fresh worker when their mode is about process state, replayed when
    they fail, and re-run alone when they are their rung's first failure, or when they hung,
    crashed, faulted or ran out of memory while other work used the device or the host (the
    other lanes held back meanwhile). `run` takes one point; `run_all` runs `jobs` at a time,
    on lanes kept from rung to rung, and yields in order."""

    def __init__(self, ref: str, spec: Spec, device: str, timeout_s: float | None = None, jobs: int = 1,
                 pool: Pool | None = None):
        self.ref, self.spec, self.device = ref, spec, device
        self.timeout_s = timeout_s
        self.jobs = max(1, jobs)
        self.pool = pool or Pool(ref, device, spares=1)
        self.failed_rungs: set[int] = set()
        self.replays = rerun.Replays()        # per rung and check, whether its failures are still replayed
        self._lanes: list[Lane] = []          # every lane made, each with its worker
        self._idle: list[Lane] = []           # lanes no thread is using
        self.failed: list[Point] = []         # points that failed, in the rung order (rung 5 sanitizes the smallest)
        self._lanes_lock = threading.Lock()
        self.waits = Waits()                  # what the lanes wait for (run/waits.py), per rung in the report
        self.pool.waits = self.waits
        self._gate = Gate(self.waits)         # lanes run under a shared hold; a point re-run alone holds it whole
        self._running: list[list[int]] = []   # per point in flight: [the most other lanes seen busy meanwhile]
        self.peak: Peak | None = None         # the spec's measured point (sizes.Peak): sizes the points after it
        self._early: dict[Point, Any] = {}    # points started ahead of their rung (start_early) -> their future
        self._early_ex: ThreadPoolExecutor | None = None
        self._profiling_ex: ThreadPoolExecutor | None = None   # the profiled points' one lane (profiled)
        self._profiling_lane: Lane | None = None
        self._pin = threading.local()         # .lane: the lane this thread's points run on (the profiling one)

    @property
    def device_name(self) -> str:
        return self.pool.device_name

    @property
    def fingerprint(self) -> dict:
        """The environment the points ran in, as a worker saw it; where no worker started
        (every point skipped, or reused from the outcome store), as this process sees it: the
        CPU's name on the CPU, no device's details on CUDA."""
        from ..core.fingerprint import fingerprint, source_file
        return self.pool.fingerprint or fingerprint(source_file(self.ref), "cpu" if self.device == "cpu" else None)

    def run(self, point: Point) -> Outcome:
        return self._finish(self._first(point))

    def run_all(self, points, started: Callable[[Point], None] | None = None) -> Iterator[Outcome]:
        """Every point, `jobs` at a time, yielded in the order given; a point started early
        (start_early) is not run again, its outcome taken when its turn comes. A big point on a
        GPU runs alone: two of them side by side run the device out of memory and say nothing."""
        points = list(points)
        early = {p: self._early.pop(p) for p in points if p in self._early}
        rest = [p for p in points if p not in early]
        # a lane per POINTS_PER_LANE points, and one per point that runs for a time budget (rung 5's)
        # while there are workers started already (the lanes made, the pool's spares: on CUDA --jobs of
        # them from the climb's start): the twin's eight 1-2 s rung-5 points ran on two of four H100
        # workers in 7.3-8.6 s, on four in 4.8-6.4 s (docs/results/2026-12-07-h100-cold). Not for
        # every rung: rung 7's two dispatch points spread over workers that had not yet profiled took
        # 5.0-8.4 s each (the profiler's first start), 0.01 s on the one lane
        lanes = min(self.jobs, max(1, len(rest) // POINTS_PER_LANE, min(sum(map(timed, rest)), self._started())))
        fresh, children = sum(fresh_process(p) for p in rest), sum(child_processes(p, self.device) for p in rest)
        if fresh or children or not (early or self._early):   # else the early points' own expectation stands
            self.pool.expect_fresh(fresh, lanes, children=children)
        if lanes == 1:
            for p in points:
                if started:
                    started(p)
                yield self._finish(_result(early[p])) if p in early else self.run(p)
            return
        ex = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="kladder-lane")
        try:
            for batch in _batches(points, self.device):
                order = sorted((i for i, p in enumerate(batch) if p not in early),
                               key=lambda i: (modes.traits(batch[i].mode).start_order, i))
                futures = {i: ex.submit(self._first, batch[i]) for i in order}
                for i, p in enumerate(batch):
                    if started:
                        started(p)
                    yield self._finish(_result(early[p] if p in early else futures[i]))
        finally:
            ex.shutdown(wait=False, cancel_futures=True)

    def start_early(self, points) -> None:
        """Start these points now, longest first, on lanes of their own (early_lanes), each run
        as `run` runs it (skipped, fresh, replayed when it fails); run_all takes each outcome in
        its rung's order, where the rung's first failure is re-run alone as any other's. With
        --jobs 1 nothing starts early: one point at a time, as asked."""
        points = [p for p in dict.fromkeys(points) if p not in self._early]
        if not points or self.jobs < 2:          # -j 1: one point at a time, as asked
            return
        watched = [p for p in points if profiled(p, self.device)]
        points = [p for p in points if not profiled(p, self.device)]
        if watched:                               # one after another, in rung order, on one worker: its profiler starts once
            if self._profiling_ex is None:
                self._profiling_ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kladder-profiling")
            for p in sorted(watched, key=lambda q: q.rung):
                self._early[p] = self._profiling_ex.submit(self._pinned, p)
        if not points:
            return
        lanes = early_lanes(self.jobs, self.device, cores())
        self.pool.expect_fresh(sum(fresh_process(p) for p in points), lanes,
                               children=sum(child_processes(p, self.device) for p in points))
        if self._early_ex is None:
            self._early_ex = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="kladder-early")
        for p in sorted(points, key=lambda q: modes.traits(q.mode).start_order):
            self._early[p] = self._early_ex.submit(self._first, p)

    def _pinned(self, point: Point) -> Outcome:
        """`_first` on the profiling lane: one worker for every profiled point (made at its first)."""
        with self._lanes_lock:
            if self._profiling_lane is None:
                self._profiling_lane = self.pool.lane()
                self._lanes.append(self._profiling_lane)
        self._pin.lane = self._profiling_lane
        try:
            return self._first(point)
        finally:
            self._pin.lane = None

    def _started(self) -> int:
        """Workers started for this climb's points: its lanes, and the pool's spares."""
        with self._lanes_lock:
            made = len(self._lanes)
        return made + getattr(self.pool, "spares_started", 0)

    def _checkout(self) -> Lane:
        pinned = getattr(self._pin, "lane", None)
        if pinned is not None:                   # the profiling lane: this thread's alone, never idle
            return pinned
        with self._lanes_lock:
            if self._idle:
                return self._idle.pop()
            lane = self.pool.lane()          # a local lane, or one on a Ray actor (run/ray_lanes.py)
            self._lanes.append(lane)
            return lane

    def _checkin(self, lane: Lane) -> None:
        if lane is self._profiling_lane:
            return
        with self._lanes_lock:
            self._idle.append(lane)

    def _on_lane(self, point: Point, timeout: float, fresh: bool, alone: bool = False,
                 wait_memory: bool = False) -> tuple[Outcome, Load]:
        """One run of the point on a lane, and what else used the device or the host meanwhile.
        `alone`: no other lane runs a point meanwhile (those in flight are waited for); with
        `wait_memory`, and then for others' memory to free (bounded: faults.MEMORY_WAIT_S); a big
        point on a GPU always runs alone (the early lanes' points are held back too: _batches keeps
        the rung's own apart)."""
        alone = alone or (self.device == "cuda" and point.kind == "big")
        asked = timeline.now() if timeline.on() else 0.0
        with self.waits.point(point), self._gate.alone() if alone else self._gate.shared():
            lane = self._checkout()
            seen = self._began()
            got = timeline.now() if asked else 0.0
            try:
                waited = self._wait_memory(lane) if wait_memory else None
                outcome = lane.run(point, timeout, fresh=fresh, budget_s=stage_budget(self.spec, self.device, point,
                                                                                      self.timeout_s))
                load = lane.load                   # read before another thread takes the lane
                self._measured(point, outcome, getattr(lane, "peak", None))
                # asked after the fact: another climb's processes and memory are still there; the
                # failed worker's are gone
                held = lane.device_load() if faults.load_sensitive(outcome) and self.device == "cuda" else {}
            finally:
                self._ended(seen)
                if asked:
                    timeline.mark("run", point=point.id, rung=point.rung, mode=point.mode, lane=id(lane),
                                  worker=_pid(lane), fresh=fresh, alone=alone,
                                  asked=asked, got=got, ended=timeline.now())
                self._checkin(lane)
        if outcome.note is not None and outcome.note.kind == NoteKind.STAGE_OVERRUN and point.mode != "model":
            outcome.note = dataclasses.replace(outcome.note, facts=dataclasses.replace(
                outcome.note.facts, elements=sum(numel_of(self.spec, n, point.sizes) for n in self.spec.all_tensors)))
        load = dataclasses.replace(load, lanes=seen[0], waited_s=waited, **{k: v for k, v in held.items() if v is not None})
        if outcome.ran_with is None:
            outcome.ran_with = load
        return outcome, load

    def _measured(self, point: Point, outcome: Outcome, stages: dict | None) -> None:
        """The first eager point that passed and is big enough to stand for the others (sizes.peak_of)
        is the spec's measured peak: one a climb, reused."""
        if self.peak is None and outcome.status == Status.PASSED and point.mode == "eager":
            self.peak = peak_of(self.spec, point, stages)

    def _host(self, point: Point) -> tuple[int, int] | None:
        """The host's available memory now and the workers that share it: the lanes, or one for a
        big point on CUDA (it runs alone: _batches)."""
        free = sampling.host_available()
        return None if free is None else (free, 1 if self.device == "cuda" and point.kind == "big" else self.jobs)

    def _wait_memory(self, lane: Lane) -> float:
        """Before a run alone after one that ended for memory: wait until others no longer hold the
        device's memory (CUDA) nor the host's, up to faults.MEMORY_WAIT_S; the seconds waited."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < faults.MEMORY_WAIT_S and faults.memory_held(self._memory_now(lane.gpu)):
            time.sleep(faults.MEMORY_POLL_S)
        return round(time.monotonic() - t0, 1)

    def _memory_now(self, gpu: str | None) -> Load:
        """Who holds memory now: others' on the CUDA device, and the host's when it is full."""
        now = Load(**sampling.device_load(gpu, self.pool.pids())) if self.device == "cuda" else Load()
        used, total = sampling.host_memory()
        if used is not None and used >= sampling.HOST_FULL_SHARE * total:
            now = dataclasses.replace(now, host_used_bytes=used, host_total_bytes=total)
        return now

    def _began(self) -> list[int]:
        with self._lanes_lock:
            seen = [len(self._running)]
            self._running.append(seen)
            for s in self._running:
                s[0] = max(s[0], len(self._running) - 1)
            return seen

    def _ended(self, seen: list[int]) -> None:
        # by identity: list.remove compares by value, and two points in flight may hold equal
        # counts (on the H200, four lanes: 'list.remove(x): x not in list' ended a climb)
        with self._lanes_lock:
            self._running = [s for s in self._running if s is not seen]

    def _run_once(self, point: Point, timeout: float, fresh: bool) -> Outcome:
        """A run; one that hung, crashed, faulted or ran out of memory while other work used the
        device or the host is re-run alone, in a fresh worker with the other lanes held back,
        before it is reported (run/rerun.py's UNDER_LOAD; run/faults.py under_load says what
        each result becomes)."""
        from ..run.devicestart import DeviceStartError
        rule = rerun.UNDER_LOAD
        outcome, load = self._on_lane(point, timeout, fresh)
        seen = rerun.Seen(point, outcome, load)
        if not rule.when(seen):
            return outcome
        memory = faults.memory_exhausted(outcome, load)
        try:
            alone, alone_load = self._on_lane(point, timeout, rule.fresh, alone=rule.alone, wait_memory=memory)
        except DeviceStartError as e:
            if not memory:
                raise
            # the run alone could not start its worker for lack of device memory: never the kernel's
            alone, alone_load = faults.could_not_start(point, e.error), self._memory_now(e.gpu)
        return rule.settle(seen, alone, alone_load)

    def _first(self, point: Point) -> Outcome:
        """The point's first run, and its replay when it failed (run/rerun.py's REPLAY)."""
        free = self.pool.free_bytes() if self.device == "cuda" else None
        note = skip_note(self.spec, point, self.device, free, self.peak, self._host(point) if self.peak else None)
        if note:
            return Outcome(point, Status.SKIPPED, note=note)
        fresh = fresh_process(point)
        timeout = worker_timeout(self.spec, self.device, point, self.timeout_s)
        outcome = self._run_once(point, timeout, fresh)
        seen = rerun.Seen(point, outcome, settled=self.replays.settled(outcome))
        if not rerun.REPLAY.when(seen):
            return rerun.not_replayed(seen)
        outcome = rerun.REPLAY.settle(seen, self._on_lane(point, timeout, fresh or rerun.REPLAY.fresh)[0])
        self.replays.note(outcome)
        return outcome

    def _finish(self, outcome: Outcome) -> Outcome:
        """In order: the rung's first failure is re-run alone (run/rerun.py's FIRST_FAILURE); the
        repro command is attached."""
        point = outcome.point
        rule, seen = rerun.FIRST_FAILURE, rerun.Seen(point, outcome, rung_failed=point.rung in self.failed_rungs)
        if rule.when(seen):
            from ..run.devicestart import DeviceStartError
            # no worker could start beside others' memory: the failure seen twice stands as seen
            with contextlib.suppress(DeviceStartError):
                timeout = worker_timeout(self.spec, self.device, point, self.timeout_s)
                outcome = rule.settle(seen, self._on_lane(point, timeout, rule.fresh, alone=rule.alone)[0])
        if outcome.status == Status.FAILED:
            self.failed_rungs.add(point.rung)
            self.failed.append(point)
        outcome.repro = repro_command(self.ref, self.device, point)
        return outcome

    def kill(self) -> None:
        """Ctrl-C: every worker killed at once, so no lane waits out a point."""
        self.pool.kill()

    def close(self) -> None:
        for ex in (self._early_ex, self._profiling_ex):   # points started early for rungs the climb never reached
            if ex is not None:
                ex.shutdown(wait=False, cancel_futures=True)
        with self._lanes_lock:
            lanes, self._lanes = list(self._lanes), []
        for lane in lanes:
            lane.close()
        self.pool.close()


class Gate:
    """Lanes run points under a shared hold; a point re-run alone takes the gate whole: it waits
    for the points in flight, and no lane starts another until it is done."""

    def __init__(self, waits: Waits | None = None):
        self._cond = threading.Condition()
        self._shared = 0
        self._whole = False
        self._waiting = 0                      # runs waiting to be alone: no new shared hold meanwhile
        self.waits = waits                     # where the waits are said (run/waits.py)

    @contextmanager
    def shared(self):
        with self._cond:
            if self._whole or self._waiting:
                with waiting(self.waits, Wait.HELD):
                    while self._whole or self._waiting:
                        self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self):
        with self._cond:
            self._waiting += 1
            if self._whole or self._shared:
                with waiting(self.waits, Wait.IN_FLIGHT):
                    while self._whole or self._shared:
                        self._cond.wait()
            self._waiting -= 1
            self._whole = True
        try:
            yield
        finally:
            with self._cond:
                self._whole = False
                self._cond.notify_all()


def _batches(points: list[Point], device: str) -> Iterator[list[Point]]:
    """The points in runs that may share the device: on CUDA a big point is a run of its own."""
    batch: list[Point] = []
    for p in points:
        if device == "cuda" and p.kind == "big":
            if batch:
                yield batch
            yield [p]
            batch = []
        else:
            batch.append(p)
    if batch:
        yield batch


def _pid(lane) -> int | None:
    """The process id of the lane's worker now (None: a fresh point's, already closed)."""
    return getattr(getattr(getattr(lane, "worker", None), "proc", None), "pid", None)


def _result(future):
    """A lane's outcome; waits in short steps so that Ctrl-C reaches the main thread at once (and
    one whose KeyboardInterrupt was swallowed on its way stops the climb all the same)."""
    from ..core.interrupts import check_current
    while True:
        try:
            return future.result(timeout=0.25)
        except FutureTimeout:
            check_current()


def rung_points(spec: Spec, rung: int, budget, seed: int = 0, replay: str | None = None, **extra):
    """The points a climb runs at `rung`, in order, each seed shifted by `seed`: `kladder points`
    lists exactly these (rung 5's sanitizer runs on earlier failures aside: `extra["failed"]`,
    points already shifted, whose seeds the points made from them keep)."""
    if rung == 2 and replay:
        extra["replay"] = replay
    kept = {p.seed for p in extra.get("failed", ())}
    for point in BY_NUMBER[rung].points(spec, budget, **extra):
        yield point if point.seed in kept else point.shifted(seed)


def climb(ref: str, spec: Spec, opts: Options, report: ClimbReport | None = None) -> ClimbReport:
    """Climb `spec` and return its report, whatever happens: a Ctrl-C at any moment (see
    interrupts.py), or a worker that cannot start on a device others hold (report.start_error),
    ends the climb with the points so far, the log closed with its end record. The CLI passes
    the `report` it made at its start, so that it has one to write even if the climb never ran."""
    from ..run.devicestart import DeviceStartError
    from ..core.interrupts import Interrupts
    guard, owned = Interrupts.current()
    # on a Ray cluster the device is the workers', chosen from the cluster's resources (run/ray_lanes.py)
    device = opts.device if opts.ray and opts.device in ("cpu", "cuda") else resolve_device(opts.device)
    budget = budget_for(device)
    report = report or ClimbReport(spec.name, ref, device)
    report.spec, report.ref, report.device = spec.name, ref, device
    report.started = report.started or _dt.datetime.now().isoformat(timespec="seconds")
    report.kladder_version = __version__
    t0 = time.perf_counter()
    timeline.mark("climb", at=timeline.now(), spec=spec.name, device=device, jobs=opts.jobs)
    runner = Runner(ref, spec, device, opts.timeout_s, jobs=opts.jobs, pool=opts.pool)
    if opts.progress is not None and hasattr(opts.progress, "watch"):
        opts.progress.watch(runner.waits)
    slicer = _slicer(opts, spec, device)
    reuse = opts.store.climbing(ref, spec, device, runner, report.run_id, opts.timeout_s) if opts.store else None
    log = None
    try:
        try:
            if opts.log_path:
                with guard.held():            # the log is made with its header record, never empty
                    log = Log(opts.log_path, report, opts)
                    report.log_path = opts.log_path if log.working else ""
            plan_rungs(report, opts.rungs)
            early = early_points(spec, budget, report, runner, opts)
            if reuse is not None and early:           # none started for a point the store gives
                given = reuse.given(early)
                early = [p for p in early if p not in given]
            runner.start_early(early)
            for rr in report.rungs:
                guard.check()             # a signal whose KeyboardInterrupt was swallowed stops the climb here
                if rr.climbed and report.stopped_at is not None:
                    rr.climbed, rr.stopped = False, True          # -x: stopped at an earlier rung's failure
                elif rr.climbed:
                    _climb_rung(rr, spec, budget, runner, report, log, opts, slicer, reuse)
                    if opts.exitfirst and rr.failed:
                        report.stopped_at = rr.rung
            guard.check()
            if opts.shrink_s > 0 and report.failures:
                _shrink(report, runner, opts)
        finally:
            guard.defer()             # from here on a Ctrl-C only marks the report: the close is never torn
    except KeyboardInterrupt:
        report.interrupted = True
        runner.kill()
    except DeviceStartError as e:
        report.start_error = device_start_error(e.facts)
        runner.kill()
    finally:
        report.fingerprint = runner.fingerprint
        if reuse is not None:
            report.reuse = reuse.facts()
        if slicer is not None:
            from .shard import options_record
            report.shard = slicer.record(options_record(opts))
        runner.close()
        report.seconds = time.perf_counter() - t0
        end_climb(report, opts.rungs, guard.seen)
        report.budget = _budget_summary(report, opts)
        if opts.on_end is not None:
            opts.on_end(report)
        if log:
            log.close(report)
        if opts.progress:
            opts.progress.stop()
        if owned:
            guard.restore()
    return report


def _budget_summary(report: ClimbReport, opts: Options):
    """Which time budget ran, and what the longer one would add at rung 5 (budgets.summary)."""
    from ..core.budgets import summary
    rung5 = next((rr for rr in report.rungs if rr.rung == number("repetition")), None)
    if rung5 is None or not rung5.climbed:
        return None
    return summary(opts.budget, report.device, rung5.outcomes, overridden=opts.repeat is not None or opts.repeat_s is not None)


def _shrink(report: ClimbReport, runner: Runner, opts: Options) -> None:
    """The smallest failing point of each rung's first failure, on the climb's own workers
    (kladder.climbing.shrink), after every rung has run: the candidates are runs of kladder's, not
    points of the climb (no verdict, no log record)."""
    from .shrink import shrink_failures
    if opts.progress:
        opts.progress.stage(f"shrinking the failures (up to {opts.shrink_s:g} s)")
    report.shrunk = shrink_failures(report, runner, lambda p: repro_command(report.ref, report.device, p), opts.shrink_s)


def plan_rungs(report: ClimbReport, rungs: tuple[int, ...]) -> None:
    """Every rung of the ladder in the report, those asked for and built to be climbed."""
    if report.rungs:
        return
    for rung in RUNGS:
        climbed = rung.number in rungs and rung.built
        note = "" if climbed else "not built yet" if not rung.built else "not asked for (--rungs)"
        report.rungs.append(RungReport(rung.number, rung.title, climbed=climbed, note=note))


def end_climb(report: ClimbReport, rungs: tuple[int, ...], interrupted: bool) -> None:
    """The report's last facts: interrupted when a SIGINT came at any moment (also while the
    workers closed); each rung asked for that never started says why."""
    plan_rungs(report, rungs)
    report.interrupted = report.interrupted or interrupted
    why = ("not climbed (interrupted)" if report.interrupted and not report.start_error
           else "not climbed (the climb could not start)")
    for rr in report.rungs:
        if rr.climbed and not rr.outcomes and not rr.seconds and (report.interrupted or report.start_error):
            rr.climbed, rr.note = False, why


def _slicer(opts: Options, spec: Spec, device: str):
    if opts.shard is None:
        return None
    from .shard import Slicer, history_costs
    return Slicer(opts.shard, spec, history_costs(opts.history, spec.name, device))


def _climb_rung(rr: RungReport, spec, budget, runner: Runner, report, log, opts: Options, slicer=None, reuse=None):
    from ..core.interrupts import check_current
    t0 = time.perf_counter()
    timeline.mark("rung", rung=rr.rung, at=timeline.now())
    extra = _rung_options(rr.rung, opts, runner)
    points = list(rung_points(spec, rr.rung, budget, opts.seed, **extra))
    if slicer is not None:
        points = _shard_points(slicer, rr.rung, points, spec, budget, opts, extra)
    if opts.first:                            # --lf: last time's failures first
        points.sort(key=lambda p: p.id not in opts.first)
    rr.planned = len(points)
    progress = opts.progress
    if progress:
        progress.rung_started(rr, len(points))
    started = progress.point_started if progress else None
    outcomes = (reuse.outcomes(points, lambda pts: runner.run_all(pts, started=started), started,
                               lambda p: repro_command(runner.ref, runner.device, p))
                if reuse is not None else runner.run_all(points, started=started))
    try:
        for outcome in outcomes:
            report.device_name = runner.device_name or report.device_name
            rr.outcomes.append(outcome)
            if log:
                log.point(outcome)
            if progress:
                progress.point_done(outcome)
            if opts.on_outcome:
                opts.on_outcome(outcome)
            check_current()                  # between points: a swallowed signal stops the rung here
    except KeyboardInterrupt:
        rr.interrupted = True
        raise
    finally:
        rr.seconds = time.perf_counter() - t0
        timeline.mark("rung_end", rung=rr.rung, at=timeline.now(), points=len(rr.outcomes))
        rr.waits = runner.waits.of_rung(rr.rung)
        if progress:
            progress.rung_done(rr)


def early_points(spec, budget, report: ClimbReport, runner: Runner, opts: Options) -> list[Point]:
    """The points of the rungs to climb, from EARLY_FROM on, that start processes of their own
    (own_process), and those of any rung whose calls run under the profiler in their worker
    (profiled: on CUDA, one lane of their own), as their rungs will generate them (rung
    5's from no earlier failure: its sanitizer runs on a failure start with their rung). None with
    --shard (its deal is made rung by rung, in order)."""
    if opts.shard is not None:
        return []
    device = runner.device
    found = []
    for rr in report.rungs:
        own = rr.rung >= EARLY_FROM
        if not rr.climbed or not (own or any(device in modes.traits(m).profiles_on for m in modes.of_rung(rr.rung))):
            continue
        extra = _rung_options(rr.rung, opts, runner)
        try:
            found += [p for p in rung_points(spec, rr.rung, budget, opts.seed, **extra)
                      if (own and own_process(p, device)) or profiled(p, device)]
        except Exception:  # noqa: BLE001 - a rung whose points cannot be made says so when its turn comes, as before
            continue
    return found


def _shard_points(slicer, rung: int, points: list[Point], spec, budget, opts: Options, extra: dict) -> list[Point]:
    """The shard's slice of a rung's points (shard.py says how they are dealt). Points made from
    earlier failures (rung 5's sanitizer runs) are this shard's own, never dealt: the other
    shards' failures are not known here."""
    if not extra.get("failed"):
        return slicer.take(rung, points)
    base = list(rung_points(spec, rung, budget, opts.seed, **{**extra, "failed": ()}))
    known = set(base)
    return slicer.take(rung, base, [p for p in points if p not in known])


def _rung_options(rung: int, opts: Options, runner: Runner) -> dict:
    """What a rung's generator takes from the climb beyond the spec and the budget: rung 2 the
    captured calls to replay; rung 5 the repetition budget and the points that failed below it."""
    if rung == 2 and opts.replay:
        return {"replay": opts.replay}
    if rung == 5:
        return {"repeat": opts.repeat, "repeat_s": opts.repeat_s, "failed": tuple(runner.failed),
                "time_budget": opts.budget}
    return {}


class Log:
    """The JSON-lines log: a header record (spec, options, device), one record per point as it
    arrives, and a closing record, so that a reader tells a finished climb from a killed one.
    Every record carries the climb's run id (climbs may share a --log file). Each record is one
    write(2) of one whole line on a file opened O_APPEND: a reader, or a climb killed at any
    moment, never sees a torn record, and two climbs appending to one file never interleave.

    The log never ends a climb: a write that fails (a full disk) takes back the part of its line
    that reached the file, says so once on stderr and stops the log there, and the climb goes on
    to its report; a log that could not take even its header is removed (never a 0-byte file)."""

    def __init__(self, path: str, report: ClimbReport, opts: Options):
        from ..core.fingerprint import fingerprint, source_file
        self.path, self.run_id = path, report.run_id
        self.fd: int | None = None
        self.records = 0
        self.created = False
        header = {"record": "header", **header_dict(report, opts, fingerprint(source_file(report.ref), None))}
        try:
            self.fd, self.created = _open_log(path)
        except OSError as e:
            self._stop(e)
            return
        self._write(header)

    @property
    def working(self) -> bool:
        return self.fd is not None

    def point(self, outcome: Outcome) -> None:
        self._write({"record": "point", "run_id": self.run_id, **outcome_dict(outcome)})

    def close(self, report: ClimbReport) -> None:
        if self.fd is None:
            return
        self._write({"record": "end", **end_dict(report)})
        if self.fd is None:
            return
        with contextlib.suppress(OSError):           # not a file that syncs (/dev/null, a pipe): written all the same
            os.fsync(self.fd)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None

    def _write(self, record: dict) -> None:
        if self.fd is None:
            return
        try:
            _append(self.fd, (dumps(record) + "\n").encode())
        except OSError as e:
            self._stop(e)
            return
        self.records += 1

    def _stop(self, e: OSError) -> None:
        """The log stops here, said once; a file this climb made and could not write a byte to is removed."""
        fd, self.fd = self.fd, None
        empty = False
        if fd is not None:
            with contextlib.suppress(OSError):
                empty = self.created and os.fstat(fd).st_size == 0
            with contextlib.suppress(OSError):
                os.close(fd)
        if empty:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        what = "was removed (empty)" if empty else f"keeps its first {self.records} whole records" if self.records else \
            "was not made"
        print(f"kladder: warning: the log {self.path!r} could not be written ({e.strerror or e}); it {what} and stops "
              "here, the climb goes on (its report holds every point)", file=sys.stderr, flush=True)


def _open_log(path: str) -> tuple[int, bool]:
    """The log's file for appending, and whether this call made it (so that a log that never took
    a line can be removed without removing another climb's file, or /dev/full)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        return os.open(path, flags | os.O_EXCL, 0o666), True
    except FileExistsError:
        return os.open(path, flags, 0o666), False


def _append(fd: int, line: bytes) -> None:
    """One line at the end of the file in one write(2) (O_APPEND puts it whole at the end); a
    short write (a disk that fills) is finished in order, and a write that fails then takes back
    the part that landed, so the file holds whole lines only."""
    done = os.write(fd, line)
    while done < len(line):
        try:
            n = os.write(fd, line[done:])
            if n == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError:
            _take_back(fd, done)
            raise
        done += n


def _take_back(fd: int, landed: int) -> None:
    """Truncate the `landed` bytes of a torn line, where they are still the file's last bytes
    (another climb appending to the same file since then: left as it is, its lines whole)."""
    with contextlib.suppress(OSError):
        end = os.lseek(fd, 0, os.SEEK_CUR)         # after an O_APPEND write: the end of what it wrote
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_size == end and end >= landed:
            os.ftruncate(fd, end - landed)
