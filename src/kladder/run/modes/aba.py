"""A-B-A in one process: a server calls one kernel with many shapes and configs for days.
A at its shape and config, then B at another, then A again on the same inputs: each call is
checked against the reference, and the second A must equal the first bit for bit. Module
state set by one call (a cached launcher, a workspace sized for the first shape) shows here.

A is called twice before B, on the same inputs, to measure its own run-to-run variation (float
atomics add in whatever order the programs finish): an output whose two A calls differ is not
held bit for bit after B when the spec allows it (Spec(deterministic=False): A after B is then
judged against the reference alone, and the note says so), and fails as the kernel's
nondeterminism, not B's, when the spec says it is deterministic. With Spec(grads=...) every call
runs the backward too (its `backward` trait): the gradients are outputs like the others."""
from __future__ import annotations

import dataclasses

from ...core.outcome import Cause, Note, NoteKind
from .base import Call, Measured, Mode, Same

REPEAT_LABEL = "call 1 of 3 repeated (A again, before B: A's own run-to-run variation)"


class ABA(Mode):
    name = "aba"
    rungs = (4,)
    fresh_process = True
    start_order = 1
    backward = True

    def observe(self, h):
        a = h.point
        partner = dict(a.partner)
        b = dataclasses.replace(a, dims=partner.get("dims", a.dims), config=partner.get("config", a.config),
                                partner=(), seed=0)
        first = h.prepare(a)
        returned = h.call(first, "call 1 of 3 (A)")
        kept = _snapshot(h.outputs(first, returned))       # before B can overwrite whatever they alias
        yield Call(first, returned, "call 1 of 3 (A)")
        twice = h.prepare(a)
        returned = h.call(twice, REPEAT_LABEL)
        repeated = _snapshot(h.outputs(twice, returned))
        yield Call(twice, returned, REPEAT_LABEL)
        kept, _ = yield from run_to_run(h, kept, repeated, "aba")
        mid = h.prepare(b)
        yield Call(mid, h.call(mid, "call 2 of 3 (B)"), "call 2 of 3 (B)")
        again = h.prepare(a)
        label = "call 3 of 3 (A again, after B)"
        returned = h.call(again, label)
        yield Call(again, returned, label)
        yield Same(kept, h.outputs(again, returned), Cause.ABA, label)


def run_to_run(h, first: dict, second: dict, mode: str, files: int | None = None):
    """A's two results on the same inputs: the outputs whose bits differ are left out of the
    bitwise comparison after B (it would blame B for the kernel's own variation). With
    Spec(deterministic=True) they fail here (Same, cause RUN_TO_RUN); else a note says which and
    why. Returns (the outputs still compared bit for bit after B, whether any varied)."""
    from ...checks.bitwise import bits_differ
    varying, differ, total = [], 0, 0
    for n, t in first.items():
        u = second.get(n)
        if u is None or u.shape != t.shape or u.dtype != t.dtype:
            continue
        bad = int(bits_differ(t, u).sum())
        if bad:
            varying.append(n)
            differ, total = differ + bad, total + t.numel()
    if varying and h.spec.repetition.deterministic:
        yield Same({n: first[n] for n in varying}, second, Cause.RUN_TO_RUN,
                   REPEAT_LABEL if mode == "aba" else "A twice on the warm cache")
    elif varying:
        yield Measured(Note.of(NoteKind.RUN_TO_RUN, outputs=varying, differ=differ, total=total, mode=mode, files=files))
    return {n: t for n, t in first.items() if n not in varying}, bool(varying)


def _snapshot(outputs: dict) -> dict:
    return {n: t.detach().clone() for n, t in outputs.items() if hasattr(t, "detach")}


MODE = ABA()
