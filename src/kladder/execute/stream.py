"""Side stream: the kernel is called under torch.cuda.stream(s) with its inputs produced on s
just before the call, by a producer that is late on purpose. A wrapper that launches on a
stream of its own without waiting on the caller's reads the inputs before they land: it sees
the poison they held, and fails. (The race in FlyDSL #1220 showed once in 100,000 launches;
a late producer makes the ordering bug show on every call.) A warm-up call comes first: a
first call that compiles takes longer on the host than the producer's delay, and would hide
the race (measured on the H200: a wrapper on its own stream passed its first point only).)"""
from __future__ import annotations

from . import call_raw

PRODUCER_DELAY_CYCLES = 20_000_000       # about 10 ms at the H200's 1.98 GHz: far above a launch's host time


class Stream:
    name = "stream"

    def run(self, h) -> tuple[list, str]:
        import torch

        from ..materialize import poison
        from ..sizes import dtype_of
        warm = h.prepare()
        h.call(warm, "warm-up call (compiles)")     # eager, synchronized: JIT and autotuning out of the race
        prep = h.prepare()
        inputs = {n: t for n, t in zip(h.spec.args, prep.inputs.args) if n in h.spec.input_args}
        staged = {n: t.clone() for n, t in inputs.items()}
        for n, t in inputs.items():                 # what a consumer that runs too early reads
            poison(t, dtype_of(h.spec, n, prep.point.dtype_of))
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(PRODUCER_DELAY_CYCLES)  # the producer is late...
            for n, t in inputs.items():
                t.copy_(staged[n])                   # ...and writes the inputs on `side`
            returned = h.call(prep, "call on a side stream", runner=call_raw)
        side.synchronize()
        torch.cuda.synchronize()
        return h.check(prep, returned, "call on a side stream, inputs produced on it just before"), ""

