"""Rungs that overlap (issue 32, item 3): the points that start processes of their own start at
the climb's start on lanes of their own, beside rungs 1-3; their rung takes their outcomes in
its order, replayed when they fail and re-run alone when they are its first failure, as any
other point; what a lane waits for is said, in the progress line and in the report."""
import threading
import time

import pytest

from kladder.climbing.ladder import Gate, Runner, early_points, own_process
from kladder.core.outcome import Check, Finding, Load, Outcome, Replay, Status, Wait, Waited
from kladder.core.point import Point
from kladder.run.waits import Waits


def _pt(rung: int, mode: str = "eager", n: int = 3, **kw) -> Point:
    return Point("s", rung, (("N", n),), mode=mode, **kw)


class _Runner(Runner):
    """A Runner whose lane runs are scripted: `script(point, alone)` gives each run's status (no
    worker, no process); every run is recorded as (point id, fresh, thread name)."""

    def __init__(self, script, jobs: int = 2):
        from kladder.run.pool import Pool
        pool = Pool("unused", "cpu")
        pool.expect_fresh = lambda *a, **k: None          # no fork server: nothing runs for real
        super().__init__("unused", None, "cpu", jobs=jobs, pool=pool)
        self.script, self.runs = script, []

    def _on_lane(self, point, timeout, fresh, alone=False):
        self.runs.append((point.id, fresh, threading.current_thread().name))
        status = self.script(point, alone)
        findings = [Finding(Check.VALUES, "y")] if status == Status.FAILED else []
        return Outcome(point, status, findings=findings), Load()


@pytest.fixture(autouse=True)
def _no_skip(monkeypatch):
    monkeypatch.setattr("kladder.climbing.ladder.skip_note", lambda *a: None)
    monkeypatch.setattr("kladder.climbing.ladder.worker_timeout", lambda *a, **k: 60.0)


def test_an_own_process_point_runs_beside_rung_1_and_its_rung_takes_its_outcome():
    rung1_ran = threading.Event()
    jit = _pt(4, "jitcache", partner=(("dims", (("N", 1),)),))

    def script(point, alone):
        if point.mode == "jitcache":
            # it can only end while a rung-1 point runs: started early, beside rung 1, or never
            assert rung1_ran.wait(20), "the early point did not run beside rung 1"
        else:
            rung1_ran.set()
            time.sleep(0.05)
        return Status.PASSED

    runner = _Runner(script)
    runner.start_early([jit])
    firsts = list(runner.run_all([_pt(1, n=1), _pt(1, n=2)]))
    fours = list(runner.run_all([_pt(4, "reused"), jit]))
    assert [o.point for o in fours] == [_pt(4, "reused"), jit]           # the rung's order
    assert all(o.status == Status.PASSED for o in firsts + fours)
    assert [r[0] for r in runner.runs].count(jit.id) == 1                 # not run again at its rung
    assert next(r for r in runner.runs if r[0] == jit.id)[2].startswith("kladder-early")
    assert jit.id in (fours[1].repro or "") or fours[1].repro             # finished as any point (its repro)
    runner.close()


def test_on_cuda_the_profiled_points_of_every_rung_run_early_one_after_another_on_one_lane_of_their_own():
    from kladder.climbing.ladder import profiled
    indep, disp = _pt(3, "independence"), _pt(7, "dispatch")
    in_env = _pt(7, "dispatch", env=(("K", "1"),))                  # its own process profiles: an early lane's
    assert profiled(indep, "cuda") and profiled(disp, "cuda") and not profiled(in_env, "cuda")
    assert not profiled(indep, "cpu") and not profiled(_pt(1), "cuda")
    runner = _Runner(lambda p, alone: Status.PASSED, jobs=4)
    runner.device = "cuda"
    runner.pool.free_bytes = lambda: None
    runner.start_early([disp, in_env, indep])
    assert [o.point for o in runner.run_all([_pt(3, n=5), indep])] == [_pt(3, n=5), indep]
    assert [o.point for o in runner.run_all([in_env, disp])] == [in_env, disp]
    threads = {pid: name for pid, _, name in runner.runs}
    assert threads[indep.id] == threads[disp.id] and threads[indep.id].startswith("kladder-profiling")
    assert threads[in_env.id].startswith("kladder-early")
    assert [r[0] for r in runner.runs if r[2].startswith("kladder-profiling")] == [indep.id, disp.id]   # rung order
    runner.close()


def test_the_profiling_lane_keeps_its_worker_for_every_profiled_point_and_lends_it_to_no_rung(monkeypatch):
    from kladder.run.pool import Pool

    class _Lane:
        def __init__(self):
            self.ran, self.load, self.peak, self.gpu = [], Load(), None, None

        def run(self, point, timeout, fresh=False, budget_s=None):
            self.ran.append(point.id)
            return Outcome(point, Status.PASSED)

        def close(self):
            pass

    made = []
    pool = Pool("unused", "cpu")
    pool.expect_fresh = lambda *a, **k: None
    pool.lane = lambda: made.append(_Lane()) or made[-1]
    runner = Runner("unused", None, "cpu", jobs=2, pool=pool)
    monkeypatch.setattr("kladder.climbing.ladder.stage_budget", lambda *a, **k: None)
    try:
        a, b = _pt(3, "independence", n=1), _pt(3, "independence", n=2)
        assert runner._pinned(a).status == Status.PASSED and runner._pinned(b).status == Status.PASSED
        assert len(made) == 1 and made[0].ran == [a.id, b.id]           # one worker for both
        assert runner._idle == []                                      # never handed to a rung's lane
        [o] = runner.run_all([_pt(1)])
        assert len(made) == 2 and made[1].ran == [_pt(1).id]            # a rung's point: a lane of its own
    finally:
        runner.close()


def _trivial_early(device: str, rungs: tuple[int, ...]):
    import os

    from kladder.climbing.ladder import Options, plan_rungs
    from kladder.core.results import ClimbReport
    from kladder.core.sizes import budget_for
    from kladder.gen.load import load_spec
    ref = os.path.join(os.path.dirname(__file__), "specs", "trivial.py")
    spec = load_spec(ref)
    runner = _Runner(lambda p, a: Status.PASSED)
    runner.device = device
    report = ClimbReport(spec.name, ref, device)
    plan_rungs(report, rungs)
    try:
        return early_points(spec, budget_for(device), report, runner, Options(rungs=rungs))
    finally:
        runner.close()


def test_on_cuda_rung_3s_independence_points_start_early_and_on_the_cpu_they_wait_for_their_rung():
    on_cuda = _trivial_early("cuda", (1, 2, 3))
    assert on_cuda and {(p.rung, p.mode) for p in on_cuda} == {(3, "independence")}   # the profiler: off rung 3's path
    assert {p.mode for p in _trivial_early("cuda", (1, 2, 3, 7)) if p.rung == 7} >= {"dispatch", "imports"}
    assert not [p for p in _trivial_early("cpu", (1, 2, 3, 4)) if p.rung < 4]        # no profiler on the CPU
    assert not [p for p in _trivial_early("cuda", (1, 2, 4)) if p.rung < 4]          # rung 3 not climbed: none


def test_the_early_points_start_longest_first_the_cache_keys_compiles_before_a_b_a():
    order = []
    aba, key = _pt(4, "aba", partner=(("dims", (("N", 1),)),)), _pt(7, "cachekey")
    runner = _Runner(lambda p, a: order.append(p.id) or Status.PASSED, jobs=2)    # one early lane: one at a time
    runner.start_early([aba, key])
    assert [o.point for o in runner.run_all([aba])] == [aba]
    list(runner.run_all([key]))
    assert order == [key.id, aba.id]                 # rung 7's, given after rung 4's, started first
    runner.close()


def test_with_one_job_nothing_starts_early():
    jit = _pt(4, "jitcache", partner=(("dims", (("N", 1),)),))
    runner = _Runner(lambda p, alone: Status.PASSED, jobs=1)
    runner.start_early([jit])
    assert not runner._early and runner.runs == []
    list(runner.run_all([jit]))
    assert [r[0] for r in runner.runs] == [jit.id] and runner.runs[0][2] == "MainThread"
    runner.close()


def test_an_early_points_failure_is_replayed_and_as_its_rungs_first_re_run_alone_in_a_fresh_worker():
    jit = _pt(4, "jitcache", partner=(("dims", (("N", 1),)),))
    runner = _Runner(lambda p, alone: Status.FAILED)
    runner.start_early([jit])
    [o] = runner.run_all([jit])
    assert o.status == Status.FAILED and o.replay == Replay.FAILED_AGAIN
    assert [(r[0], r[1]) for r in runner.runs] == [(jit.id, False), (jit.id, False), (jit.id, True)]
    runner.close()


def test_an_early_point_that_passes_when_replayed_is_flaky():
    jit = _pt(4, "jitcache", partner=(("dims", (("N", 1),)),))
    seen = []

    def script(point, alone):
        seen.append(point)
        return Status.FAILED if len(seen) == 1 else Status.PASSED
    runner = _Runner(script)
    runner.start_early([jit])
    [o] = runner.run_all([jit])
    assert o.status == Status.FLAKY and o.replay == Replay.FLAKY
    runner.close()


def test_which_points_start_early():
    assert own_process(_pt(4, "aba"), "cpu") and own_process(_pt(4, "jitcache"), "cpu")
    assert own_process(_pt(7, "imports"), "cpu") and own_process(_pt(5, "sanitize"), "cuda")
    assert not own_process(_pt(4, "reused"), "cpu") and not own_process(_pt(5, "repeat"), "cpu")
    assert not own_process(_pt(7, "dispatch"), "cpu")                     # no environment: no process of its own
    assert own_process(_pt(7, "dispatch", env=(("K", "1"),)), "cpu")
    declared = _pt(5, "calls", kind="repeat", repeat=(("calls", 10), ("seconds", 1.0), ("declared", True)))
    assert own_process(declared, "cpu")


def test_early_points_come_from_the_rungs_climbed_from_4_on_and_none_with_a_shard():
    import os

    from kladder.climbing.ladder import Options, plan_rungs
    from kladder.gen.load import load_spec
    from kladder.core.results import ClimbReport
    from kladder.core.sizes import budget_for
    ref = os.path.join(os.path.dirname(__file__), "specs", "trivial.py")
    spec = load_spec(ref)
    runner = _Runner(lambda p, a: Status.PASSED)
    report = ClimbReport(spec.name, ref, "cpu")
    plan_rungs(report, (1, 2, 3, 4, 5, 7))
    found = early_points(spec, budget_for("cpu"), report, runner, Options(rungs=(1, 2, 3, 4, 5, 7)))
    assert {p.mode for p in found} == {"aba", "jitcache", "imports", "sanitize"}
    assert all(p.rung >= 4 for p in found)
    assert early_points(spec, budget_for("cpu"), report, runner, Options(shard=object())) == []
    runner.close()


def test_a_run_alone_and_the_lanes_it_holds_back_say_what_they_waited_for():
    waits = Waits()
    gate, in_flight, go = Gate(waits), threading.Event(), threading.Event()

    def lane(point, hold=False):
        with waits.point(point), gate.shared():
            if hold:
                in_flight.set()
                go.wait(10)

    def alone(point):
        with waits.point(point), gate.alone():
            time.sleep(0.3)                     # the held lane waits this long at least

    a = threading.Thread(target=lane, args=(_pt(4, "jitcache"), True))
    a.start()
    in_flight.wait(10)
    b = threading.Thread(target=alone, args=(_pt(1),))
    b.start()
    time.sleep(0.2)
    c = threading.Thread(target=lane, args=(_pt(2),))
    c.start()
    time.sleep(0.1)
    assert {w for w, _, _ in waits.now()} == {Wait.IN_FLIGHT, Wait.HELD}
    go.set()
    for t in (a, b, c):
        t.join(10)
    assert [w.wait for w in waits.of_rung(1)] == [Wait.IN_FLIGHT] and waits.of_rung(1)[0].seconds >= 0.2
    assert [w.wait for w in waits.of_rung(2)] == [Wait.HELD] and waits.of_rung(2)[0].seconds >= 0.2
    assert waits.of_rung(4) == [] and waits.now() == []


def test_a_lane_that_waits_for_the_fork_server_says_so(tmp_path, monkeypatch):
    import os

    from kladder.run.pool import Pool
    monkeypatch.delenv("KLADDER_FORKSERVER", raising=False)      # a server of the pool's own, starting (not the suite's)
    ref = os.path.join(os.path.dirname(__file__), "specs", "trivial.py")
    waits = Waits()
    pool = Pool(ref, "cpu")
    pool.waits = waits
    try:
        pool.start_server()
        with waits.point(_pt(4, "aba")):
            pool.take(fresh=True)
    finally:
        pool.close()
    said = {w.wait: w for w in waits.of_rung(4)}
    assert Wait.FORK_SERVER in said and said[Wait.FORK_SERVER].seconds > 0.1


def test_waits_are_in_the_progress_line_the_terminal_and_the_json():
    from rich.console import Console

    from kladder.core.results import ClimbReport, RungReport
    from kladder.report.jsonout import report_dict
    from kladder.report.progress import Progress
    from kladder.report.terminal import render_text
    report = ClimbReport("s", "s.py", "cpu")
    report.rungs = [RungReport(4, "execution modes", waits=[Waited(Wait.FORK_SERVER, 2.14), Waited(Wait.WORKER, 0.4, 2)])]
    text = render_text(report)
    assert ("rung 4: 2.1 s for the fork server to start (it imports torch and Triton once, for every new process); "
            "0.4 s for a worker to start (2 times)") in text
    assert report_dict(report)["rungs"][0]["waits"] == [{"for": "fork_server", "seconds": 2.14, "times": 1},
                                                       {"for": "worker", "seconds": 0.4, "times": 2}]
    import io
    waits = Waits()
    progress = Progress(Console(file=io.StringIO()))
    progress.watch(waits)
    assert progress.waiting_line() == ""
    with waits.point(_pt(4, "aba")), waits.on(Wait.WORKER):
        assert progress.waiting_line() == "waiting 0 s for a worker to start (r4-N=3-aba)"


def test_a_rung_whose_points_cannot_be_made_starts_nothing_early_and_raises_at_its_turn(monkeypatch):
    """A generator that raises (a spec error found at rung 7) must not end the climb before rung 1:
    its rung raises when its turn comes, as before the overlap."""
    import os

    import kladder.climbing.ladder as ladder
    from kladder.gen.load import load_spec
    from kladder.core.results import ClimbReport
    from kladder.core.sizes import budget_for
    ref = os.path.join(os.path.dirname(__file__), "specs", "trivial.py")
    spec = load_spec(ref)
    made = ladder.rung_points

    def rung_points(spec, rung, *a, **k):
        if rung == 7:
            raise ValueError("rung 7's generator failed")
        return made(spec, rung, *a, **k)
    monkeypatch.setattr(ladder, "rung_points", rung_points)
    runner = _Runner(lambda p, a: Status.PASSED)
    report = ClimbReport(spec.name, ref, "cpu")
    ladder.plan_rungs(report, (1, 4, 7))
    found = ladder.early_points(spec, budget_for("cpu"), report, runner, ladder.Options(rungs=(1, 4, 7)))
    assert {p.rung for p in found} == {4}
    runner.close()


def test_asking_whether_the_fork_server_serves_never_waits_behind_a_lane_that_waits_for_it():
    """A lane waits for the server's start (seconds of torch's import); another lane asking, or
    Ctrl-C's Pool.kill, must not wait behind it (the wait is outside the server's lock)."""
    import subprocess

    import shlex

    from kladder.run.forkclient import Server
    from kladder.run.protocol import ServerReady, to_wire
    s = Server.__new__(Server)
    s._ready, s._ended, s._lock = False, False, threading.Lock()
    ready = shlex.quote(to_wire(ServerReady()))                     # what a server says once it serves
    s.proc = subprocess.Popen(["sh", "-c", f"sleep 2; printf %s {ready}; sleep 30"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    try:
        waiter = threading.Thread(target=lambda: s.ready(20))
        waiter.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        assert s.ready() is False and time.monotonic() - t0 < 0.5
        waiter.join(20)
        assert s.ready() is True
    finally:
        s.proc.kill()
        s.proc.wait()
