"""Reused buffers: an inference engine hands a kernel the output buffer of the step before,
holding plausible values, not a fresh poisoned one. Call 1 writes the buffers; call 2, on new
inputs, writes into the same buffers as they are; both are checked."""
from __future__ import annotations

from ...core.outcome import NoteKind, Skip
from .base import Call, Mode


class Reused(Mode):
    name = "reused"
    rungs = (4,)
    backward = True

    def observe(self, h):
        if not h.spec.out_args:
            raise Skip(NoteKind.NO_OUT_ARGS)
        first = h.prepare()
        yield Call(first, h.call(first, "call 1 of 2"), "call 1 of 2")
        second = h.prepare(seed=first.point.seed + 1, outs_from=first)
        label = "call 2 of 2, into call 1's output buffers"
        yield Call(second, h.call(second, label), label)


MODE = Reused()
