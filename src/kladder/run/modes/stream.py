"""Side stream: the kernel is called under torch.cuda.stream(s) with its inputs produced on s
just before the call, by a producer that is late on purpose. A wrapper that launches on a
stream of its own without waiting on the caller's reads the inputs before they land: it sees
the poison they held, and fails. (The race in FlyDSL #1220 showed once in 100,000 launches;
a late producer makes the ordering bug show on every call.)

The race must really be set up, or a pass means nothing:
- a warm-up call on the side stream first: a cold call (JIT compile, module load, the first
  cudaMalloc on a new stream, which synchronizes the device) takes longer on the host than the
  producer's delay (measured on the H200: a wrapper on its own stream passed its cold point);
- the side stream comes from the high-priority pool, so it can never be the stream a wrapper
  drew with a plain torch.cuda.Stream() (the pools hand their 32 streams out round-robin);
- an event recorded after the producer tells whether it was still pending when the call
  returned; if not, the point is retried with a longer delay, and skipped, never passed, when
  the race cannot be set up."""
from __future__ import annotations

from ...core.outcome import NoteKind, Skip
from .base import Call, Mode, call_raw

PRODUCER_DELAY_CYCLES = 20_000_000       # about 10 ms at the H200's 1.98 GHz: far above a launch's host time
ATTEMPTS = 3                             # delays x1, x8, x64


class Stream(Mode):
    name = "stream"
    rungs = (4,)
    needs_cuda = True

    def observe(self, h):
        import torch

        from ...gen.materialize import poison
        from ...core.sizes import dtype_of
        side = torch.cuda.Stream(priority=-1)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):               # warm-up: JIT, module loads, the wrapper's streams, allocator blocks
            warm = h.prepare()
            h.call(warm, "warm-up call on the side stream", runner=call_raw)
        torch.cuda.synchronize()
        delay = PRODUCER_DELAY_CYCLES
        for _ in range(ATTEMPTS):
            prep = h.prepare()
            inputs = {n: t for n, t in zip(h.spec.args, prep.inputs.args, strict=True) if n in h.spec.input_args}
            staged = {n: t.clone() for n, t in inputs.items()}
            for n, t in inputs.items():             # what a consumer that runs too early reads
                poison(t, dtype_of(h.spec, n, prep.point.dtype_of))
            torch.cuda.synchronize()
            produced = torch.cuda.Event()
            with torch.cuda.stream(side):
                torch.cuda._sleep(delay)            # the producer is late...
                for n, t in inputs.items():
                    t.copy_(staged[n])              # ...and writes the inputs on `side`
                produced.record(side)
                returned = h.call(prep, "call on a side stream", runner=call_raw)
                armed = not produced.query()        # the producer was still pending when the call returned
            side.synchronize()
            torch.cuda.synchronize()
            if armed:
                label = "call on a side stream, inputs produced on it just before"
                yield Call(prep, returned, label)
                return
            delay *= 8
        raise Skip(NoteKind.RACE_NOT_SET_UP, attempts=ATTEMPTS, delay_cycles=delay // 8)


MODE = Stream()
