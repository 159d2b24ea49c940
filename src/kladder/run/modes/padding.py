"""Padding poison: packed rows carry valid elements and padding (aiter #5195: 14 valid scale
bytes, 16 read). The kernel is called twice on the same valid data: with zero padding (what a
unit test builds) and with the padding poisoned (0xFF, 0x7F, 0x80, a per-byte pattern, random
bytes). The outputs must stay bit for bit the same, and the poisoned call is checked against
the reference as usual."""
from __future__ import annotations

import dataclasses

from ...core.notation import ZERO_PADDING
from ...core.outcome import Cause
from .base import Call, Mode, Same


class Padding(Mode):
    name = "padding"
    rungs = (3,)
    judges_mutations = True

    def observe(self, h):
        import torch
        pt = h.point
        arg, fill = pt.padding
        clean_pt = dataclasses.replace(pt, values=tuple((n, ZERO_PADDING.format() if n == arg else k) for n, k in pt.values))
        clean = h.prepare(point=clean_pt, seed=pt.seed)
        base_ret = h.call(clean, "call with zero padding")
        base_out = {n: t.clone() for n, t in h.outputs(clean, base_ret).items() if isinstance(t, torch.Tensor)}
        prep = h.prepare()
        label = f"call with {arg}'s padding {fill.byte}"
        ret = h.call(prep, label)
        yield Call(prep, ret, label)
        yield Same(base_out, h.outputs(prep, ret), Cause.PADDING, label,
                   {"arg": arg, "fill": fill.byte, "valid": h.spec.all_tensors[arg].valid})


MODE = Padding()
