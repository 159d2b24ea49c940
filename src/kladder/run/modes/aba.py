"""A-B-A in one process: a server calls one kernel with many shapes and configs for days.
A at its shape and config, then B at another, then A again on the same inputs: each call is
checked against the reference, and the second A must equal the first bit for bit. Module
state set by one call (a cached launcher, a workspace sized for the first shape) shows here."""
from __future__ import annotations

import dataclasses

from ...outcome import Cause
from .base import Call, Same


class ABA:
    name = "aba"

    def observe(self, h):
        a = h.point
        partner = dict(a.partner)
        b = dataclasses.replace(a, dims=partner.get("dims", a.dims), config=partner.get("config", a.config),
                                partner=(), seed=0)
        first = h.prepare(a)
        returned = h.call(first, "call 1 of 3 (A)")
        kept = _snapshot(h.outputs(first, returned))       # before B can overwrite whatever they alias
        yield Call(first, returned, "call 1 of 3 (A)")
        mid = h.prepare(b)
        yield Call(mid, h.call(mid, "call 2 of 3 (B)"), "call 2 of 3 (B)")
        again = h.prepare(a)
        label = "call 3 of 3 (A again, after B)"
        returned = h.call(again, label)
        yield Call(again, returned, label)
        yield Same(kept, h.outputs(again, returned), Cause.ABA, label)


def _snapshot(outputs: dict) -> dict:
    return {n: t.detach().clone() for n, t in outputs.items() if hasattr(t, "detach")}


MODE = ABA()
