"""Dispatch (rung 7): which kernels a call really ran. A dispatcher picks a path from the call
(seq_len 1 or many, contiguous or not, a tuned entry or none), and a test that never reaches a
path never tests it (Modular MAX's mha_decoding: a decode test at seq_len 1 ran the prefill kernel;
zoo/wrong_path_dispatch.py).
One call, traced: the Triton kernels it launched with their constexprs and launch options, the
Python functions it called and, on CUDA, the GPU kernels the profiler recorded.
checks/dispatch.py holds them against the spec's `expect`; the call's values are judged too."""
from __future__ import annotations

from .base import Call
from .tracing import traced_call


class Dispatch:
    name = "dispatch"

    def observe(self, h):
        prep = h.prepare()
        returned, ran = traced_call(h, prep)
        yield ran
        yield Call(prep, returned)


MODE = Dispatch()
