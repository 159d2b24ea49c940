"""The parent's side of a worker process: started (afresh, `python -m kladder.run.worker`, or
forked from the fork server), ready once its hello arrives, asked to run one point at a time
(run/protocol.py's messages), watched stage by stage (the kernel's stage gets the point's
timeout, kladder's own a budget: run/timeouts.py), killed with its whole process group.

Why a process and not a thread: after an illegal memory access every later CUDA call in
that process fails, so the worker that saw it is replaced, never reused. A hang is only
visible from outside: the parent owns the timeout and kills the worker's whole process
group (Triton's compiler and the interpreter may have children of their own). Workers never
outlive the climb: each holds a lifeline (run/lifeline.py), and the pool kills whole process
groups."""
from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

from ..core.errors import WorkerError
from ..core.outcome import Load, Outcome, Stage
from ..core.point import Point
from . import faults
from .lifeline import LIFELINE_ENV
from .protocol import Answer, Hello, Message, Run, StageBegan, StartFailed, from_wire, to_wire
from .reaper import end_descendants, kill_with_group
from .sampling import HostSample
from .timeouts import KLADDER_STAGE_FACTOR, STARTUP_TIMEOUT_S

KILL_WAIT_S = 30.0          # a killed worker's exit, before it is killed again from here (Worker.kill)

READ_SLICE_S = 0.5          # the longest a read of a worker's answer waits before it looks whether its pipe was closed
OUTPUT_KEPT = 4000              # characters of a point's stdout/stderr kept with its outcome


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
        self._hello: Hello | None = None
        self.gpu = gpu
        self.load = Load()                   # what else used the host during the last point
        self.peak: dict | None = None        # the last point's peak memory, as the worker measured it (PeakMemory)

    def _forked(self, server, env: dict, lifeline: int):
        """The worker forked from the server (its own session, the lifeline passed), or None."""
        from .forkclient import spawn
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

    def ready(self) -> Hello:
        """The worker's hello (device name, free memory), waiting for it the first time."""
        if self._hello is None:
            hello = self._read(STARTUP_TIMEOUT_S, Hello, StartFailed)
            if not isinstance(hello, Hello):
                err = (hello.error if hello else "") or self.stderr_tail() or "the worker exited before it was ready"
                self.kill()
                if hello is not None and hello.device_error:     # the device refused a context: others may hold it
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
        whose server died before its exit status was known raises forkclient.ServerLost."""
        budget_s = budget_s or KLADDER_STAGE_FACTOR * timeout_s
        self.ready()
        self.log.seek(0, os.SEEK_END)
        mark = self.log.tell()
        host = HostSample(self.proc.pid)
        try:
            self.proc.stdin.write(to_wire(Run(point, forkserver)).encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        stage, since, seen = Stage.INPUTS, time.monotonic(), {}
        while True:
            limit = timeout_s if stage == Stage.KERNEL else budget_s
            msg = self._read(since + limit - time.monotonic(), StageBegan, Answer)
            if not isinstance(msg, StageBegan):
                break
            now = time.monotonic()                # a stage began: its own clock starts
            seen[stage] = seen.get(stage, 0.0) + now - since
            stage, since = msg.stage, now
        self.load = host.end(msg.children_cpu_s if msg is not None else 0.0)
        self.peak = msg.peak if msg is not None else None
        if msg is not None:
            outcome = msg.outcome
            outcome.output = self.stderr_tail(since=mark, limit=OUTPUT_KEPT)
            return outcome, not msg.fatal
        silent = time.monotonic() - since
        seen[stage] = seen.get(stage, 0.0) + silent
        output = self.stderr_tail(since=mark, limit=OUTPUT_KEPT)
        if self.proc.poll() is not None and getattr(self.proc, "lost", False):
            from .forkclient import ServerLost
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

    def _read(self, timeout_s: float, *expected: type[Message]) -> Message | None:
        """The worker's next message, of one of the `expected` kinds (protocol.from_wire raises
        on any other); None when none came within `timeout_s` or the worker's pipe ended."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.stdout.closed:
                    return None
                # in slices: a pipe another thread closes (the climb closing its workers after a Ctrl-C)
                # leaves epoll silently, and the wait would last the point's whole budget (a climb
                # interrupted with an early point in a hang did not exit for minutes)
                if not sel.select(min(left, READ_SLICE_S)):
                    continue
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
        return from_wire(line, *expected)

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
            try:
                self.proc.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                # not ended by its server (a Kill that once came before the child's setsid left it
                # running): ended here. No exit came, so it is not reaped and its pid is still its own
                kill_with_group(self.proc.pid)
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

