"""run/ray_lanes.py against a fake Ray (the few calls it makes: cluster_resources, remote,
get with its exceptions, kill, wait, shutdown), so that the pool's and the lane's own logic is
tested without starting Ray: slots, actors handed to lanes, a lost actor named as kladder's
trouble and never the kernel's, an actor's own error passed through, the outcome carried back
losslessly; a spec's reference made absolute; Ray missing or not starting a usage error.
A climb on a real local Ray is tests/test_ray.py's."""
import os
import types

import pytest

from kladder.core.errors import UsageError, WorkerError
from kladder.core.outcome import Load, Outcome, Status
from kladder.core.point import Point
from kladder.run import faults, ray_lanes
from kladder.run.ray_lanes import RayLost, RayPool

PT = Point("copy", 1, (("N", 8),))


class GetTimeoutError(Exception):
    pass


class RayError(Exception):
    pass


class RayTaskError(RayError):
    def __init__(self, cause=None):
        super().__init__("task failed")
        self.cause = cause


class Method:
    def __init__(self, actor, name):
        self.actor, self.name = actor, name

    def remote(self, *args):
        self.actor.calls.append((self.name, args))
        return ("ref", self.actor, self.name, args)


class Actor:
    def __init__(self, ref, device):
        self.ref, self.device, self.calls = ref, device, []

    def __getattr__(self, name):
        return Method(self, name)


class FakeRay:
    def __init__(self, resources):
        self.resources, self.options, self.answers, self.killed, self.down = resources, {}, [], [], False
        self.exceptions = types.SimpleNamespace(GetTimeoutError=GetTimeoutError, RayTaskError=RayTaskError,
                                                RayError=RayError)

    def is_initialized(self):
        return True

    def cluster_resources(self):
        return self.resources

    def remote(self, cls):
        ray = self

        class Remote:
            @staticmethod
            def options(**kw):
                ray.options = kw
                return types.SimpleNamespace(remote=Actor)
        assert cls is ray_lanes.LaneHost
        return Remote

    def get(self, ref, timeout=None):
        got = self.answers.pop(0)
        if isinstance(got, BaseException):
            raise got
        return got

    def kill(self, actor, no_restart=False):
        self.killed.append((actor, no_restart))

    def wait(self, pending, num_returns, timeout):
        return pending, []

    def shutdown(self):
        self.down = True


@pytest.fixture
def ray(monkeypatch):
    fake = FakeRay({"CPU": 4.0})
    monkeypatch.setattr(ray_lanes, "_ray", lambda: fake)
    return fake


def test_the_pool_has_one_slot_a_cpu_at_most_what_the_cluster_has(ray):
    assert RayPool("m::spec", "cpu", "auto").slots == 4
    assert RayPool("m::spec", "cpu", "auto", jobs=2).slots == 2
    assert RayPool("m::spec", "cpu", "auto", jobs=9).slots == 4
    assert ray.options == {"num_cpus": 1, "num_gpus": 0, "max_restarts": 1, "max_task_retries": 1}


def test_a_cuda_pool_takes_a_gpu_an_actor_and_a_cluster_without_one_is_a_usage_error(ray):
    ray.resources = {"CPU": 8.0, "GPU": 2.0}
    assert RayPool("m::spec", "cuda", "auto").slots == 2 and ray.options["num_gpus"] == 1
    ray.resources = {"CPU": 8.0}
    with pytest.raises(UsageError, match="the cluster has no GPU for a worker"):
        RayPool("m::spec", "cuda", "HOST:6379")


def test_warm_starts_actors_up_to_the_slots_each_asked_for_its_hello_and_lanes_take_them(ray):
    p = RayPool("m::spec", "cpu", "auto", jobs=2)
    p.warm(5)
    assert len(p._all) == 2 and all(a.calls == [("hello", ())] for a in p._all)
    lanes = [p.lane(), p.lane(), p.lane()]
    assert [lane.actor for lane in lanes[:2]] == p._all[:2] and len(p._all) == 3       # a third made at need
    lanes[0].close()
    assert p.lane().actor is lanes[0].actor


def test_get_waits_through_timeouts_and_passes_an_actors_own_error_through(ray):
    p = RayPool("m::spec", "cpu", "auto")
    ray.answers = [GetTimeoutError(), GetTimeoutError(), 42]
    assert p.get("ref") == 42
    ray.answers = [RayTaskError(WorkerError("the spec does not load"))]
    with pytest.raises(WorkerError, match="does not load"):
        p.get("ref")
    ray.answers = [RayTaskError(None)]
    with pytest.raises(RayLost):
        p.get("ref")


def test_a_lost_actor_is_kladders_trouble_unless_the_climb_is_closing(ray):
    p = RayPool("m::spec", "cpu", "auto")
    ray.answers = [RayError("ActorDiedError: the node died\nmore")]
    with pytest.raises(RayLost, match=r"a Ray worker was lost \(RayError: ActorDiedError: the node died\); its point"):
        p.get("ref")
    p.closed = True
    ray.answers = [RayError("gone")]
    with pytest.raises(WorkerError, match="shutting down"):
        p.get("ref")
    with pytest.raises(WorkerError, match="shutting down"):
        p.lane()


def test_a_lane_carries_the_point_there_and_its_outcome_and_load_back(ray):
    p = RayPool("m::spec", "cpu", "auto")
    lane = p.lane()
    crash = faults.died(PT, -11, "")
    ray.answers = [(crash.to_dict(), Load(lanes=1, host_cpu_s=2.5).to_dict(whole=True), {"processes": 3},
                    {"device_name": "cpu"})]
    got = lane.run(PT, 2.0, fresh=True, budget_s=10.0)
    assert got.to_dict() == crash.to_dict() and lane.load == Load(lanes=1, host_cpu_s=2.5)
    assert lane.device_load() == {"processes": 3} and p.hello == {"device_name": "cpu"} and p.device_name == "cpu"
    assert lane.actor.calls[-1] == ("run", (PT.to_dict(), 2.0, True, 10.0))


def test_free_bytes_asks_one_actors_hello_once(ray):
    ray.resources["GPU"] = 1.0
    p = RayPool("m::spec", "cuda", "auto")
    ray.answers = [{"device_name": "H100", "free_bytes": 80}]
    assert p.free_bytes() == 80 and p.free_bytes() == 80 and ray.answers == []
    assert p.fingerprint == {} and p.pids() == []


def test_close_kills_every_actor_and_shuts_ray_down_only_when_this_process_started_it(ray, monkeypatch):
    monkeypatch.setitem(ray_lanes._STATE, "owned", False)
    p = RayPool("m::spec", "cpu", "auto")
    p.warm(2)
    actors = list(p._all)
    p.close()
    assert [a for a, _ in ray.killed] == actors and all(no for _, no in ray.killed)
    assert all(("close", ()) in a.calls for a in actors) and not ray.down
    p.close()                                               # twice: nothing more
    assert len(ray.killed) == 2
    monkeypatch.setitem(ray_lanes._STATE, "owned", True)
    q = RayPool("m::spec", "cpu", "auto")
    q.close()
    assert ray.down and ray_lanes._STATE["owned"] is False


def test_kill_kills_every_actor_at_once(ray):
    p = RayPool("m::spec", "cpu", "auto")
    p.warm(3)
    p.kill()
    assert p.closed and len(ray.killed) == 3


def test_a_spec_files_reference_is_made_absolute_and_a_modules_left_alone(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert ray_lanes.absolute("k.py::spec") == os.path.join(str(tmp_path), "k.py") + "::spec"
    assert ray_lanes.absolute("k.py") == os.path.join(str(tmp_path), "k.py")
    assert ray_lanes.absolute("kladder.zoo.softmax::spec") == "kladder.zoo.softmax::spec"
    assert ray_lanes.absolute("missing.py::spec") == "missing.py::spec"


def test_without_ray_installed_the_climb_says_how_to_install_it(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(UsageError, match=r"Ray is not installed here; pip install 'kladder\[ray\]'"):
        ray_lanes._ray()


def test_a_ray_that_does_not_start_is_a_usage_error_naming_the_address(monkeypatch):
    calls = []
    fake = types.SimpleNamespace(is_initialized=lambda: False, shutdown=lambda: calls.append("shutdown"))

    def init(**kw):
        calls.append(kw)
        raise Exception("node did not start in 30 s\ntraceback")                         # as Ray raises it
    fake.init = init
    monkeypatch.setattr(ray_lanes, "_ray", lambda: fake)
    monkeypatch.setitem(ray_lanes._STATE, "owned", False)
    with pytest.raises(UsageError, match=r"--ray 'local': Ray did not start .*\(Exception: node did not start in 30 s\)"):
        ray_lanes.connect("local")
    assert calls[0]["address"] == "local" and calls[0]["include_dashboard"] is False and calls[-1] == "shutdown"
    assert ray_lanes._STATE["owned"] is False


def test_the_lane_host_runs_a_point_on_its_nodes_lane_and_asks_the_device_only_for_a_cuda_load_sensitive_one(
        monkeypatch):
    host = ray_lanes.LaneHost.__new__(ray_lanes.LaneHost)
    ran = []
    outcome = Outcome(PT, Status.PASSED)
    host.lane = types.SimpleNamespace(run=lambda p, t, fresh, budget_s: ran.append((p, t, fresh, budget_s)) or outcome,
                                      gpu="0", load=Load(lanes=2))
    host.pool = types.SimpleNamespace(device="cuda", hello={"device_name": "x"}, pids=lambda: [1])
    monkeypatch.setattr(ray_lanes, "device_load", lambda gpu, pids: {"processes": 9})
    out, load, held, hello = host.run(PT.to_dict(), 1.0, False, None)
    assert Outcome.from_dict(out).status == Status.PASSED and ran == [(PT, 1.0, False, None)]
    assert load == Load(lanes=2).to_dict(whole=True) and held == {} and hello == {"device_name": "x"}
    host.lane.run = lambda *a, **k: faults.hang(PT, 1.0)
    assert host.run(PT.to_dict(), 1.0, False, None)[2] == {"processes": 9}
