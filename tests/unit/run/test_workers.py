"""run/workers.py's parent side without a worker process: a Worker whose process is a small fake
(its protocol pipe a real os.pipe this test writes to, its stderr log a temporary file), so that
what the parent makes of the messages, of silence and of a dead pipe is tested in-process: the
answer and its output, a hang in the kernel's stage against an overrun of kladder's, a crash, a
lost fork server, the hello and its refusals, the environment a worker gets."""
import io
import os
import tempfile

import pytest

from kladder.core.errors import WorkerError
from kladder.core.outcome import Check, NoteKind, Outcome, Stage, Status
from kladder.core.point import Point
from kladder.run import workers
from kladder.run.devicestart import DeviceStartError
from kladder.run.forkclient import ServerLost
from kladder.run.protocol import Answer, Hello, ProtocolError, Run, StageBegan, StartFailed, to_wire
from kladder.run.workers import Worker, worker_env

PT = Point("copy", 1, (("N", 8),))
NO_PID = 2 ** 22 + 17            # past Linux's largest pid: /proc has nothing for it


class FakeProc:
    """What Worker uses of a process: `stdout` the read end of a pipe, `stdin` a buffer, its end
    scripted; on `wait` (the pipe ended) it writes `dying` to the log, as a crashing worker's stderr."""

    def __init__(self, log, returncode=None, dying=b"", lost=False):
        self.r, self.w = os.pipe()
        self.stdout = os.fdopen(self.r, "rb")
        self.stdin = io.BytesIO()
        self.stdin.close = lambda: None
        self.pid, self.log, self.end, self.dying, self.lost = NO_PID, log, returncode, dying, lost
        self.returncode = None
        self.killed = 0

    def send(self, *msgs):
        os.write(self.w, "".join(to_wire(m) for m in msgs).encode())

    def hang_up(self):
        os.close(self.w)
        self.w = None

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            self.log.write(self.dying)
            self.returncode = self.end
        return self.returncode

    def kill(self):
        self.killed += 1
        self.returncode = -9


@pytest.fixture
def make(monkeypatch):
    reaped = []
    monkeypatch.setattr(workers, "end_descendants", lambda pid: reaped.append(pid) or 0)
    made = []

    def new(hello=True, **kw):
        w = Worker.__new__(Worker)
        w.ref, w.device, w.gpu = "spec.py", "cpu", None
        w.log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115 - closed by the fixture
        w.proc = FakeProc(w.log, **kw)
        w._buf, w._lifeline = b"", None
        w._hello = Hello(device_name="cpu") if hello else None
        w.load, w.peak = workers.Load(), None
        made.append(w)
        return w
    yield new
    for w in made:
        if w.proc.w is not None:
            os.close(w.proc.w)
        w.proc.stdout.close()
        w.log.close()


def test_an_answer_is_the_outcome_with_the_points_own_stderr_and_the_worker_lives(make):
    w = make()
    w.log.write(b"an earlier point's words\n")
    outcome = Outcome(PT, Status.PASSED)
    w.proc.send(StageBegan(Stage.KERNEL), StageBegan(Stage.CHECKS),
                Answer(outcome, fatal=False, children_cpu_s=0.0, peak={"kernel": [1024, None]}))
    got, alive = w.run(PT, timeout_s=5.0)
    assert alive and got.status == Status.PASSED and got.output == ""
    assert w.peak == {"kernel": [1024, None]}
    sent = w.proc.stdin.getvalue().decode()
    assert sent == to_wire(Run(PT, None))                          # one Run message, no fork server


def test_a_fatal_answer_says_the_worker_must_go(make):
    w = make()
    w.proc.send(Answer(Outcome(PT, Status.FAILED), fatal=True))
    assert w.run(PT, timeout_s=5.0)[1] is False


def test_silence_in_the_kernels_stage_is_a_hang_and_the_worker_is_killed(make):
    w = make()
    w.proc.send(StageBegan(Stage.INPUTS), StageBegan(Stage.KERNEL))
    got, alive = w.run(PT, timeout_s=0.05, budget_s=30.0)
    assert not alive and got.status == Status.FAILED and got.headline.check == Check.HANG
    assert got.headline.facts.timeout_s == 0.05 and w.proc.killed == 1
    assert set(got.stages) == {Stage.INPUTS, Stage.KERNEL} and 0.05 <= got.stages[Stage.KERNEL] < 5.0   # not the budget


def test_silence_in_kladders_own_stage_is_an_overrun_not_judged_never_a_hang(make):
    w = make()
    w.proc.send(StageBegan(Stage.REFERENCE))
    got, alive = w.run(PT, timeout_s=30.0, budget_s=0.05)
    assert not alive and got.status == Status.NOT_JUDGED and got.note.kind == NoteKind.STAGE_OVERRUN
    assert got.note.facts.stage == "reference" and got.note.facts.budget_s == 0.05 and w.proc.killed == 1
    assert got.note.facts.seconds < 5.0                     # cut at the budget, not at the kernel's timeout


def test_the_budget_defaults_to_kladders_factor_of_the_timeout(make):
    w = make()
    got, _ = w.run(PT, timeout_s=0.01)                             # silent in the inputs' stage
    assert got.note.facts.budget_s == pytest.approx(0.01 * workers.KLADDER_STAGE_FACTOR)


def test_a_worker_that_dies_is_a_crash_with_its_frames_and_what_the_kernel_printed(make):
    dump = (b"kernel says hi\nFatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n"
            b'  File "/u/kern.py", line 3 in scale\n')
    w = make(returncode=-11, dying=dump)
    w.proc.send(StageBegan(Stage.KERNEL))
    w.proc.hang_up()
    got, alive = w.run(PT, timeout_s=30.0)
    assert not alive and got.headline.check == Check.CRASHED and got.headline.facts.signal == "SIGSEGV"
    assert got.headline.facts.frames == ["kern.py:3 in scale"] and got.output == "kernel says hi"
    assert w.proc.killed == 0


def test_a_forked_worker_whose_server_was_lost_raises_server_lost(make):
    w = make(returncode=-9, lost=True)
    w.proc.hang_up()
    with pytest.raises(ServerLost):
        w.run(PT, timeout_s=30.0)


# ---------------------------------------------------------------------------- the hello
def test_the_hello_is_read_once_and_kept(make):
    w = make(hello=False)
    w.proc.send(Hello(device_name="cpu", free_bytes=None))
    assert w.ready().device_name == "cpu" and w.ready() is w._hello


def test_a_device_that_refused_its_context_is_a_device_start_error_and_anything_else_a_worker_error(make):
    w = make(hello=False)
    w.proc.send(StartFailed("AcceleratorError: out of memory", device_error=True))
    with pytest.raises(DeviceStartError, match="out of memory"):
        w.ready()
    assert w.proc.killed == 1
    w = make(hello=False)
    w.proc.send(StartFailed("SpecError: no spec named x"))
    with pytest.raises(WorkerError, match="no spec named x"):
        w.ready()


def test_a_worker_that_ends_before_its_hello_says_its_stderr_or_that_it_exited(make):
    w = make(hello=False, returncode=1, dying=b"ImportError: no torch\n")
    w.proc.hang_up()
    with pytest.raises(WorkerError, match="ImportError: no torch"):
        w.ready()
    w = make(hello=False, returncode=1)
    w.proc.hang_up()
    with pytest.raises(WorkerError, match="exited before it was ready"):
        w.ready()


def test_read_keeps_what_follows_a_line_and_refuses_a_message_of_another_kind(make):
    w = make()
    w.proc.send(StageBegan(Stage.KERNEL), StageBegan(Stage.CHECKS))
    assert w._read(1.0, StageBegan).stage == Stage.KERNEL
    assert w._read(0.0, StageBegan).stage == Stage.CHECKS            # buffered: no wait needed
    assert w._read(0.0, StageBegan) is None
    w.proc.send(Hello(device_name="cpu"))
    with pytest.raises(ProtocolError):
        w._read(1.0, StageBegan, Answer)


def test_a_read_ends_soon_after_another_thread_closes_the_pipe_though_no_end_of_file_came(make):
    # the climb closing its workers after a Ctrl-C, a lane still waiting on one whose pipe another
    # process keeps open: epoll drops a closed descriptor silently; the read must not wait its budget
    import threading
    import time
    w = make()
    got = []
    t = threading.Thread(target=lambda: got.append(w._read(600.0, StageBegan, Answer)))
    t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    w.proc.stdout.close()                                        # no end of file: the write end stays open
    t.join(10)
    assert not t.is_alive() and got == [None]
    assert time.monotonic() - t0 < 3 * workers.READ_SLICE_S + 1


def test_stderr_tail_reads_from_a_mark_and_keeps_the_last_characters(make):
    w = make()
    w.log.write(b"0123456789")
    assert w.stderr_tail() == "0123456789" and w.stderr_tail(since=4) == "456789"
    assert w.stderr_tail(limit=3) == "789"
    w.log.close()
    assert w.stderr_tail() == ""


def test_a_forked_worker_its_server_did_not_end_is_killed_from_here_and_waited_for(make, monkeypatch):
    import signal
    import subprocess
    w = make()
    waits, sent = [], []

    def wait(timeout=None):                          # no exit comes while the server has not ended it
        waits.append(timeout)
        if timeout is not None:
            raise subprocess.TimeoutExpired("forked", timeout)
        w.proc.returncode = -signal.SIGKILL
        return w.proc.returncode
    w.proc.wait = wait
    monkeypatch.setattr(workers.os, "killpg", lambda pid, sig: sent.append(("group", pid, sig)))
    monkeypatch.setattr(workers.os, "kill", lambda pid, sig: sent.append(("process", pid, sig)))
    w.kill()
    assert w.proc.killed == 1 and waits == [workers.KILL_WAIT_S, None]
    assert sent == [("group", NO_PID, signal.SIGKILL), ("process", NO_PID, signal.SIGKILL)]


def test_closing_a_worker_still_starting_kills_it_and_closes_its_pipes(make):
    w = make(hello=False)
    w.close()
    assert w.proc.killed == 1 and w.proc.stdout.closed


# ---------------------------------------------------------------------------- the environment
def test_a_cpu_worker_runs_triton_interpreted_and_sees_no_gpu(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    env = worker_env("cpu", gpu="1")
    assert env["TRITON_INTERPRET"] == "1" and env["CUDA_VISIBLE_DEVICES"] == "" and env["PYTHONUNBUFFERED"] == "1"


def test_a_cuda_worker_sees_its_gpu_or_what_the_climb_sees(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert worker_env("cuda", gpu="GPU-ab")["CUDA_VISIBLE_DEVICES"] == "GPU-ab"
    env = worker_env("cuda")
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1" and "TRITON_INTERPRET" not in env
    assert env is not os.environ
