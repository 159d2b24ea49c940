"""The watchdog times the kernel, not kladder (issue 19): each stage of a point is timed and
named to the parent; a kernel silent past the timeout hangs, a stage of kladder's own past its
budget is not judged; a point that hangs, crashes or runs out of memory while other work uses
the host or the device is re-run alone before it is blamed."""
import dataclasses
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from conftest import report_json, run_cli
from kladder.core.outcome import Check, Load, Note, NoteKind, Outcome, Stage, Status
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.run import faults

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "specs")


def _points(path):
    return {p["id"]: p for p in report_json(path)["rungs"][0]["points"]}


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    out = tmp_path_factory.mktemp("slow") / "r.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", os.path.join(SPECS, "slow_stages.py"), "--rungs",
                        "1", "--device", "cpu", "--timeout", "1", "--json", str(out), "--log", str(out) + "l"],
                       capture_output=True, text=True, timeout=300)
    return p, _points(out)


def test_a_slow_reference_is_not_judged_and_named(slow):
    p, points = slow
    o = points["r1-N=3"]
    assert o["status"] == "not_judged" and o["failure"] is None
    assert o["note"]["kind"] == "stage_overrun" and o["note"]["facts"]["stage"] == "reference"
    assert o["note"]["facts"]["budget_s"] == 5.0 and o["note"]["facts"]["seconds"] >= 5.0
    assert "the float64 reference, was still running after" in o["reason"] and "at 6 elements" in o["reason"]
    assert o["stages"]["reference"] >= 5.0
    assert "NOT JUDGED r1-N=3: kladder's own stage, the float64 reference" in p.stdout
    assert p.returncode == 1                   # could not be judged: not a pass


def test_a_slow_kernel_is_a_hang(slow):
    _, points = slow
    o = points["r1-N=5"]
    assert o["status"] == "failed" and o["failure"] == "hang"
    assert o["stages"]["kernel"] >= 1.0
    assert "the kernel's calls did not finish within 1 s" in o["findings"][0]["message"]
    if o["under_load"] is not None:            # the host was busy: re-run alone, it hung there too
        assert o["under_load"]["alone"] == "failed"


def test_every_point_carries_its_stage_times(slow):
    _, points = slow
    for pid in ("r1-N=1", "r1-N=2", "r1-N=4", "r1-N=6"):
        o = points[pid]
        assert o["status"] == "passed"
        assert {"inputs", "kernel", "reference", "checks"} <= set(o["stages"])
        assert sum(o["stages"].values()) <= o["seconds"] + 1e-3


HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    path, hold, gib, linger = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    if gib:                                            # and hold device memory, as another climb would
        import torch
        held = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
    f = open(path, "a")
    fcntl.flock(f, fcntl.LOCK_EX)
    open(path + ".held", "w").close()
    end = None
    while end is None or time.monotonic() < end:      # busy the host until the point has waited hold s
        if end is None and os.path.exists(path + ".tried"):
            end = time.monotonic() + hold
        sum(range(10000))
    fcntl.flock(f, fcntl.LOCK_UN)
    time.sleep(linger)                                 # still on the device while the climb looks
""")


def _under_lock(tmp_path, monkeypatch, device: str, gib: int = 0):
    """The lock-waiting point run as a climb runs it, while another process holds the lock and
    keeps the host busy (and, with `gib`, holds that much device memory); the holder lets go
    `timeout` + 0.5 s after the point began to wait, so the run alone passes."""
    from kladder.climbing.ladder import Runner, rung_points
    from kladder.gen.load import load_spec
    from kladder.core.sizes import budget_for
    ref = os.path.join(SPECS, "lock_wait.py")
    spec = load_spec(ref)
    (point,) = [p for p in rung_points(spec, 1, budget_for(device)) if p.id == "r1-N=4"]
    lock, timeout = tmp_path / "device.lock", 2.0
    monkeypatch.setenv("KLADDER_TEST_LOCK", str(lock))
    runner = Runner(ref, spec, device, timeout_s=timeout)
    runner.pool.warm(1)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(timeout + 0.5), str(gib), str(30 if gib else 0)])
    try:
        for _ in range(1200):
            if (tmp_path / "device.lock.held").exists():
                break
            time.sleep(0.05)
        o = runner.run(point)
    finally:
        holder.kill()
        holder.wait()
        runner.close()
    assert (tmp_path / "device.lock.tried").exists()          # the point did wait on the lock
    return o


def _passed_alone_with_the_warning(o, tmp_path):
    from kladder.report.jsonout import dumps, outcome_dict
    assert o.status == Status.PASSED, o
    assert o.load is not None and o.load.alone == Status.PASSED
    (w,) = [w for w in o.warnings if w.check == Check.UNDER_LOAD]
    assert w.facts.first == "hang"
    log = tmp_path / "l.jsonl"
    log.write_text(dumps({"record": "point", "run_id": "20261201-000000-1-abcd", **outcome_dict(o)}) + "\n")
    (rec,) = report_json(log)
    assert rec["status"] == "passed" and rec["under_load"]["alone"] == "passed" and rec["stages"]["kernel"] > 0
    assert rec["warnings"][0].startswith("hung under load (") and "passed alone in" in rec["warnings"][0]
    return rec


def test_a_hang_under_load_that_passes_alone_is_a_warning(tmp_path, monkeypatch):
    o = _under_lock(tmp_path, monkeypatch, "cpu")
    rec = _passed_alone_with_the_warning(o, tmp_path)
    assert o.load.host_cpu_s > 0 and "other processes used" in rec["warnings"][0]


NO_CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA: the watchdog and the device's process list")


@NO_CUDA
def test_on_cuda_a_hang_while_another_process_holds_the_device_passes_alone(tmp_path, monkeypatch):
    o = _under_lock(tmp_path, monkeypatch, "cuda", gib=8)
    rec = _passed_alone_with_the_warning(o, tmp_path)
    assert o.load.processes >= 1 and o.load.device_used_bytes >= 8 << 30
    assert "other process" in rec["warnings"][0] and "in use by others" in rec["warnings"][0]


@NO_CUDA
def test_on_cuda_a_slow_reference_is_not_judged_and_a_slow_kernel_hangs(tmp_path):
    out = tmp_path / "r.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", os.path.join(SPECS, "slow_stages.py"), "--rungs",
                        "1", "--device", "cuda", "--timeout", "2", "--json", str(out), "--log", str(out) + "l"],
                       capture_output=True, text=True, timeout=600)
    points = _points(out)
    assert points["r1-N=3"]["status"] == "not_judged" and points["r1-N=3"]["note"]["facts"]["stage"] == "reference"
    assert points["r1-N=5"]["status"] == "failed" and points["r1-N=5"]["failure"] == "hang"
    assert all(points[i]["status"] == "passed" and points[i]["stages"]["kernel"] > 0
               for i in ("r1-N=1", "r1-N=2", "r1-N=4", "r1-N=6"))
    assert p.returncode == 1


# ---------------------------------------------------------------------------- what each result becomes
PT = Point("s", 1, (("N", 4),))


def _hang():
    return faults.hang(PT, 1.0)


def _oom(kind=NoteKind.KERNEL_OOM):
    return Outcome(PT, Status.OOM, note=Note.of(kind, call="", text="CUDA out of memory"))


def test_failing_alone_too_stands():
    out = faults.under_load(_hang(), _hang(), Load(lanes=2))
    assert out.status == Status.FAILED and out.headline.check == Check.HANG and out.load.alone == Status.FAILED


def test_an_oom_that_passes_alone_is_not_judged_the_device_was_full():
    out = faults.under_load(_oom(), Outcome(PT, Status.PASSED, seconds=2.9), Load(processes=3))
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.DEVICE_FULL
    assert out.note.facts.alone == "passed" and out.note.facts.processes == 3


def test_an_oom_while_others_hold_the_memory_is_not_judged_even_alone():
    held = Load(processes=2, device_used_bytes=100 << 30, device_total_bytes=140 << 30)
    out = faults.under_load(_oom(), _oom(), held)
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.DEVICE_FULL
    assert faults.under_load(_oom(), _oom(), Load(lanes=1)).status == Status.OOM   # alone, nobody's memory: its own


def test_not_judged_is_not_a_pass_nor_a_failure():
    o = Outcome(PT, Status.NOT_JUDGED, note=Note.of(NoteKind.STAGE_OVERRUN, stage="peers", seconds=131.0,
                                                                    budget_s=600.0, timeout_s=120.0))
    rr = RungReport(1, "shapes", [o, Outcome(PT, Status.PASSED)])
    rep = ClimbReport("s", "ref", "cpu", rungs=[rr])
    assert rr.verdict == "incomplete" and rep.exit_code == 1 and rep.lowest_failing_rung is None and not rep.failures


def test_stages_and_load_survive_the_pipe():
    o = Outcome(PT, Status.PASSED, stages={Stage.KERNEL: 0.5, Stage.PEERS: 2.0},
                load=Load(lanes=1, host_cpu_s=1.5, seconds=2.0, alone=Status.PASSED, alone_s=0.3))
    back = Outcome.from_dict(o.to_dict())
    assert back.stages == o.stages and back.load == o.load


def test_a_segfault_under_load_that_passes_alone_is_flaky_not_cleared():
    crash = faults.died(PT, -11, "")
    out = faults.under_load(crash, Outcome(PT, Status.PASSED), Load(lanes=1))
    assert out.status == Status.FLAKY and out.headline.check == Check.CRASHED and out.load.alone == Status.PASSED
    killed = faults.died(PT, -9, "")                # the host's OOM killer: others' memory can cause it
    assert faults.under_load(killed, Outcome(PT, Status.PASSED), Load(lanes=1)).status == Status.PASSED


def test_rung5s_own_watchdog_is_not_re_run():
    watched = _hang()
    watched.headline.facts = dataclasses.replace(watched.headline.facts, watchdog=True)   # a rung-5 batch that outlived 50x its calls' own time
    assert not faults.load_sensitive(watched) and faults.load_sensitive(_hang()) and faults.load_sensitive(_oom())


def test_a_run_alone_waits_for_the_points_in_flight_and_holds_the_others_back():
    import threading

    from kladder.climbing.ladder import Gate
    gate, order = Gate(), []
    in_flight, go = threading.Event(), threading.Event()

    def lane(name, hold=None):
        with gate.shared():
            order.append(f"{name} in")
            if hold:
                in_flight.set()
                go.wait(10)
            order.append(f"{name} out")

    def alone():
        with gate.alone():
            order.append("alone")

    a = threading.Thread(target=lane, args=("a", True))
    a.start()
    in_flight.wait(10)
    b = threading.Thread(target=alone)
    b.start()
    time.sleep(0.2)                            # b waits for a; a new lane must wait for b
    c = threading.Thread(target=lane, args=("c",))
    c.start()
    time.sleep(0.2)
    assert order == ["a in"]
    go.set()
    for t in (a, b, c):
        t.join(10)
    assert order == ["a in", "a out", "alone", "c in", "c out"]


def test_points_in_flight_are_told_apart_by_identity_not_by_their_counts():
    """Two points in flight may hold equal counts of other busy lanes: ending one must not end
    the other (list.remove compares by value: on the H200, with four lanes, a climb ended in
    'list.remove(x): x not in list')."""
    from kladder.climbing.ladder import Runner
    from kladder.run.isolation import Pool
    runner = Runner(os.path.join(SPECS, "lock_wait.py"), None, "cpu", pool=Pool("unused", "cpu"))
    a = runner._began()
    b = runner._began()                  # a and b: one other lane each, equal counts
    runner._ended(b)
    c = runner._began()
    d = runner._began()                  # a, c, d in flight: two others each
    for seen in (a, c, d):
        runner._ended(seen)
    assert runner._running == [] and (a, b, c, d) == ([2], [1], [2], [2])
