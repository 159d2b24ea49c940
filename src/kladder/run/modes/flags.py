"""Flags (rung 7): a flag that must change the code, run once per value. A tuning flag that
never reaches code generation passes every numerical test, on and off alike (FlyDSL #1153,
#1177: "1051 tests pass, with no numerical change in either direction"); only the code object
tells. A launcher keyword runs in this process, one call per value; an environment variable
runs each value in a child process of its own (a library may read it at import), on an empty
cache. Each call is judged against the reference; checks/flags.py compares the code each value
launched (tracing.py: the compiled binary on a GPU, the interpreter's source-level model on
the CPU). With no Triton kernel and no profiler to see, the point is skipped with the reason."""
from __future__ import annotations

import dataclasses

from ...notation import Mode
from ...outcome import NoteKind, Skip, SpecBroken
from .base import Call, Flagged, Ran
from .jitcache import Process, returned_from, run_processes
from .tracing import traced_call


def declared_flag(spec, key: str):
    for f in spec.flags:
        if f.key == key:
            return f
    raise SpecBroken(NoteKind.INPUTS_FAILED, error="KeyError",
                     text=f"the point names the flag {key!r}, which the spec does not declare "
                          f"({', '.join(f.key for f in spec.flags) or 'no flags'})")


class Flags:
    name = "flags"

    def observe(self, h):
        flag = declared_flag(h.spec, h.point.variant)
        calls = self._keyword(h, flag) if flag.name is not None else self._env(h, flag)
        runs = [(value, ran) for value, _, ran in calls]
        if not any(ran.launches or ran.gpu for _, ran in runs):
            raise Skip(NoteKind.FLAG_NOT_VISIBLE, flag=flag.key)
        for _, call, _ in calls:
            yield call
        yield Flagged(flag.key, runs)

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
        point = dataclasses.replace(h.point, mode=Mode.EAGER, variant="", seed=h.point.seed)
        procs = [Process(f"{flag.env}={v}", [point], cache=f"empty{i}", env={flag.env: v}) for i, v in enumerate(flag.values)]
        out = []
        for value, proc, result in zip(flag.values, procs, run_processes(h, procs), strict=True):
            prep = h.prepare(point)
            call = Call(prep, returned_from(h, prep, result.outputs), f"a process with {proc.label}")
            out.append((value, call, Ran(result.launches, label=proc.label)))
        return out


MODE = Flags()
