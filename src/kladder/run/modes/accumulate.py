"""Accumulate (Spec.grads, rung 3): a training step's second micro-batch. Every listed input's
`.grad` already holds an earlier gradient, and the backward runs twice on one retained graph
(retain_graph=True): a correct backward adds to `.grad` each time, so the gradient judged is
held + 2 x the reference's. A backward that assigns instead of adding, or that overwrote what it
saved for backward during its first call, fails here and nowhere else."""
from __future__ import annotations

from ...core.outcome import NoteKind, Skip
from .base import Call, Mode


class Accumulate(Mode):
    name = "accumulate"
    rungs = (3,)
    backward = True

    def observe(self, h):
        written = h.spec.written_in_backward(h.point)
        if written:
            # a backward that writes its inputs by design (mutated='backward') overwrote what its
            # second call on the retained graph reads: by design, not a bug; no training step does it
            raise Skip(NoteKind.INPUTS_MUTATED, args=list(written), when="accumulate")
        prep = h.prepare()
        label = ".grad holding an earlier micro-batch's gradient; backward twice on a retained graph"
        yield Call(prep, h.call(prep, label), label)


MODE = Accumulate()
