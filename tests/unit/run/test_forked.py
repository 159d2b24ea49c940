"""run/forked.py without forking: ForkedProcess's reading of a wait status (a signal as its
negative number, an exit status as itself) with os.waitpid answered here, its timeout, its kill
of a group that is gone, the descriptors a fork closes, ForkPool's refusal of CUDA and its choice
to start a worker afresh while this process runs other threads. A forked worker itself
(ForkedWorker, _child) is a fork: tests/test_repro_debug.py runs one."""
import os
import signal
import subprocess

import pytest

from kladder.run import forked
from kladder.run.forked import ForkedProcess, ForkPool

NO_PID = 2 ** 22 + 17


def _status(monkeypatch, answers):
    calls = []

    def waitpid(pid, flags):
        calls.append((pid, flags))
        return answers.pop(0)
    monkeypatch.setattr(forked.os, "waitpid", waitpid)
    return calls


@pytest.mark.parametrize("status, code", [(signal.SIGSEGV, -signal.SIGSEGV), (signal.SIGKILL, -signal.SIGKILL),
                                          (3 << 8, 3), (0, 0)])
def test_a_wait_status_becomes_popens_returncode(monkeypatch, status, code):
    calls = _status(monkeypatch, [(0, 0), (4242, status)])
    p = ForkedProcess(4242, None, None)
    assert p.poll() is None
    assert p.poll() == code and p.returncode == code
    assert p.poll() == code and len(calls) == 2                       # known: not asked again
    assert calls[0] == (4242, os.WNOHANG)


def test_a_child_reaped_elsewhere_keeps_what_was_known():
    p = ForkedProcess(NO_PID, None, None)                             # not this process's child
    assert p.poll() is None


def test_wait_polls_until_the_end(monkeypatch):
    _status(monkeypatch, [(0, 0), (0, 0), (7, 5 << 8)])
    assert ForkedProcess(7, None, None).wait() == 5


def test_wait_raises_past_its_timeout():
    p = ForkedProcess(NO_PID, None, None)
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=0.02)


def test_killing_a_group_that_is_gone_is_quiet():
    ForkedProcess(NO_PID, None, None).kill()


def test_a_fork_closes_every_descriptor_past_stderr_but_those_kept(monkeypatch):
    closed = []
    monkeypatch.setattr(forked.os, "listdir", lambda p: ["0", "1", "2", "3", "5", "8", "9"])
    monkeypatch.setattr(forked.os, "close", closed.append)
    forked._close_others(keep={5, 9})
    assert closed == [3, 8]


def test_forked_workers_are_for_the_cpu_only():
    with pytest.raises(ValueError, match="CUDA context does not survive a fork"):
        ForkPool("spec.py", object(), "cuda", {})


def test_with_another_thread_running_a_worker_is_started_afresh_not_forked(monkeypatch):
    made = []

    class Afresh:
        def __init__(self, ref, device):
            made.append((ref, device))
    monkeypatch.setattr(forked, "Worker", Afresh)
    monkeypatch.setattr(forked, "ForkedWorker", lambda pool: pytest.fail("forked with another thread running"))
    monkeypatch.setattr(forked.threading, "active_count", lambda: 2)
    pool = ForkPool.__new__(ForkPool)                  # its __init__ probes Triton's interpreter: not here
    pool.ref, pool.device, pool._all = "spec.py", "cpu", []
    w = pool._start()
    assert made == [("spec.py", "cpu")] and pool._all == [w]
    pool.start_server()                                # no server: every worker is a fork already
