"""Workers for one spec on one device (Pool) and the lanes that run points on them (Lane).

Why warm spares: a worker pays for Python, torch, Triton and the spec's import (about 2 s on a
2-core machine, more with a CUDA context) before its first point. The pool starts the next
worker while the current one runs, so a point that needs a fresh process (A-B-A) or a worker
replaced after a crash finds one ready, forked from the climb's fork server once it serves."""
from __future__ import annotations

import os
import threading

from ..core.errors import WorkerError
from ..core.outcome import Load, Outcome, Wait
from ..core.point import Point
from . import modes, rerun, sampling
from .heapcheck import heap_checked_rerun
from .protocol import Hello
from .timeouts import STARTUP_TIMEOUT_S
from .waits import waiting
from .workers import Worker, worker_env


def child_processes(point: Point, device: str) -> int:
    """How many processes of its own a point's mode starts (about: a flag given as a launcher
    keyword starts none), for the pool to have its fork server ready (Pool.expect_fresh)."""
    return modes.traits(point.mode).children(point, device)


class Pool:
    """Workers for one spec on one device: up to `spares` started ahead of need (`warm`,
    `prefetch`), handed out by `take`, every worker killed by `close` or `kill` (also from
    another thread, on Ctrl-C). Nothing is started that no point will use: on a 2-core machine
    a worker's start costs a core for two seconds."""

    def __init__(self, ref: str, device: str, spares: int = 1, gpus: list[str] | None = None, server=None,
                 reserve: int = 0):
        self.ref, self.device, self.spares = ref, device, spares
        # `reserve`: spares kept started beyond the lanes' for a need no rung foretells (a rung's
        # first failure run alone in a fresh worker, a point re-run alone under load): on an H100
        # liger's RoPE waited 18.5 s for such a worker's start (torch, the spec's imports, its CUDA
        # context on a busy host), every lane held back behind it (docs/results/2026-12-07-h100-sixth)
        self.reserve = reserve
        self.gpus = gpus or [None]
        self._spare: list[Worker] = []
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._next_gpu = 0
        self.closed = False
        self.restarts = 0
        self.hello: dict = {}           # the first worker's hello (protocol.Hello.facts)
        self._fresh_left = 0             # fresh-process points still to come in this rung
        self._fresh_lanes = 1
        # `server`: one that several climbs share (the climbs of many specs, many.py; the zoo's,
        # zoo_run.py; KLADDER_FORKSERVER=SOCKET, one another process started: the test suite's,
        # tests/conftest.py), started by its owner and closed by it, never by this pool; every
        # worker and mode process forked from it. KLADDER_FORKSERVER is read here, once: the one
        # setting another process (the test suite, a user) hands a climb's pool across the process
        # boundary (a socket, 0: none, always: every worker forked)
        self._setting = os.environ.get("KLADDER_FORKSERVER", "")
        if server is None and self._setting.startswith("/"):
            from .forkclient import Attached
            server = Attached(self._setting)
        self.server = server             # the fork server (run/forkserver.py): from a climb's start, or once a rung needs new processes
        self._own_server = server is None   # one given is not this pool's to close
        self.waits = None                # run/waits.Waits: what the lanes wait for (set by the climb's runner)
        if self._setting == "always":    # every worker forked (tests)
            self.start_server()

    def _start(self) -> Worker:
        gpu = self.gpus[self._next_gpu % len(self.gpus)]
        self._next_gpu += 1
        w = Worker(self.ref, self.device, gpu, server=self.server if self.server_address() else None)
        self._all.append(w)
        return w

    def _starting(self) -> bool:
        """The fork server is on its way: a worker started now would import torch beside it."""
        s = self.server
        return s is not None and not s.ready() and getattr(s, "proc", None) is not None and s.proc.poll() is None

    def start_server(self) -> None:
        """Start the fork server (once, in the background): fresh workers and the modes' own
        processes are forked from it once it is ready, started afresh until then and wherever it
        cannot serve (run/forkserver.py). On by default: a climb of rungs from 4 on starts it at its
        start, before any worker (session.climb_options: its workers fork from it too), any other
        when a rung needs new processes;
        KLADDER_FORKSERVER=always starts it with the pool, every worker forked (tests); =0, every
        process is fresh. (Opt-in until 2026-12-06: a SIGKILLed climb's server outlived it while
        still importing torch, fixed by its lifeline thread; the whole suite then passed with it on,
        19:47 against 22:27 off, docs/results/2026-12-06-cpu-suite.)"""
        if (self.server is not None or self.closed or os.name != "posix"
                or self._setting == "0"):
            return
        from .forkclient import Server
        try:
            self.server = Server(worker_env(self.device), label=self.ref)
        except OSError:
            self.server = None

    def plain(self, gpu: str | None) -> Worker:
        """A worker started afresh, never forked (its server died under the one before it)."""
        w = Worker(self.ref, self.device, gpu)
        with self._lock:
            self._all.append(w)
        return w

    def server_address(self, wait: bool = False) -> str | None:
        """The fork server's socket once it serves, else None; with `wait`, a server still
        starting is waited for."""
        s = self.server
        return s.address if s is not None and s.ready(STARTUP_TIMEOUT_S if wait else 0.0) else None

    def warm(self, n: int = 1) -> None:
        """Start `n` workers now (the CLI calls this first, so they import torch and the spec
        while this process does the same)."""
        self.prefetch(n)

    def expect_fresh(self, n: int, lanes: int, children: int = 0) -> None:
        """`n` points of the rung to come each need a fresh worker, `lanes` at a time: keep that
        many started ahead, so that none waits for a worker's start. With those, or `children`
        processes of the modes' own to come (child_processes), the fork server starts."""
        if n or children:
            self.start_server()
        self._fresh_left, self._fresh_lanes = n, lanes
        self.prefetch(min(n, lanes))

    def prefetch(self, n: int) -> None:
        """Have `n` spares started (at most `spares`, and the reserve), for points known to come."""
        with self._lock:
            if self._starting():              # forked at need once it serves (a fork costs a fraction of a start)
                return
            while not self.closed and len(self._spare) < min(n, max(self.spares, 1) + self.reserve):
                self._spare.append(self._start())

    def take(self, fresh: bool = False) -> Worker:
        """A ready worker: a spare if one is started, else a new one. Taking one for a fresh
        point starts the next fresh point's worker. With no spare and the fork server on its
        way, it is waited for (outside the lock: a Ctrl-C's kill is not held up): it started
        before any worker that would be started now."""
        with waiting(self.waits, Wait.FORK_SERVER):      # said only where it took 0.1 s or more (run/waits.py)
            if not self._spare and self._starting():
                self.server_address(wait=True)
        with self._lock:
            if self.closed:
                raise WorkerError("the climb is shutting down")
            w = self._spare.pop(0) if self._spare else self._start()
            want = 0
            if fresh:
                self._fresh_left = max(0, self._fresh_left - 1)
                want = min(self._fresh_left, self._fresh_lanes, max(self.spares, 1))
            want = 0 if self._starting() else max(want, self.reserve)
            while len(self._spare) < want:
                self._spare.append(self._start())
        hello, w = self._ready(w)
        self.hello = self.hello or hello.facts()
        return w

    def _ready(self, w: Worker) -> tuple[Hello, Worker]:
        """The worker's hello; where the device refused its context (another process holds the
        memory), a new worker every few seconds for devicestart.DEVICE_RETRY_S, then
        DeviceStartError with the device's state. The wait is said (run/waits.py): for a
        worker's start, or for the device once it refused."""
        from .devicestart import DeviceStartError, retrying
        box = [w]
        with waiting(self.waits if w._hello is None else None, Wait.WORKER) as wait:
            def attempt() -> Hello:
                try:
                    return box[0].ready()
                except DeviceStartError:
                    if wait is not None:
                        wait.wait = Wait.DEVICE
                    self.retire(box[0])
                    with self._lock:
                        if self.closed:
                            raise WorkerError("the climb is shutting down") from None
                        box[0] = self._start()
                    raise
            hello = retrying("starting a worker's CUDA context", attempt, w.gpu, stop=lambda: self.closed,
                             errors=(DeviceStartError,))
        return hello, box[0]

    def retire(self, w: Worker) -> None:
        w.close()
        with self._lock:
            if w in self._all:
                self._all.remove(w)

    def free_bytes(self) -> int | None:
        """The device's free memory as the first worker saw it at its start."""
        if not self.hello:
            self.give_back(self.take())
        return self.hello.get("free_bytes")

    def pids(self) -> list[int]:
        """The process ids of the climb's live workers (spares included)."""
        with self._lock:
            return [w.proc.pid for w in self._all if w.proc.poll() is None]

    def lane(self) -> "Lane":
        """A new lane on this pool (run/ray_lanes.RayPool gives lanes on Ray actors instead)."""
        return Lane(self)

    @property
    def spares_started(self) -> int:
        """Workers started and not yet handed out."""
        with self._lock:
            return len(self._spare)

    def give_back(self, w: Worker) -> None:
        """A worker that ran nothing goes back to the spares."""
        with self._lock:
            self._spare.insert(0, w)

    @property
    def device_name(self) -> str:
        return self.hello.get("device_name", "")

    @property
    def fingerprint(self) -> dict:
        """The environment as the first worker saw it (kladder.core.fingerprint), or {} before one started."""
        return self.hello.get("fingerprint") or {}

    def close(self) -> None:
        with self._lock:
            self.closed = True
            workers, self._all, self._spare = list(self._all), [], []
        for w in workers:
            w.close()
        self._stop_server()

    def _stop_server(self) -> None:
        server, self.server = self.server, None
        if server is not None and self._own_server:
            server.close()

    def kill(self) -> None:
        """Kill every worker at once (Ctrl-C): their blocked reads return, their points are dropped."""
        with self._lock:
            self.closed = True
            workers = list(self._all)
        for w in workers:
            w.kill()
        self._stop_server()


class Lane:
    """One point at a time on one worker, kept between points and replaced when it dies;
    a fresh point runs alone in a worker of its own."""

    def __init__(self, pool: Pool):
        self.pool = pool
        self.worker: Worker | None = None
        self.load = Load()                   # what else used the host during this lane's last point
        self.peak: dict | None = None        # its last point's peak memory (PeakMemory), when the worker answered
        self.gpu: str | None = None          # the CUDA device its last point ran on
        self.ran = 0                          # points the current worker has run

    def run(self, point: Point, timeout_s: float, fresh: bool = False, budget_s: float | None = None) -> Outcome:
        """With `fresh`, the point runs alone in a new worker, which is closed after it: no
        state from earlier calls reaches it, and none of its state reaches later points."""
        from .forkclient import ServerLost
        if fresh:
            w = self.pool.take(fresh=True)
            address = self.pool.server_address()     # asked once a worker is taken: it may wait for the server
            try:
                try:
                    return w.run(point, timeout_s, budget_s, address)[0]
                except ServerLost:           # the fork server died under it: rerun.SERVER_LOST
                    self.pool.retire(w)
                    w = self.pool.plain(w.gpu)
                    return rerun.SERVER_LOST.settle(rerun.Seen(point, lost=True), w.run(point, timeout_s, budget_s)[0])
            finally:
                self.load, self.gpu, self.peak = w.load, w.gpu, w.peak
                self.pool.retire(w)
        if self.worker is None:
            self.worker = self.pool.take()
            self.ran = 0
        address = self.pool.server_address()
        try:
            outcome, alive = self.worker.run(point, timeout_s, budget_s, address)
        except ServerLost:                   # rerun.SERVER_LOST: again in a worker started afresh
            self.pool.retire(self.worker)
            self.worker = self.pool.plain(self.worker.gpu)
            self.ran = 0
            again, alive = self.worker.run(point, timeout_s, budget_s)
            outcome = rerun.SERVER_LOST.settle(rerun.Seen(point, lost=True), again)
        self.load, self.gpu, self.peak = self.worker.load, self.worker.gpu, self.worker.peak
        self.ran += 1
        if not alive:
            self.pool.retire(self.worker)
            self.worker = None
            self.pool.restarts += 1
            seen = rerun.Seen(point, outcome, alive=False, earlier=self.ran - 1)
            if rerun.HEAP_CHECK.when(seen):
                outcome = heap_checked_rerun(self.pool, seen, timeout_s)
        return outcome

    def device_load(self) -> dict:
        """Other processes on this lane's CUDA device and their memory, now (device_load)."""
        return sampling.device_load(self.gpu, self.pool.pids())

    def close(self) -> None:
        if self.worker is not None:
            self.pool.retire(self.worker)
            self.worker = None

