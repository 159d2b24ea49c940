"""`kladder climb --ray ADDRESS`: lanes on a Ray cluster's workers (`pip install kladder[ray]`).

The seam is the lane (isolation.Lane: one point at a time on one worker process, replaced when
it dies). Each Ray lane is an actor, one a GPU (num_gpus=1: Ray sets its CUDA_VISIBLE_DEVICES)
or, on the CPU, one a CPU slot, that holds a local Pool and Lane of its own: every point still
runs in kladder's own worker process on that node, with its timeout, its process-group kill,
its crash, fault, hang and out-of-memory handling and its heap-checked re-run, exactly as on a
local lane; the actor only carries the point there and its outcome back (Outcome.to_dict,
lossless). The Runner (ladder.py) stays where the climb runs: replays, the alone re-runs (the
other lanes held back, on every node), the order of the results and the report are its own, so
a climb on Ray gives the report a local climb gives.

A lost actor (its node gone) is restarted once by Ray and its point run again there; lost again,
the climb ends with kladder's own error (exit 1, the points so far reported): never the
kernel's failure. The spec and kladder must be importable on every node at the same reference
(an installed package, or a path on a shared file system)."""
from __future__ import annotations

import contextlib
import logging
import os
import threading

from ..core.outcome import Load, Outcome
from ..core.point import Point
from . import faults
from .isolation import Lane, Pool, WorkerError, device_load

ACTOR_RESTARTS = 1          # a lost actor is started again once (its point runs again there)
INSTALL = "pip install 'kladder[ray]'"


class RayLost(RuntimeError):
    """A Ray actor (its node, its process) was lost twice: kladder's own trouble, never the kernel's."""


def _ray():
    from ..core.errors import UsageError
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray: Ray is not installed here; {INSTALL} (on every node of the cluster too)") from None
    return ray


_STATE = {"owned": False}     # this process started (or joined) Ray itself: it shuts it down at the end


def connect(address: str):
    """Ray, joined to the cluster at `address` (as ray.init takes it: auto, HOST:6379,
    ray://HOST:10001, or local: a new one-machine instance)."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    from ..core.errors import UsageError
    extra = {"include_dashboard": False} if address == "local" else {}
    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING, **extra)
    except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception when its node does not start in 30 s
        with contextlib.suppress(Exception):   # what a half-started local node left running
            ray.shutdown()
        raise UsageError(f"--ray {address!r}: Ray did not start or join a cluster there ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200]}); start one with `ray start --head` and give its address "
                         "(auto, HOST:6379, ray://HOST:10001), or --ray local for one on this machine") from None
    _STATE["owned"] = True
    return ray


def cluster_device(address: str, device: str) -> str:
    """The device a climb on the cluster uses: auto is cuda when the cluster has GPUs."""
    from ..core.errors import UsageError
    if device not in ("auto", "cpu", "cuda"):
        raise UsageError(f"--device {device!r}: use auto, cpu or cuda.")
    gpus = int(connect(address).cluster_resources().get("GPU", 0))
    if device == "cuda" and not gpus:
        raise UsageError(f"--device cuda --ray {address!r}: the cluster has no GPU; start its nodes with GPUs "
                         "(`ray start --num-gpus N`) or use --device cpu")
    return device if device != "auto" else ("cuda" if gpus else "cpu")


class LaneHost:
    """The Ray actor: a local Pool and Lane on its node (ray.remote makes it an actor)."""

    def __init__(self, ref: str, device: str):
        self.pool = Pool(ref, device, spares=1)
        self.lane = Lane(self.pool)

    def hello(self) -> dict:
        if not self.pool.hello:
            self.pool.give_back(self.pool.take())
        return self.pool.hello

    def run(self, point: dict, timeout_s: float, fresh: bool, budget_s: float | None):
        outcome = self.lane.run(Point.from_dict(point), timeout_s, fresh=fresh, budget_s=budget_s)
        # asked on the node, after the fact (ladder.Runner._on_lane says why): the device is this node's
        held = (device_load(self.lane.gpu, self.pool.pids())
                if self.pool.device == "cuda" and faults.load_sensitive(outcome) else {})
        return outcome.to_dict(), self.lane.load.facts(), held, self.pool.hello

    def close(self) -> None:
        self.lane.close()
        self.pool.close()


def absolute(ref: str) -> str:
    """A spec file's reference made absolute: a Ray worker's working folder is not this process's."""
    from ..gen.load import split_ref
    target, name = split_ref(ref)
    if not (target.endswith(".py") and os.path.isfile(target)):
        return ref                       # a module: imported from the node's installed packages
    return os.path.abspath(target) + (f"::{name}" if name else "")


class RayPool:
    """The Pool face the Runner uses, its lanes Ray actors: `slots` of them (one a GPU, or one a
    CPU slot), at most what the cluster has."""

    def __init__(self, ref: str, device: str, address: str, jobs: int | None = None):
        from ..core.errors import UsageError
        ray = self.ray = connect(address)
        resource = "GPU" if device == "cuda" else "CPU"
        have = int(ray.cluster_resources().get(resource, 0))
        if have < 1:
            raise UsageError(f"--ray {address!r}: the cluster has no {resource} for a worker")
        self.ref, self.device, self.slots = absolute(ref), device, min(jobs or have, have)
        self.cls = ray.remote(LaneHost).options(num_cpus=1, num_gpus=1 if device == "cuda" else 0,
                                                max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS)
        self._lock = threading.Lock()
        self._spare: list = []           # actors started and given to no lane yet
        self._all: list = []
        self.hello: dict = {}
        self.closed = False
        self.restarts = 0

    def warm(self, n: int = 1) -> None:
        """Start `n` actors now: each starts its first worker (torch and the spec imported) at once."""
        with self._lock:
            while not self.closed and len(self._all) < min(n, self.slots):
                a = self.cls.remote(self.ref, self.device)
                a.hello.remote()
                self._spare.append(a)
                self._all.append(a)

    def lane(self) -> "RayLane":
        with self._lock:
            if self.closed:
                raise WorkerError("the climb is shutting down")
            if not self._spare:
                a = self.cls.remote(self.ref, self.device)
                self._all.append(a)
                self._spare.append(a)
            return RayLane(self, self._spare.pop(0))

    def get(self, ref):
        """A task's result; waits in short steps so that Ctrl-C reaches the main thread at once.
        The actor's own exceptions come back as they are (a spec that cannot load: WorkerError)."""
        ray = self.ray
        while True:
            try:
                return ray.get(ref, timeout=0.25)
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.RayTaskError as e:
                cause = getattr(e, "cause", None)
                raise (cause if isinstance(cause, Exception) else RayLost(str(e))) from None
            except ray.exceptions.RayError as e:
                if self.closed:
                    raise WorkerError("the climb is shutting down") from None
                raise RayLost(f"a Ray worker was lost ({type(e).__name__}: {str(e).splitlines()[0][:200]}); its point "
                              "was not judged") from None

    def free_bytes(self) -> int | None:
        if not self.hello:
            lane = self.lane()
            self.hello = self.get(lane.actor.hello.remote())
            lane.close(keep=True)
        return self.hello.get("free_bytes")

    def expect_fresh(self, n: int, lanes: int, children: int = 0) -> None:
        """Each actor's own pool keeps a spare worker started."""

    def pids(self) -> list[int]:
        return []                        # the workers live on the nodes: their device load is asked there

    @property
    def device_name(self) -> str:
        return self.hello.get("device_name", "")

    @property
    def fingerprint(self) -> dict:
        return self.hello.get("fingerprint") or {}

    def give_back(self, actor) -> None:
        with self._lock:
            self._spare.insert(0, actor)

    def kill(self) -> None:
        """Ctrl-C: every actor killed at once; its workers die with it (isolation.hold_lifeline)."""
        with self._lock:
            self.closed = True
            actors = list(self._all)
        for a in actors:
            self.ray.kill(a, no_restart=True)

    def close(self) -> None:
        with self._lock:
            if self.closed and not self._all:
                return
            self.closed = True
            actors, self._all, self._spare = list(self._all), [], []
        pending = [a.close.remote() for a in actors]
        try:
            self.ray.wait(pending, num_returns=len(pending), timeout=10)
        finally:
            for a in actors:
                self.ray.kill(a, no_restart=True)
            if _STATE["owned"]:
                _STATE["owned"] = False
                self.ray.shutdown()


class RayLane:
    """A lane on a Ray actor: what isolation.Lane offers the Runner, run on the actor's node."""

    def __init__(self, pool: RayPool, actor):
        self.pool, self.actor = pool, actor
        self.load = Load()
        self.gpu: str | None = None
        self._held: dict = {}

    def run(self, point: Point, timeout_s: float, fresh: bool = False, budget_s: float | None = None) -> Outcome:
        out, load, self._held, hello = self.pool.get(self.actor.run.remote(point.to_dict(), timeout_s, fresh, budget_s))
        self.load = Load.from_facts(load)
        self.pool.hello = self.pool.hello or hello
        return Outcome.from_dict(out)

    def device_load(self) -> dict:
        return self._held

    def close(self, keep: bool = False) -> None:
        """The actor goes back to the pool (the pool's close ends it)."""
        self.pool.give_back(self.actor)
