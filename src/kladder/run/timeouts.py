"""How long a point may take: the one timeout rule (point_timeout), a model point's and a mode's
own processes' share on top (worker_timeout), and the budget of kladder's own stages
(stage_budget), which the parent's watchdog (workers.Worker.run) gives each stage the worker
names as it begins (run/stages.py)."""
from __future__ import annotations

from ..core.point import Point
from . import modes

STARTUP_TIMEOUT_S = 600.0       # a worker's start (its hello), the fork server's
DEFAULT_TIMEOUT_S = {"cpu": 120.0, "cuda": 120.0}


# A model point runs the whole model (prefill and decode, thousands of kernel calls): on a
# loaded 2-core machine the interpreter needed more than 120 s for one, and a correct kernel
# was reported as a hang. Its timeout is this many times a point's.
MODEL_TIMEOUT_FACTOR = 5


def point_timeout(spec, device: str, given: float | None = None, point: Point | None = None) -> float:
    """The one timeout rule: what the user gave (--timeout), else the spec's, else the device's
    default; a model point gets MODEL_TIMEOUT_FACTOR times that."""
    base = given or spec.timeout_s or DEFAULT_TIMEOUT_S[device]
    return base * MODEL_TIMEOUT_FACTOR if point is not None and point.kind == "model" else base


# Modes that start processes of their own (base.Mode.child_processes: a new Python importing torch,
# Triton and the spec before it calls anything): each allowed CHILD_TIMEOUT_FACTOR point timeouts.
CHILD_TIMEOUT_FACTOR = 3


def child_timeout(spec, device: str) -> float:
    """How long one child process of a mode may run (its start-up included)."""
    return point_timeout(spec, device) * CHILD_TIMEOUT_FACTOR


def worker_timeout(spec, device: str, point: Point, given: float | None = None) -> float:
    """How long the parent waits for a point's answer: the point's timeout, and each child
    process's on top for the modes that start them (a start-up is not a hang)."""
    return point_timeout(spec, device, given, point) + modes.traits(point.mode).child_processes * child_timeout(spec, device)


# The watchdog times the kernel, not kladder. The worker names each stage of a point as it begins
# (run/stages.py); the timeout above covers the kernel's stage (its calls, synchronized, and the
# mode's work between them). kladder's own stages (building the inputs, the float64 reference,
# the honest peer's draws, the checks) get KLADDER_STAGE_FACTOR times the point's timeout each:
# at a big point they run a float64 reference, perhaps on the host, and up to 16 perturbed draws
# of it, many times a kernel call of milliseconds. One past its budget is not judged, naming the
# stage and its time, never the kernel's hang (issue 19: a 2 GiB GEMV point whose call takes 2 ms
# was FAILED "hang" after 120 s of kladder's own work).
KLADDER_STAGE_FACTOR = 5


def stage_budget(spec, device: str, point: Point, given: float | None = None) -> float:
    """How long one of kladder's own stages of a point may stay silent."""
    return KLADDER_STAGE_FACTOR * point_timeout(spec, device, given, point)

