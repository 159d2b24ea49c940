"""run/pool.py's bookkeeping with fake workers (pool.Worker replaced by a small class that
starts nothing): spares started ahead and handed out, fresh points' workers started one ahead,
nothing started while the fork server is on its way, a device that refuses a context retried
with a new worker, retiring, closing and killing, and a Lane's handling of a dead worker, a
fresh point and a lost fork server."""
import pytest

from kladder.core.errors import WorkerError
from kladder.core.outcome import Check, Load, Outcome, Status
from kladder.core.point import Point
from kladder.run import devicestart, faults, forkclient, pool as pool_mod
from kladder.run.devicestart import DeviceStartError
from kladder.run.forkclient import ServerLost
from kladder.run.pool import Lane, Pool, child_processes
from kladder.run.protocol import Hello

PT = Point("copy", 1, (("N", 8),))


class FakeProc:
    def __init__(self, pid):
        self.pid, self.code = pid, None

    def poll(self):
        return self.code


class FakeWorker:
    """What Pool and Lane use of a Worker; `script`: what each run gives ((outcome, alive) or an exception)."""
    made: list = []
    script: list = []
    refusals = 0

    def __init__(self, ref, device, gpu=None, server=None, extra_env=None):
        self.ref, self.device, self.gpu, self.server = ref, device, gpu, server
        self.proc = FakeProc(1000 + len(FakeWorker.made))
        self._hello = None
        self.closed = self.killed = False
        self.load, self.peak, self.ran = Load(lanes=len(FakeWorker.made)), {"kernel": [1, None]}, []
        FakeWorker.made.append(self)

    def ready(self):
        if FakeWorker.refusals:
            FakeWorker.refusals -= 1
            raise DeviceStartError("starting a worker's CUDA context", "out of memory", self.gpu)
        self._hello = self._hello or Hello(device_name="fake", free_bytes=123)
        return self._hello

    def run(self, point, timeout_s, budget_s=None, forkserver=None):
        self.ran.append((point, timeout_s, budget_s, forkserver))
        got = FakeWorker.script.pop(0)
        if isinstance(got, Exception):
            raise got
        return got

    def close(self):
        self.closed = True
        self.proc.code = 0

    def kill(self):
        self.killed = True
        self.proc.code = -9


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    FakeWorker.made, FakeWorker.script, FakeWorker.refusals = [], [], 0
    monkeypatch.setattr(pool_mod, "Worker", FakeWorker)
    monkeypatch.delenv("KLADDER_FORKSERVER", raising=False)
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {"free_bytes": None, "total_bytes": None,
                                                                       "holders": None})
    monkeypatch.setattr(devicestart, "_sleep", lambda s, stop: None)
    servers.clear()
    monkeypatch.setattr(forkclient, "Server", ReadyServer)      # never a real fork server
    return FakeWorker


servers: list = []


class StartingServer:
    """A fork server still importing: not ready, its process alive."""
    address = "/sock"

    def __init__(self):
        self.proc = FakeProc(1)
        self.up = False
        self.closed = False

    def ready(self, wait_s=0.0):
        return self.up

    def close(self):
        self.closed = True


class ReadyServer(StartingServer):
    """A fork server as start_server makes one (forkclient.Server's face), serving at once."""

    def __init__(self, env, label=""):
        super().__init__()
        self.env, self.label, self.up = env, label, True
        servers.append(self)


# ---------------------------------------------------------------------------- spares
def test_prefetch_starts_at_most_the_spares_and_take_hands_them_out_first():
    p = Pool("spec.py", "cpu", spares=2, gpus=["0", "1"])
    p.prefetch(5)
    assert len(FakeWorker.made) == 2 and [w.gpu for w in FakeWorker.made] == ["0", "1"]   # round robin over gpus
    first = p.take()
    assert first is FakeWorker.made[0] and len(FakeWorker.made) == 2
    assert p.hello == Hello(device_name="fake", free_bytes=123).facts() and p.device_name == "fake"
    assert p.hello["free_bytes"] == 123 and p.fingerprint == {}
    p.take()
    third = p.take()                                      # no spare left: a new one
    assert third is FakeWorker.made[2] and third.gpu == "0"


def test_no_spares_still_prefetches_one():
    p = Pool("spec.py", "cpu", spares=0)
    p.prefetch(3)
    assert len(FakeWorker.made) == 1


def test_taking_for_a_fresh_point_starts_the_next_fresh_points_worker():
    p = Pool("spec.py", "cpu", spares=1)
    p.expect_fresh(3, lanes=1)                            # fresh points to come: the fork server starts
    assert [s.label for s in servers] == ["spec.py"] and servers[0].env["TRITON_INTERPRET"] == "1"
    assert len(FakeWorker.made) == 1 and FakeWorker.made[0].server is servers[0]
    p.take(fresh=True)
    assert len(FakeWorker.made) == 2 and p._fresh_left == 2
    p.take(fresh=True)
    p.take(fresh=True)
    assert p._fresh_left == 0 and len(FakeWorker.made) == 3     # the last one starts none ahead


def test_a_reserve_keeps_one_worker_started_beyond_the_lanes_for_an_unforeseen_fresh_need():
    """A GPU pool (session: reserve=1 on a host with the cores): warm starts the lanes' workers and
    the reserve; every take that leaves fewer spares than the reserve starts one, so a rung's first
    failure, run alone in a fresh worker, takes one already started."""
    p = Pool("spec.py", "cuda", spares=2, reserve=1)
    p.warm(3)
    assert len(FakeWorker.made) == 3
    lanes = [p.take(), p.take()]
    assert len(FakeWorker.made) == 3 and p.spares_started == 1         # the reserve still there
    fresh = p.take(fresh=True)                                         # nothing foretold it
    assert fresh is FakeWorker.made[2] and fresh not in lanes
    assert len(FakeWorker.made) == 4 and p.spares_started == 1         # the next one already starting
    p.take()
    assert len(FakeWorker.made) == 5 and p.spares_started == 1


def test_without_a_reserve_a_take_starts_nothing_ahead():
    p = Pool("spec.py", "cuda", spares=2)
    p.warm(3)
    assert len(FakeWorker.made) == 2                                    # the spares only
    p.take(), p.take(), p.take(fresh=True)
    assert len(FakeWorker.made) == 3 and p.spares_started == 0


def test_a_reserve_waits_for_a_fork_server_on_its_way():
    server = StartingServer()
    p = Pool("spec.py", "cuda", spares=1, server=server, reserve=1)
    server.up = True
    p.take()
    assert len(FakeWorker.made) == 2 and p.spares_started == 1
    server.up = False                                                  # (another start under way)
    p.take()
    assert len(FakeWorker.made) == 2 and p.spares_started == 0


def test_nothing_is_started_ahead_while_the_fork_server_is_starting():
    server = StartingServer()
    p = Pool("spec.py", "cpu", spares=2, server=server)
    p.prefetch(2)
    assert FakeWorker.made == []
    server.up = True
    p.prefetch(2)
    assert len(FakeWorker.made) == 2 and all(w.server is server for w in FakeWorker.made)
    assert p.server_address() == "/sock"


def test_a_closed_pool_hands_out_nothing():
    p = Pool("spec.py", "cpu")
    p.close()
    with pytest.raises(WorkerError, match="shutting down"):
        p.take()


def test_a_device_that_refuses_a_context_gets_a_new_worker_until_it_takes_one(monkeypatch):
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_S", 1000.0)
    FakeWorker.refusals = 2
    p = Pool("spec.py", "cuda")
    w = p.take()
    assert len(FakeWorker.made) == 3 and w is FakeWorker.made[2]
    assert FakeWorker.made[0].closed and FakeWorker.made[1].closed and p._all == [w]


def test_a_device_that_keeps_refusing_ends_in_device_start_error(monkeypatch):
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_S", 0.0)
    FakeWorker.refusals = 100
    with pytest.raises(DeviceStartError, match="out of memory"):
        Pool("spec.py", "cuda").take()


# ---------------------------------------------------------------------------- the pool's end
def test_close_closes_every_worker_and_only_its_own_server():
    given = StartingServer()
    p = Pool("spec.py", "cpu", spares=2, server=given)
    given.up = True
    p.prefetch(2)
    p.close()
    assert all(w.closed for w in FakeWorker.made) and not given.closed and p.server is None
    own = Pool("spec.py", "cpu")
    own.server = StartingServer()                        # as start_server would make it
    own.close()
    assert own.closed


def test_kill_kills_every_worker_and_pids_lists_the_live_ones():
    p = Pool("spec.py", "cpu", spares=3)
    p.prefetch(3)
    FakeWorker.made[1].proc.code = 0
    assert p.pids() == [1000, 1002]
    p.kill()
    assert p.closed and all(w.killed for w in FakeWorker.made) and p.pids() == []


def test_retire_closes_and_forgets_a_worker_and_give_back_makes_it_the_next_taken():
    p = Pool("spec.py", "cpu")
    a, b = p.take(), p.take()
    p.retire(a)
    assert a.closed and p._all == [b]
    p.give_back(b)
    assert p.take() is b


def test_free_bytes_asks_one_worker_and_keeps_it_as_a_spare():
    p = Pool("spec.py", "cuda")
    assert p.free_bytes() == 123 and p._spare == FakeWorker.made and len(FakeWorker.made) == 1
    assert p.free_bytes() == 123 and len(FakeWorker.made) == 1


def test_a_rung_without_fresh_points_or_children_starts_no_server():
    p = Pool("spec.py", "cpu")
    p.expect_fresh(0, lanes=2)
    assert servers == [] and FakeWorker.made == []
    p.expect_fresh(0, lanes=2, children=3)
    assert len(servers) == 1
    p.start_server()                                      # once
    assert len(servers) == 1
    p.close()
    assert servers[0].closed


def test_the_environment_names_the_server_once_at_the_pools_start(monkeypatch):
    monkeypatch.setenv("KLADDER_FORKSERVER", "/tmp/the-suites-socket")
    p = Pool("spec.py", "cpu")
    assert p.server.address == "/tmp/the-suites-socket" and not p._own_server
    monkeypatch.setenv("KLADDER_FORKSERVER", "0")
    off = Pool("spec.py", "cpu")
    off.start_server()
    assert off.server is None
    monkeypatch.setenv("KLADDER_FORKSERVER", "always")
    always = Pool("spec.py", "cpu")
    assert always.server is servers[0] and always._own_server


def test_child_processes_are_the_modes_count():
    assert child_processes(PT, "cpu") == 0
    assert child_processes(Point("copy", 7, (("N", 8),), mode="flags", variant="config"), "cpu") >= 1


# ---------------------------------------------------------------------------- lanes
def _passed():
    return Outcome(PT, Status.PASSED)


def test_a_lane_keeps_its_worker_between_points_and_replaces_a_dead_one(monkeypatch):
    monkeypatch.setattr(pool_mod, "heap_checked_rerun", lambda *a: pytest.fail("no heap check for a hang"))
    p = Pool("spec.py", "cpu")
    lane = Lane(p)
    FakeWorker.script = [(_passed(), True), (faults.hang(PT, 1.0), False), (_passed(), True)]
    lane.run(PT, 1.0)
    first = lane.worker
    assert lane.run(PT, 1.0, budget_s=9.0).headline.check == Check.HANG
    assert first.closed and lane.worker is None and p.restarts == 1
    assert first.ran[1] == (PT, 1.0, 9.0, None)
    lane.run(PT, 1.0)
    assert lane.worker is not first and lane.ran == 1 and lane.load == lane.worker.load


def test_a_crash_like_heap_damage_is_rerun_heap_checked_with_the_points_run_before_it(monkeypatch):
    seen = []
    monkeypatch.setattr(pool_mod, "heap_checked_rerun", lambda pool, s, timeout_s: seen.append(s) or "checked")
    lane = Lane(Pool("spec.py", "cpu"))
    FakeWorker.script = [(_passed(), True), (_passed(), True), (faults.died(PT, -6, ""), False)]
    lane.run(PT, 1.0)
    lane.run(PT, 1.0)
    assert lane.run(PT, 1.0) == "checked" and seen[0].earlier == 2 and not seen[0].alive


def test_a_fresh_point_runs_in_a_worker_of_its_own_retired_after_it():
    p = Pool("spec.py", "cpu")
    lane = Lane(p)
    FakeWorker.script = [(_passed(), True)]
    assert lane.run(PT, 1.0, fresh=True).status == Status.PASSED
    w = FakeWorker.made[0]
    assert w.closed and lane.worker is None and lane.peak == w.peak and p._all == []


def test_a_lost_fork_server_runs_the_point_again_in_a_worker_started_afresh():
    p = Pool("spec.py", "cpu")
    lane = Lane(p)
    FakeWorker.script = [ServerLost("gone"), (_passed(), True)]
    assert lane.run(PT, 1.0).status == Status.PASSED
    lost, plain = FakeWorker.made
    assert lost.closed and lane.worker is plain and plain.server is None and plain.ran[0][3] is None
    FakeWorker.script = [ServerLost("gone"), (_passed(), True)]
    assert lane.run(PT, 1.0, fresh=True).status == Status.PASSED


def test_closing_a_lane_retires_its_worker():
    p = Pool("spec.py", "cpu")
    lane = Lane(p)
    FakeWorker.script = [(_passed(), True)]
    lane.run(PT, 1.0)
    w = lane.worker
    lane.close()
    assert w.closed and lane.worker is None and p._all == []


def test_a_workers_start_the_device_refused_is_counted_as_a_wait_for_the_device(monkeypatch):
    from kladder.core.outcome import Wait
    from kladder.run import waits as waits_mod
    clock = iter(range(0, 10_000, 1))                       # every reading a second later: no wait under MIN_S
    monkeypatch.setattr(waits_mod.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_S", 1e9)
    p = Pool("spec.py", "cuda")
    p.waits = waits_mod.Waits()
    p.take()
    starts = {w.wait: w.times for w in p.waits.of_rung(0) if w.wait != Wait.FORK_SERVER}
    assert starts == {Wait.WORKER: 1}
    FakeWorker.refusals = 1
    p.take()
    starts = {w.wait: w.times for w in p.waits.of_rung(0) if w.wait != Wait.FORK_SERVER}
    assert starts == {Wait.WORKER: 1, Wait.DEVICE: 1}      # the start that was refused waited for the device
