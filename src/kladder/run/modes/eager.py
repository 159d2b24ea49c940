"""Eager: one call on the default stream, on fresh poisoned outputs (rung 1 and below)."""
from __future__ import annotations

from .base import Call, Mode


class Eager(Mode):
    name = "eager"
    rungs = (1, 2, 3)
    backward = True
    judges_mutations = True

    def observe(self, h):
        prep = h.prepare()
        yield Call(prep, h.call(prep))


MODE = Eager()
