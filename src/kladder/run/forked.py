"""Workers forked from this process, for `kladder repro` on the CPU: the repro imports torch and the
spec once, here, sets torch up as a worker does, and each worker the point needs (its run and its
replay on one worker, a run alone in a new one, a fresh process for A-B-A) is a fork of it, which
runs the worker's own loop (run/worker.serve) behind the same pipes. A fork costs milliseconds; a
worker's start an import of torch, Triton and the spec (2-5 s on the 2-core CPU, most of a small
repro's time). Everything else is a worker's, unchanged: its own session (its process group killed
whole), the lifeline that ends it with this process, the watchdog that times its stages, its
stderr kept for the outcome, a crash or a hang judged by isolation.Worker and faults.py, so the
repro's verdict is the climb's.

CPU only: a process that has touched CUDA cannot fork a child that uses it (the driver's state is
not copied), and this one never touches it (Pool on CUDA starts workers as the climb does). Forks
are made from the thread that runs the repro, while this process runs no other thread (else the
worker is started afresh)."""
from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ..core.outcome import Load
from .isolation import LIFELINE_ENV, Pool, Worker, hold_lifeline


class ForkedProcess:
    """What isolation.Worker uses of subprocess.Popen, for a child this process forked."""

    def __init__(self, pid: int, stdin, stdout):
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid:
                self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        """The child's whole process group (it made its own session), as for a worker."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


class ForkedWorker(Worker):
    """A worker forked from this process: ready at once (its hello is this process's), its loop
    run/worker.serve on the spec this process loaded."""

    def __init__(self, pool: "ForkPool"):
        self.ref, self.device, self.gpu = pool.ref, pool.device, None
        self.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - the worker writes it across calls; close() closes it
        lifeline, self._lifeline = os.pipe()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        sys.stdout.flush()                   # what this process buffered must not be written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                         # the child: never returns
            _child(pool, in_r, out_w, self.log.fileno(), lifeline)
        for fd in (in_r, out_w, lifeline):
            os.close(fd)
        self.proc = ForkedProcess(pid, os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"))
        self._buf = b""
        self._hello: dict | None = None
        self.load = Load()


def _close_others(keep: set[int]) -> None:
    """Every descriptor past stderr but `keep` closed: a fork inherits the parent's ends of the
    other workers' pipes, and a child that held another's stdin open would keep it from seeing its
    end (as subprocess's close_fds does for a worker started afresh)."""
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _child(pool: "ForkPool", in_r: int, out_w: int, log: int, lifeline: int) -> None:
    """The forked worker: a session of its own, stdin from the parent's pipe, everything it prints
    (stdout too) to its log, the protocol on `out_w`; then the worker's loop until stdin closes."""
    code = 0
    try:
        os.setsid()
        _close_others(keep={in_r, out_w, log, lifeline})
        os.dup2(in_r, 0)
        os.dup2(log, 2)
        os.dup2(2, 1)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True)
        os.environ[LIFELINE_ENV] = str(lifeline)
        hold_lifeline()
        os.environ["KLADDER_SPEC_REF"] = pool.ref        # modes that start processes of their own (jitcache)
        faulthandler.enable()                            # a segfault leaves a Python traceback in the log
        import warnings
        warnings.filterwarnings("ignore")
        proto = os.fdopen(out_w, "w", buffering=1)
        proto.write(json.dumps({"ready": True, **pool.hello_facts}) + "\n")
        from .worker import serve
        serve(pool.spec, pool.device, sys.stdin, proto)
    except BaseException:  # noqa: BLE001 - kladder's own failure in the child: its words to the log, then gone
        import traceback
        traceback.print_exc()
        code = 2
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


class ForkPool(Pool):
    """A pool whose workers are forks of this process (see the module's docstring). This process
    must have set torch up (run/worker.setup_torch) and loaded `spec` from `ref` first; the pool
    takes the environment's fingerprint and probes Triton's interpreter once, here."""

    def __init__(self, ref: str, spec, device: str, hello: dict):
        if device != "cpu":
            raise ValueError("forked workers are for the CPU: a CUDA context does not survive a fork")
        super().__init__(ref, device, spares=1)
        from ..core.fingerprint import fingerprint, source_file
        from .interpreter import probe
        self.spec = spec
        self.hello_facts = {**hello, "fingerprint": fingerprint(source_file(ref), device)}
        probe()                              # once here, so no fork probes again

    def _start(self) -> Worker:
        # a fork copies one thread: with another running (holding a lock the child would wait on
        # for ever), the worker is started afresh instead, as a climb starts its workers
        w = ForkedWorker(self) if threading.active_count() == 1 else Worker(self.ref, self.device)
        self._all.append(w)
        return w

    def start_server(self) -> None:
        """No fork server: every worker is a fork of this process already."""
