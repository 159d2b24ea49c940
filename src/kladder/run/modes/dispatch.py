"""Dispatch (rung 7): which kernels a call really ran. A dispatcher picks a path from the call
(seq_len 1 or many, contiguous or not, a tuned entry or none, an environment variable), and a
test that never reaches a path never tests it (Modular MAX's mha_decoding: a decode test at
seq_len 1 ran the prefill kernel; zoo/wrong_path_dispatch.py).
One call, traced: the Triton kernels it launched with their constexprs and launch options, the
Python functions it called and, on CUDA, the GPU kernels the profiler recorded. A point that
sets environment variables runs in a child process of its own (envset.py), with them set at
the process's start or after the kernel's module was imported and the kernel called once.
checks/dispatch.py holds them against the spec's `expect`; the call's values are judged too."""
from __future__ import annotations

import dataclasses
import os

from ...checks.dispatch import refusing
from ...core.notation import EnvSet, Mode
from . import base
from .base import Call
from .envset import EnvRun, run_env
from .jitcache import returned_from
from .tracing import traced_call


def _env_run(h) -> EnvRun:
    pt = h.point
    env = {k: v for k, v in pt.env}
    values = ", ".join(f"{k} unset" if v is None else f"{k}={v}" for k, v in env.items())
    point = dataclasses.replace(pt, mode=Mode.EAGER, seed=pt.seed)
    if pt.env_set != EnvSet.AFTER_IMPORT:
        return EnvRun(f"{values} from its start", point, env)
    flags = {f.env: f for f in h.spec.toolchain.flags if f.env is not None}
    started = {k: flags[k].before(v) if k in flags else None for k, v in env.items()}
    return EnvRun(f"{values} set after import and one call", point, env, True, started)


class Dispatch(base.Mode):
    name = "dispatch"
    rungs = (7,)
    child_processes = 1
    measured_elsewhere = True
    profiles_on = ("cuda",)            # tracing.gpu_kernels: the profiler, in this worker where no process of its own runs the call

    @classmethod
    def children(cls, point, device: str) -> int:
        return cls.child_processes if point.env else 0      # a dispatch under environment variables only

    def observe(self, h):
        if h.point.env:
            run = _env_run(h)
            ((outputs, ran),) = run_env(h, [run])
            prep = h.prepare(run.point)
            yield ran
            yield Call(prep, returned_from(h, prep, outputs), f"a process with {run.label}")
            return
        prep = h.prepare()
        returned, ran = traced_call(h, prep)
        ran.env = {k: os.environ.get(k) for k in h.spec.when_variables}     # the environment the call ran in
        yield ran
        if not refusing(h.spec, h.point):          # a launcher documented to refuse here: no values to hold it to
            yield Call(prep, returned)


MODE = Dispatch()
