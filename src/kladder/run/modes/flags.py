"""Flags (rung 7): a flag that must change the code, run once per value. A tuning flag that
never reaches code generation passes every numerical test, on and off alike (FlyDSL #1153,
#1177: "1051 tests pass, with no numerical change in either direction"); only the code object
tells. A launcher keyword runs in this process, one call per value; an environment variable
runs each value in a child process of its own (a library may read it at import), on an empty
cache, its variable set at the process's start (envset.py); a kl.Flag(env=..., set="after_import")
gets a second point where each value is set after the kernel's module was imported and the
kernel called once, in processes that all started with the first value: a launcher that reads
the variable once (at import, at its first call) runs the first value's code for every value. Each call is judged against the reference; checks/flags.py compares the code each value
launched (tracing.py: the compiled binary on a GPU, the interpreter's source-level model on
the CPU). With no Triton kernel and no profiler to see, the point is skipped with the reason."""
from __future__ import annotations

import dataclasses

from ...core.notation import EnvSet, Mode
from ...core.outcome import NoteKind, Skip, SpecBroken
from . import base
from .base import Call, Flagged
from .envset import EnvRun, run_env
from .jitcache import returned_from
from .tracing import traced_call


def declared_flag(spec, key: str):
    for f in spec.toolchain.flags:
        if f.key == key:
            return f
    raise SpecBroken(NoteKind.INPUTS_FAILED, error="KeyError",
                     text=f"the point names the flag {key!r}, which the spec does not declare "
                          f"({', '.join(f.key for f in spec.toolchain.flags) or 'no flags'})")


class Flags(base.Mode):
    name = "flags"
    rungs = (7,)
    child_processes = 3                  # 3 values (None, "0", "1"); a flag given as a launcher keyword starts none
    start_order = 0                      # three processes of its own, as the cache key's: first
    measured_elsewhere = True
    profiles_on = ("cuda",)            # tracing.gpu_kernels: the profiler, in this worker where no process of its own runs the call

    def observe(self, h):
        flag = declared_flag(h.spec, h.point.variant)
        calls = self._keyword(h, flag) if flag.name is not None else self._env(h, flag)
        runs = [(value, ran) for value, _, ran in calls]
        if not any(ran.launches or ran.gpu for _, ran in runs):
            raise Skip(NoteKind.FLAG_NOT_VISIBLE, flag=flag.key)
        for _, call, _ in calls:
            yield call
        after = h.point.env_set == EnvSet.AFTER_IMPORT
        yield Flagged(flag.key, runs, EnvSet.AFTER_IMPORT if after else "",
                      [flag.values[0] for _ in runs] if after else [], flag.env)

    def _keyword(self, h, flag) -> list:
        out = []
        for value in flag.values:
            point = dataclasses.replace(h.point, mode=Mode.EAGER, variant="", config=h.point.config + ((flag.name, value),),
                                        seed=h.point.seed)
            prep = h.prepare(point)
            label = f"{flag.name}={value!r}"
            returned, ran = traced_call(h, prep, label)
            out.append((value, Call(prep, returned, label), ran))
        return out

    def _env(self, h, flag) -> list:
        point = dataclasses.replace(h.point, mode=Mode.EAGER, variant="", env_set="", seed=h.point.seed)
        after = h.point.env_set == EnvSet.AFTER_IMPORT
        runs = []
        for v in flag.values:
            value = f"{flag.env} unset" if v is None else f"{flag.env}={v}"
            if after:                 # every process starts with the first value: one that read it early keeps it
                start = flag.values[0]
                began = f"{flag.env} unset" if start is None else f"{flag.env}={start}"
                runs.append(EnvRun(f"{value} set after import and one call (started with {began})", point, {flag.env: v},
                                   True, {flag.env: start}))
            else:
                runs.append(EnvRun(f"{value} from its start", point, {flag.env: v}))
        out = []
        for value, run, (outputs, ran) in zip(flag.values, runs, run_env(h, runs), strict=True):
            prep = h.prepare(point)
            out.append((value, Call(prep, returned_from(h, prep, outputs), f"a process with {run.label}"), ran))
        return out


MODE = Flags()
