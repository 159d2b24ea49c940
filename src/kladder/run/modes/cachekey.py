"""Cache keys (rung 7): a cache must miss when anything that changes the code changes. A
process on an empty cache directory runs A; a process on the cache it left (a restart) runs
B, which differs from A in one thing that changes the code (another declared config, a flag's
other value, a compiler setting); a third process runs B on an empty cache. B on the warm
cache must be right and bit-for-bit B on the empty one: a key that leaves out what changed
hands B the code (or the plan, or the tuned entry) that A left. Built on rung 4's jitcache
processes (jitcache.run_processes).

The compiler variant flips a setting that Triton's own cache key holds and that changes the
code, TRITON_DEFAULT_FP_FUSION=0 (no fused multiply-adds), standing in for a compiler upgrade;
under Triton's interpreter nothing is compiled, so on the CPU that point is skipped."""
from __future__ import annotations

import dataclasses

from ...core.facts import NotBitwiseFacts
from ...core.notation import Mode
from ...core.outcome import Cause, Note, NoteKind, Skip
from . import base
from .base import Call, Measured, Same
from .flags import declared_flag
from .jitcache import Process, returned_from, run_processes

COMPILER_ENV = {"TRITON_DEFAULT_FP_FUSION": "0"}


def _variants(h):
    """(A's point, A's environment, B's point, B's environment, what B changed)."""
    pt = h.point
    a = dataclasses.replace(pt, mode=Mode.EAGER, partner=(), variant="", seed=pt.seed)
    if pt.variant == "config":
        config = dict(pt.partner)["config"]
        return a, {}, dataclasses.replace(a, config=config), {}, "config " + (", ".join(f"{k}={v}" for k, v in config) or "the launcher's own")
    if pt.variant == "compiler":
        if h.device != "cuda":
            raise Skip(NoteKind.NOT_COMPILED, variant="compiler")
        return a, {}, a, dict(COMPILER_ENV), ", ".join(f"{k}={v}" for k, v in COMPILER_ENV.items())
    flag = declared_flag(h.spec, pt.variant)
    first, other = flag.values[0], flag.values[1]
    if flag.name is not None:
        return (dataclasses.replace(a, config=a.config + ((flag.name, first),)), {},
                dataclasses.replace(a, config=a.config + ((flag.name, other),)), {}, f"{flag.name}={other!r}")
    return a, {flag.env: first}, a, {flag.env: other}, f"{flag.env} unset" if other is None else f"{flag.env}={other}"


class CacheKey(base.Mode):
    name = "cachekey"
    rungs = (7,)
    child_processes = 3
    # three compiles in processes of their own, the longest of the early points: first (at 1, after
    # two A-B-A points, the twin's took 7.3 s from 5.5 s on an H100 and ended last, rung 7 waiting
    # for it: docs/results/2026-12-07-h100-fifth)
    start_order = 0
    measured_elsewhere = True

    @classmethod
    def children(cls, point, device: str) -> int:
        if point.variant == "compiler" and device != "cuda":
            return 0                              # skipped: nothing is compiled under the interpreter
        return cls.child_processes

    def observe(self, h):
        a, env_a, b, env_b, changed = _variants(h)
        cold, warm, fresh = run_processes(h, [
            Process("cold cache: A", [a], cache="shared", env=env_a),
            Process(f"warm cache: B ({changed})", [b], cache="shared", env=env_b),
            Process(f"empty cache: B ({changed})", [b], cache="empty", env=env_b)])
        label = f"B ({changed}) in a process on the cache A left"
        prep = h.prepare(b)
        yield Same(fresh.outputs, warm.outputs, Cause.CACHEKEY, label,
                   NotBitwiseFacts(cause=str(Cause.CACHEKEY), variant=changed))
        yield Call(prep, returned_from(h, prep, warm.outputs), label)
        yield Measured(Note.of(NoteKind.CACHE_MISSED, variant=changed, files_cold=cold.files,
                                     files_added=warm.files - cold.files))


MODE = CacheKey()
