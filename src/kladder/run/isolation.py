"""Worker processes: points run in a child process, so a kernel that segfaults, hangs or
faults the device costs one point, not the climb.

Why a process and not a thread: after an illegal memory access every later CUDA call in
that process fails, so the worker that saw it is replaced, never reused. A hang is only
visible from outside: the parent owns the timeout and kills the worker's whole process
group (Triton's compiler and the interpreter may have children of their own).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time

from ..outcome import Outcome
from ..point import Point
from . import faults

STARTUP_TIMEOUT_S = 600.0
DEFAULT_TIMEOUT_S = {"cpu": 120.0, "cuda": 120.0}


def point_timeout(spec, device: str, given: float | None = None, point: Point | None = None) -> float:
    """The one timeout rule: what the user gave (--timeout), else the spec's, else the device's
    default; a rung-5 point gets its own budget of seconds (its repetition, its sanitizer run) on top."""
    base = given or spec.timeout_s or DEFAULT_TIMEOUT_S[device]
    return base + float(dict(point.repeat).get("seconds", 0)) if point is not None else base


class WorkerError(RuntimeError):
    """The worker could not start (the spec failed to import, say): a usage problem."""


def worker_env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    if device == "cpu":
        # The Triton interpreter must be chosen before triton is first imported.
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Worker:
    def __init__(self, ref: str, device: str):
        self.ref, self.device = ref, device
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kladder.run.worker", ref, device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            start_new_session=True, env=worker_env(device))
        self._buf = b""
        hello = self._read(STARTUP_TIMEOUT_S)
        if hello is None or "ready" not in hello:
            err = (hello or {}).get("error") or self.stderr_tail() or "the worker exited before it was ready"
            self.kill()
            raise WorkerError(err)
        self.free_bytes = hello.get("free_bytes")
        self.device_name = hello.get("device_name", device)

    def run(self, point: Point, timeout_s: float) -> tuple[Outcome, bool]:
        """Run one point; returns (outcome, alive). A dead worker must be replaced."""
        self.log.seek(0, os.SEEK_END)
        mark = self.log.tell()
        try:
            self.proc.stdin.write((json.dumps({"point": point.to_dict()}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        msg = self._read(timeout_s)
        if msg is not None:
            return Outcome.from_dict(msg["outcome"]), not msg.get("fatal", False)
        if self.proc.poll() is None:          # no answer in time: a hang
            self.kill()
            return faults.hang(point, timeout_s), False
        return faults.died(point, self.proc.returncode, self.stderr_tail(since=mark)), False

    def _read(self, timeout_s: float) -> dict | None:
        deadline = time.monotonic() + timeout_s
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
        finally:
            sel.close()
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def stderr_tail(self, since: int = 0, limit: int = 1500) -> str:
        self.log.flush()
        self.log.seek(since)
        text = self.log.read().decode(errors="replace").strip()
        return text[-limit:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.kill()
        self.log.close()


class Pool:
    """One worker at a time (a GPU runs one point at a time; so does a 2-core CI box),
    replaced whenever it dies, hangs or faults."""

    def __init__(self, ref: str, device: str):
        self.ref, self.device = ref, device
        self.worker: Worker | None = None
        self.restarts = 0
        self.device_name = ""
        self._free: int | None = None

    def start(self) -> Worker:
        if self.worker is None:
            self.worker = Worker(self.ref, self.device)
            self._free, self.device_name = self.worker.free_bytes, self.worker.device_name
        return self.worker

    def free_bytes(self) -> int | None:
        """The device's free memory as the latest worker saw it at its start; a worker is
        started for it only if none has been yet (so a fresh-worker point starts one, not two)."""
        if self._free is None:
            self.start()
        return self._free

    def run(self, point: Point, timeout_s: float, fresh: bool = False) -> Outcome:
        """With `fresh`, the point runs alone in a new worker, which is closed after it: no
        state from earlier calls reaches it, and none of its state reaches later points."""
        if fresh:
            self.close()
            try:
                return self.run(point, timeout_s)
            finally:
                self.close()
        worker = self.start()
        outcome, alive = worker.run(point, timeout_s)
        if not alive:
            worker.close()
            self.worker = None
            self.restarts += 1
        return outcome

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
