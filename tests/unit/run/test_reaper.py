"""run/reaper.py on a fake /proc: the process tree below a root (children first, zombies and
unreadable entries left out, names with spaces and brackets), the kill rounds, and the
subreaper's refusal off Linux. No process is started or killed."""
import io

import pytest

from kladder.run import reaper


def _stat(pid, name, state, ppid):
    return f"{pid} ({name}) {state} {ppid} 1 1 0 -1".encode()


@pytest.fixture
def tree(monkeypatch):
    stats = {}
    monkeypatch.setattr(reaper.os, "listdir", lambda p: [*map(str, stats), "self", "meminfo"])

    def fake_open(path, mode="r", *a, **k):
        pid = int(path.split("/")[2])
        if stats.get(pid) is None:
            raise FileNotFoundError(path)
        return io.BytesIO(stats[pid])
    monkeypatch.setattr(reaper, "open", fake_open, raising=False)
    return stats


def test_descendants_are_every_process_below_the_root_and_nothing_beside_it(tree):
    tree.update({10: _stat(10, "worker", "S", 1), 11: _stat(11, "cc1 (x) y", "R", 10),
                 12: _stat(12, "daemon) S 10", "S", 11), 13: _stat(13, "helper", "S", 10),
                 20: _stat(20, "other", "S", 1), 21: _stat(21, "otherkid", "S", 20)})
    found = reaper.descendants(10)
    assert sorted(found) == [11, 12, 13]
    assert found.index(11) < found.index(12)                   # a child before its own children
    assert reaper.descendants(13) == [] and reaper.descendants(99) == []


def test_zombies_and_processes_gone_meanwhile_are_left_out(tree):
    tree.update({10: _stat(10, "w", "S", 1), 11: _stat(11, "dead", "Z", 10), 12: None,
                 13: _stat(13, "alive", "S", 10)})
    assert reaper.descendants(10) == [13]


def test_no_proc_means_no_descendants(monkeypatch):
    def gone(p):
        raise FileNotFoundError(p)
    monkeypatch.setattr(reaper.os, "listdir", gone)
    assert reaper.descendants(1) == []


def test_end_descendants_kills_round_after_round_until_none_is_left(monkeypatch):
    rounds = [[11, 12], [13], []]
    killed = []
    monkeypatch.setattr(reaper, "descendants", lambda root: rounds.pop(0))
    monkeypatch.setattr(reaper.os, "kill", lambda pid, sig: killed.append((pid, sig)))
    monkeypatch.setattr(reaper.time, "sleep", lambda s: None)
    assert reaper.end_descendants(10) == 3
    assert killed == [(11, reaper.signal.SIGKILL), (12, reaper.signal.SIGKILL), (13, reaper.signal.SIGKILL)]
    assert rounds == []


def test_a_process_already_gone_is_not_counted_and_the_rounds_are_bounded(monkeypatch):
    def kill(pid, sig):
        if pid == 12:
            raise ProcessLookupError(pid)
    monkeypatch.setattr(reaper, "descendants", lambda root: [11, 12])      # one that never dies
    monkeypatch.setattr(reaper.os, "kill", kill)
    monkeypatch.setattr(reaper.time, "sleep", lambda s: None)
    assert reaper.end_descendants(10, rounds=4) == 4


def test_the_subreaper_is_linuxs_only(monkeypatch):
    monkeypatch.setattr(reaper.sys, "platform", "darwin")
    assert reaper.subreaper() is False


def test_a_libc_without_prctl_is_no_subreaper(monkeypatch):
    import ctypes
    monkeypatch.setattr(reaper.sys, "platform", "linux")

    def no_libc(*a, **k):
        raise OSError("no libc")
    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert reaper.subreaper() is False
