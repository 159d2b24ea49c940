"""Every process a kernel starts ends with its worker (issue 36, item 5): a kernel that forks a
child and a daemon (setsid, its parent gone) at every call leaves no process behind when its
climb ends, is interrupted, or is killed with SIGKILL (the workers' lifeline)."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(__file__)
FORKING = os.path.join(HERE, "specs", "forking.py")


def _pids(path) -> list[int]:
    try:
        return [int(x) for x in open(path).read().split()]
    except (OSError, ValueError):
        return []


def _alive(pids: list[int]) -> list[int]:
    """The pids still running (a zombie has ended), each killed so that none outlives the test."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    alive.append(pid)
        except OSError:
            pass
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


def _climb(tmp_path, tag: str) -> tuple[subprocess.Popen, str]:
    pids = str(tmp_path / f"{tag}.pids")
    p = subprocess.Popen([sys.executable, "-m", "kladder.tools.cli", "climb", FORKING, "--device", "cpu", "--rungs", "1",
                          "-j", "1", "--no-history", "--color", "never", "--json", str(tmp_path / f"{tag}.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
                         env={**{k: v for k, v in os.environ.items() if k != "KLADDER_FORKSERVER"}, "KLT_PIDS": pids},
                         start_new_session=True)   # its own fork server, as a user's climb has: not the suite's
    return p, pids


def test_a_forking_kernels_processes_end_with_its_climb(tmp_path):
    ended, ended_pids = _climb(tmp_path, "ended")
    killed, killed_pids = _climb(tmp_path, "killed")
    deadline = time.monotonic() + 300
    while len(_pids(killed_pids)) < 2 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    killed.kill()                                   # SIGKILL mid-point: the workers' lifeline ends them
    _, err = ended.communicate(timeout=600)
    killed.communicate(timeout=60)
    assert ended.returncode == 0, err[-3000:]
    time.sleep(1.0)                                 # the lifeline's kill is the worker's to do, after its parent died
    assert len(_pids(ended_pids)) == 6 and len(_pids(killed_pids)) >= 2
    assert _alive(_pids(ended_pids)) == [], "a kernel's process outlived its climb"
    assert _alive(_pids(killed_pids)) == [], "a kernel's process outlived its SIGKILLed climb"


def test_descendants_are_found_wherever_they_went():
    from kladder.run.reaper import descendants, end_descendants
    p = subprocess.Popen([sys.executable, "-c", "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
                          "time.sleep(60)"])
    try:
        deadline = time.monotonic() + 30
        while len(descendants(p.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        below = descendants(p.pid)
        assert len(below) == 1
        assert end_descendants(p.pid) == 1 and descendants(p.pid) == []
        assert p.poll() is None                      # the root itself is left to its owner
    finally:
        p.kill()
        p.wait()
