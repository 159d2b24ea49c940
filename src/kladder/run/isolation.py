"""Worker processes: points run in a child process, so a kernel that segfaults, hangs or
faults the device costs one point, not the climb.

Why a process and not a thread: after an illegal memory access every later CUDA call in
that process fails, so the worker that saw it is replaced, never reused. A hang is only
visible from outside: the parent owns the timeout and kills the worker's whole process
group (Triton's compiler and the interpreter may have children of their own).

Why warm spares: a worker pays for Python, torch, Triton and the spec's import (about 2 s on a
2-core machine, more with a CUDA context) before its first point. The pool starts the next
worker while the current one runs, so a point that needs a fresh process (A-B-A) or a worker
replaced after a crash finds one ready. Workers never outlive the climb: each asks the kernel
to kill it when its parent dies (Linux), and the pool kills whole process groups.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ..core.errors import WorkerError
from ..core.outcome import Load, Outcome, Stage, Wait
from ..core.point import Point
from . import faults, modes
from .reaper import end_descendants
from .waits import waiting

STARTUP_TIMEOUT_S = 600.0
DEFAULT_TIMEOUT_S = {"cpu": 120.0, "cuda": 120.0}
OUTPUT_KEPT = 4000              # characters of a point's stdout/stderr kept with its outcome


# A model point runs the whole model (prefill and decode, thousands of kernel calls): on a
# loaded 2-core machine the interpreter needed more than 120 s for one, and a correct kernel
# was reported as a hang. Its timeout is this many times a point's.
MODEL_TIMEOUT_FACTOR = 5


def point_timeout(spec, device: str, given: float | None = None, point: Point | None = None) -> float:
    """The one timeout rule: what the user gave (--timeout), else the spec's, else the device's
    default; a model point gets MODEL_TIMEOUT_FACTOR times that."""
    base = given or spec.timeout_s or DEFAULT_TIMEOUT_S[device]
    return base * MODEL_TIMEOUT_FACTOR if point is not None and point.kind == "model" else base


LIFELINE_ENV = "KLADDER_LIFELINE"


def hold_lifeline() -> None:
    """In a worker: end this process group the moment the climb's process is gone. The
    parent holds the write end of a pipe whose read end the worker waits on; when the parent
    dies in any way (kill -9 too) the kernel closes it, the read returns, and the worker kills
    its whole process group (its own children included), even while a kernel hangs. (A
    parent-death signal would not do: Linux sends it when the parent *thread* that started the
    worker ends, and lanes start workers from threads.)"""
    fd = os.environ.pop(LIFELINE_ENV, None)
    if fd is None:
        return

    def wait() -> None:
        try:
            while os.read(int(fd), 1):
                pass
        except OSError:
            pass
        end_descendants(os.getpid())            # the kernel's processes that left the group (run/reaper.py)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=wait, name="kladder-lifeline", daemon=True).start()


# Modes that start processes of their own (base.Mode.child_processes: a new Python importing torch,
# Triton and the spec before it calls anything): each allowed CHILD_TIMEOUT_FACTOR point timeouts.
CHILD_TIMEOUT_FACTOR = 3


def child_processes(point: Point, device: str) -> int:
    """How many processes of its own a point's mode starts (about: a flag given as a launcher
    keyword starts none), for the pool to have its fork server ready (Pool.expect_fresh)."""
    return modes.traits(point.mode).children(point, device)


def child_timeout(spec, device: str) -> float:
    """How long one child process of a mode may run (its start-up included)."""
    return point_timeout(spec, device) * CHILD_TIMEOUT_FACTOR


def worker_timeout(spec, device: str, point: Point, given: float | None = None) -> float:
    """How long the parent waits for a point's answer: the point's timeout, and each child
    process's on top for the modes that start them (a start-up is not a hang)."""
    return point_timeout(spec, device, given, point) + modes.traits(point.mode).child_processes * child_timeout(spec, device)


# The watchdog times the kernel, not kladder. The worker names each stage of a point as it begins
# (run/stages.py); the timeout above covers the kernel's stage (its calls, synchronized, and the
# mode's work between them). kladder's own stages (building the inputs, the float64 reference,
# the honest peer's draws, the checks) get KLADDER_STAGE_FACTOR times the point's timeout each:
# at a big point they run a float64 reference, perhaps on the host, and up to 16 perturbed draws
# of it, many times a kernel call of milliseconds. One past its budget is not judged, naming the
# stage and its time, never the kernel's hang (issue 19: a 2 GiB GEMV point whose call takes 2 ms
# was FAILED "hang" after 120 s of kladder's own work).
KLADDER_STAGE_FACTOR = 5


def stage_budget(spec, device: str, point: Point, given: float | None = None) -> float:
    """How long one of kladder's own stages of a point may stay silent."""
    return KLADDER_STAGE_FACTOR * point_timeout(spec, device, given, point)


def worker_env(device: str, gpu: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if device == "cpu":
        # The Triton interpreter must be chosen before triton is first imported.
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Worker:
    """One worker process; started at construction, ready once its hello arrives. With a fork
    server that serves its environment (run/forkserver.py), forked from it instead of started
    afresh."""

    def __init__(self, ref: str, device: str, gpu: str | None = None, extra_env: dict | None = None,
                 server=None):
        self.ref, self.device, self.gpu = ref, device, gpu
        self.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - the worker writes it across calls; close() closes it
        lifeline, self._lifeline = os.pipe()
        env = {**worker_env(device, gpu), **(extra_env or {})}
        try:
            self.proc = self._forked(server, env, lifeline) if server is not None and server.serves(env) else None
            if self.proc is None:
                env[LIFELINE_ENV] = str(lifeline)
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "kladder.run.worker", ref, device],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                    start_new_session=True, env=env, pass_fds=(lifeline,))
        finally:
            os.close(lifeline)
        self._buf = b""
        self._hello: dict | None = None
        self.gpu = gpu
        self.load = Load()                   # what else used the host during the last point
        self.peak: dict | None = None        # the last point's peak memory, as the worker measured it (PeakMemory)

    def _forked(self, server, env: dict, lifeline: int):
        """The worker forked from the server (its own session, the lifeline passed), or None."""
        from .forkserver import spawn
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            argv, fds = ["-m", "kladder.run.worker", self.ref, self.device], (in_r, out_w, self.log.fileno())
            child = spawn(argv, env, fds, {LIFELINE_ENV: lifeline}, address=server.address)
        finally:
            os.close(in_r)
            os.close(out_w)
        if child is None:
            os.close(in_w)
            os.close(out_r)
            return None
        child.stdin, child.stdout = os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb")
        return child

    def ready(self) -> dict:
        """The worker's hello (device name, free memory), waiting for it the first time."""
        if self._hello is None:
            hello = self._read(STARTUP_TIMEOUT_S)
            if hello is None or "ready" not in hello:
                err = (hello or {}).get("error") or self.stderr_tail() or "the worker exited before it was ready"
                self.kill()
                if (hello or {}).get("device_error"):      # the device refused a context: others may hold it
                    from .devicestart import DeviceStartError
                    raise DeviceStartError("starting a worker's CUDA context", err, self.gpu)
                raise WorkerError(err)
            self._hello = hello
        return self._hello

    def run(self, point: Point, timeout_s: float, budget_s: float | None = None,
            forkserver: str | None = None) -> tuple[Outcome, bool]:
        """Run one point; returns (outcome, alive). A dead worker must be replaced. The kernel's
        stage may be silent `timeout_s` (then it hangs), each of kladder's `budget_s` (then the
        point is not judged); `self.load` is then what else used the host meanwhile. `forkserver`:
        the socket of the server the worker forks its modes' own processes from. A forked worker
        whose server died before its exit status was known raises forkserver.ServerLost."""
        budget_s = budget_s or KLADDER_STAGE_FACTOR * timeout_s
        self.ready()
        self.log.seek(0, os.SEEK_END)
        mark = self.log.tell()
        host = HostSample(self.proc.pid)
        try:
            self.proc.stdin.write((json.dumps({"point": point.to_dict(), "forkserver": forkserver}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        stage, since, seen = Stage.INPUTS, time.monotonic(), {}
        while True:
            limit = timeout_s if stage == Stage.KERNEL else budget_s
            msg = self._read(since + limit - time.monotonic())
            if msg is None or "stage" not in msg:
                break
            now = time.monotonic()                # a stage began: its own clock starts
            seen[stage] = seen.get(stage, 0.0) + now - since
            stage, since = Stage(msg["stage"]), now
        self.load = host.end((msg or {}).get("children_cpu_s", 0.0))
        self.peak = (msg or {}).get("peak")
        if msg is not None:
            outcome = Outcome.from_dict(msg["outcome"])
            outcome.output = self.stderr_tail(since=mark, limit=OUTPUT_KEPT)
            return outcome, not msg.get("fatal", False)
        silent = time.monotonic() - since
        seen[stage] = seen.get(stage, 0.0) + silent
        output = self.stderr_tail(since=mark, limit=OUTPUT_KEPT)
        if self.proc.poll() is not None and getattr(self.proc, "lost", False):
            from .forkserver import ServerLost
            raise ServerLost("the fork server ended before this worker's exit status was known")
        if self.proc.poll() is None:          # no answer in time: the kernel hung, or kladder's stage overran
            self.kill()
            outcome = (faults.hang(point, timeout_s) if stage == Stage.KERNEL
                       else faults.overrun(point, stage, silent, budget_s, timeout_s))
        else:
            outcome = faults.died(point, self.proc.returncode, output)
        outcome.output = faults.kernel_prints(output)
        outcome.stages = seen
        return outcome, False

    def _read(self, timeout_s: float) -> dict | None:
        deadline = time.monotonic() + max(timeout_s, 0.0)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
                if not chunk:
                    self.proc.wait()
                    return None
                self._buf += chunk
        except (OSError, ValueError):          # the pipe was closed under us (the pool is shutting down)
            return None
        finally:
            sel.close()
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def stderr_tail(self, since: int = 0, limit: int = 1500) -> str:
        try:
            self.log.flush()
            self.log.seek(since)
            text = self.log.read().decode(errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return text[-limit:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            end_descendants(self.proc.pid)      # a kernel's processes, in the worker's group or not (run/reaper.py)
            if isinstance(self.proc, subprocess.Popen):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()                # a forked worker: its server kills the group, not yet reaped
            self.proc.wait()
        self._cut()

    def _cut(self) -> None:
        if self._lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(self._lifeline)
            self._lifeline = None

    def close(self) -> None:
        """An idle worker exits at once when its stdin closes; a busy one is killed, and so is one
        still starting (it reads its stdin only once ready: a climb whose points were all reused
        from the outcome store would wait for its import to end)."""
        if self.proc.poll() is None and self._hello is None:
            self.kill()
        elif self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.kill()
        self._cut()
        if not isinstance(self.proc, subprocess.Popen):
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    f.close()
        with contextlib.suppress(OSError):
            self.log.close()


class Pool:
    """Workers for one spec on one device: up to `spares` started ahead of need (`warm`,
    `prefetch`), handed out by `take`, every worker killed by `close` or `kill` (also from
    another thread, on Ctrl-C). Nothing is started that no point will use: on a 2-core machine
    a worker's start costs a core for two seconds."""

    def __init__(self, ref: str, device: str, spares: int = 1, gpus: list[str] | None = None, server=None):
        self.ref, self.device, self.spares = ref, device, spares
        self.gpus = gpus or [None]
        self._spare: list[Worker] = []
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._next_gpu = 0
        self.closed = False
        self.restarts = 0
        self.hello: dict = {}
        self._fresh_left = 0             # fresh-process points still to come in this rung
        self._fresh_lanes = 1
        # `server`: one that several climbs share (the climbs of many specs, many.py; the zoo's,
        # zoo_run.py; KLADDER_FORKSERVER=SOCKET, one another process started: the test suite's,
        # tests/conftest.py), started by its owner and closed by it, never by this pool; every
        # worker and mode process forked from it
        if server is None and os.environ.get("KLADDER_FORKSERVER", "").startswith("/"):
            from .forkserver import Attached
            server = Attached(os.environ["KLADDER_FORKSERVER"])
        self.server = server             # the fork server (run/forkserver.py): from a climb's start, or once a rung needs new processes
        self._own_server = server is None   # one given is not this pool's to close
        self.waits = None                # run/waits.Waits: what the lanes wait for (set by the climb's runner)
        if os.environ.get("KLADDER_FORKSERVER") == "always":      # every worker forked (tests)
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
                or os.environ.get("KLADDER_FORKSERVER") == "0"):
            return
        from .forkserver import Server
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
        """Have `n` spares started (at most `spares`), for points known to come."""
        with self._lock:
            if self._starting():              # forked at need once it serves (a fork costs a fraction of a start)
                return
            while not self.closed and len(self._spare) < min(n, max(self.spares, 1)):
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
            if fresh:
                self._fresh_left = max(0, self._fresh_left - 1)
                want = 0 if self._starting() else min(self._fresh_left, self._fresh_lanes, max(self.spares, 1))
                while len(self._spare) < want:
                    self._spare.append(self._start())
        hello, w = self._ready(w)
        self.hello = self.hello or hello
        return w

    def _ready(self, w: Worker) -> tuple[dict, Worker]:
        """The worker's hello; where the device refused its context (another process holds the
        memory), a new worker every few seconds for devicestart.DEVICE_RETRY_S, then
        DeviceStartError with the device's state. The wait is said (run/waits.py): for a
        worker's start, or for the device once it refused."""
        from .devicestart import DeviceStartError, retrying
        box = [w]
        with waiting(self.waits if w._hello is None else None, Wait.WORKER) as wait:
            def attempt() -> dict:
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
        from .forkserver import ServerLost
        if fresh:
            w = self.pool.take(fresh=True)
            address = self.pool.server_address()     # asked once a worker is taken: it may wait for the server
            try:
                try:
                    return w.run(point, timeout_s, budget_s, address)[0]
                except ServerLost:           # the fork server died under it: the point again, in a new process
                    self.pool.retire(w)
                    w = self.pool.plain(w.gpu)
                    return w.run(point, timeout_s, budget_s)[0]
            finally:
                self.load, self.gpu, self.peak = w.load, w.gpu, w.peak
                self.pool.retire(w)
        if self.worker is None:
            self.worker = self.pool.take()
            self.ran = 0
        address = self.pool.server_address()
        try:
            outcome, alive = self.worker.run(point, timeout_s, budget_s, address)
        except ServerLost:
            self.pool.retire(self.worker)
            self.worker = self.pool.plain(self.worker.gpu)
            self.ran = 0
            outcome, alive = self.worker.run(point, timeout_s, budget_s)
        self.load, self.gpu, self.peak = self.worker.load, self.worker.gpu, self.worker.peak
        self.ran += 1
        if not alive:
            self.pool.retire(self.worker)
            self.worker = None
            self.pool.restarts += 1
            if faults.looks_like_heap_damage(outcome):
                outcome = heap_checked_rerun(self.pool, point, timeout_s, outcome, self.ran - 1)
        return outcome

    def device_load(self) -> dict:
        """Other processes on this lane's CUDA device and their memory, now (device_load)."""
        return device_load(self.gpu, self.pool.pids())

    def close(self) -> None:
        if self.worker is not None:
            self.pool.retire(self.worker)
            self.worker = None


# ---------------------------------------------------------------------------- load
# The host counts as busy during a point when the other processes (the climb's other lanes
# included) used more than this many cores on average: a hang, crash or out-of-memory seen
# then is re-run alone before it is reported (ladder.Runner).
HOST_BUSY_CORES = 0.25


def _host_busy_s() -> float | None:
    """CPU seconds the whole host has spent busy since boot (/proc/stat), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]          # everything but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float:
    """CPU seconds of a live process and of its children it has reaped; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in rest[11:15]) / os.sysconf("SC_CLK_TCK")


def _ours_s(pid: int) -> float:
    """CPU seconds of the climb's own process (its reaped workers included) and one worker's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + _process_cpu_s(pid)


def _waited_s(pid: int) -> float:
    """Seconds a live process's threads spent runnable but waiting for a CPU (the run-queue
    delay of /proc/PID/task/*/schedstat); 0 when it is gone or the kernel keeps no schedstat."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


# The host's memory counts as full when this share of it is in use once a point ended (after its
# worker's own memory is freed): a worker killed then was likely the out-of-memory killer's choice,
# whoever used the memory.
HOST_FULL_SHARE = 0.9


def host_memory() -> tuple[int | None, int | None]:
    """The host's memory in use (MemTotal less MemAvailable) and its total, in bytes
    (/proc/meminfo), or (None, None) off Linux."""
    found = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    if len(found) < 2:
        return None, None
    return found["MemTotal"] - found["MemAvailable"], found["MemTotal"]


def host_available() -> int | None:
    """The host's available memory now (MemAvailable, /proc/meminfo), or None off Linux."""
    used, total = host_memory()
    return None if used is None else total - used


def oom_kills() -> int | None:
    """The processes the kernel's out-of-memory killer has killed since boot (/proc/vmstat
    oom_kill, Linux 4.13 and up), or None where it is not kept."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _status_bytes(*keys: str) -> dict[str, int]:
    """Fields of /proc/self/status in bytes (VmRSS, VmHWM: the resident set and its peak)."""
    found = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in keys:
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


class PeakMemory:
    """In a worker, the most memory each stage of a point took above what the worker held before
    the point: on the host the resident set's peak (VmHWM, reset through /proc/self/clear_refs at
    each stage), on CUDA the caching allocator's peak. What runs, whatever it is (the kernel's
    scratch, the float64 reference's intermediates, the honest peer's draws): sizes.Peak scales it
    to the points that follow. `begin` a point, `stage` at each stage's start, `end` its facts."""

    def __init__(self, device: str):
        self.device = device
        self.current: str | None = None
        self.host0 = self.device0 = None
        self.stages: dict[str, list] = {}

    def begin(self) -> None:
        self.current, self.stages = None, {}
        self._reset()
        self.host0 = _status_bytes("VmRSS").get("VmRSS")
        self.device0 = self._device_now()

    def stage(self, stage) -> None:
        """`stage` begins: the one that ran gets its peak, and the peaks start again."""
        self._close()
        self.current = str(stage)

    def end(self) -> dict:
        """{stage: [host bytes, device bytes or None]}: each stage's peak above the point's start."""
        self._close()
        return self.stages

    def _close(self) -> None:
        if self.current is not None and self.host0 is not None:
            host = max(_status_bytes("VmHWM").get("VmHWM", self.host0) - self.host0, 0)
            dev = None
            if self.device0 is not None:
                import torch
                dev = max(torch.cuda.max_memory_allocated() - self.device0, 0)
            was = self.stages.get(self.current, [0, None])
            self.stages[self.current] = [max(was[0], host), dev if was[1] is None else max(was[1], dev or 0)]
        self._reset()

    def _reset(self) -> None:
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
            f.write("5")                      # the peak resident set starts again from now
        if self.device == "cuda":
            import torch
            if torch.cuda.is_initialized():
                torch.cuda.reset_peak_memory_stats()

    def _device_now(self) -> int | None:
        if self.device != "cuda":
            return None
        import torch
        return torch.cuda.memory_allocated() if torch.cuda.is_initialized() else None


class HostSample:
    """Other processes' CPU time over a point: the host's busy time less the climb's process and
    the point's worker (two reads of /proc at each end: microseconds). A grandchild of the worker
    (Triton's compiler, a mode's own process) counts as another process until it is reaped; a
    mode's process forked by the fork server is the point's own by what the worker reports
    (`children_s`: their CPU seconds, which the server's reaping measured). And the host's memory
    once the point ended (what others still hold after a killed worker's memory is freed) and
    the out-of-memory killer's kills meanwhile."""

    def __init__(self, pid: int):
        self.pid, self.t0 = pid, time.monotonic()
        self.host0, self.ours0, self.worker0, self.wait0 = _host_busy_s(), _ours_s(pid), _process_cpu_s(pid), _waited_s(pid)
        self.kills0 = oom_kills()

    def end(self, children_s: float = 0.0) -> Load:
        host = _host_busy_s()
        ours = _ours_s(self.pid) - self.ours0 + children_s
        others = 0.0 if host is None or self.host0 is None else host - self.host0 - ours
        worker = _process_cpu_s(self.pid) - self.worker0 + children_s
        waited = _waited_s(self.pid) - self.wait0
        used, total = host_memory()
        if used is None or used < HOST_FULL_SHARE * total:
            used = total = None                   # kept only when it was full: what the words then name
        kills = oom_kills()
        return Load(host_cpu_s=round(max(others, 0.0), 3), worker_cpu_s=round(max(worker, 0.0), 3),
                    worker_wait_s=round(max(waited, 0.0), 3), seconds=round(time.monotonic() - self.t0, 3),
                    host_used_bytes=used, host_total_bytes=total,
                    oom_kills=None if kills is None or self.kills0 is None else max(kills - self.kills0, 0))


def device_load(gpu: str | None, ours: list[int]) -> dict:
    """Other processes on the CUDA device and the memory they hold, asked of NVML (pynvml) or
    `nvidia-smi` (neither creates a CUDA context). `ours`: the pids of the climb's live workers.
    Where the device lists other pids than this namespace's (a container), that many of its
    processes are taken as ours, and the others' memory is the device's whole use (an upper
    bound: ours cannot be told apart there)."""
    apps, used, total = _nvml(gpu) or _nvidia_smi(gpu) or ([], None, None)
    mine = [a for a in apps if a[0] in ours]
    if mine or not apps:
        others = [a for a in apps if a[0] not in ours]
        held = sum(m for _, m in others) if others else (0 if apps else None)
        return {"processes": len(others), "device_used_bytes": held, "device_total_bytes": total}
    n = max(0, len(apps) - len(ours))
    return {"processes": n, "device_used_bytes": used if n else 0, "device_total_bytes": total}


def _index(gpu: str | None) -> str:
    return gpu if gpu not in (None, "") else os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"


def _nvml(gpu: str | None):
    try:
        import pynvml
        pynvml.nvmlInit()
        i = _index(gpu)
        h = (pynvml.nvmlDeviceGetHandleByIndex(int(i)) if i.isdigit()
             else pynvml.nvmlDeviceGetHandleByUUID(i.encode() if isinstance(i, str) else i))
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        apps = [(p.pid, p.usedGpuMemory or 0) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
        return apps, int(mem.used), int(mem.total)
    except Exception:  # noqa: BLE001 - no pynvml, no driver: nvidia-smi is asked instead
        return None


def _nvidia_smi(gpu: str | None):
    """The same from `nvidia-smi`, through devicestart.device_state (one parser of its output):
    used memory is total less free."""
    from .devicestart import device_state
    state = device_state(_index(gpu))
    if state["total_bytes"] is None or state["holders"] is None:
        return None
    apps = [(h["pid"], h["used_bytes"] or 0) for h in state["holders"] if h["pid"] is not None]
    return apps, state["total_bytes"] - state["free_bytes"], state["total_bytes"]


# glibc's malloc debugging: since glibc 2.34 the checks live in libc_malloc_debug.so, loaded by
# LD_PRELOAD; MALLOC_CHECK_=3 (older glibc) and the tunable (newer) make every free and malloc
# check the chunk's metadata and abort at the first damaged one; MALLOC_PERTURB_ fills freed
# and fresh memory with a byte pattern, so a use of freed memory reads garbage, not old values.
MALLOC_DEBUG_LIBS = ("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0", "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
                     "/lib/aarch64-linux-gnu/libc_malloc_debug.so.0", "/usr/lib64/libc_malloc_debug.so.0",
                     "/lib64/libc_malloc_debug.so.0")


def heap_check_env() -> dict[str, str]:
    """A worker's environment additions for a run with glibc's malloc checks on."""
    env = {"MALLOC_CHECK_": "3", "MALLOC_PERTURB_": "165",
           "GLIBC_TUNABLES": ":".join(t for t in (os.environ.get("GLIBC_TUNABLES", ""),
                                                 "glibc.malloc.check=3:glibc.malloc.perturb=165") if t)}
    lib = next((p for p in MALLOC_DEBUG_LIBS if os.path.exists(p)), None)
    if lib:
        env["LD_PRELOAD"] = ":".join(p for p in (os.environ.get("LD_PRELOAD", ""), lib) if p)
    return env


def heap_checked_rerun(pool: Pool, point: Point, timeout_s: float, crashed: Outcome, earlier: int) -> Outcome:
    """A point whose worker died as heap damage does (faults.looks_like_heap_damage), re-run
    alone in a fresh worker with glibc's malloc checks on before it is blamed: the damage may
    be an earlier point's, in that worker (faults.after_heap_check says which it was). On CUDA
    the same: the host heap is what a SIGABRT says was damaged (the device's memory cannot
    abort the process); PYTORCH_NO_CUDA_MEMORY_CACHING is not set, since it changes what a
    store past a device tensor lands in, not what the host heap holds."""
    if pool.closed:
        return crashed
    w = Worker(pool.ref, pool.device, pool.gpus[0], extra_env=heap_check_env())
    try:
        alone, _ = w.run(point, timeout_s)
    except WorkerError:
        return crashed                      # the checked worker could not start: the crash stands as it was
    finally:
        w.kill()
        w.close()
    return faults.after_heap_check(crashed, alone, earlier)
