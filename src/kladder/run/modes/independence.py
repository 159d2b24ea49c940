"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (reference/000 §11: two paths, one kernel). The kernel and the reference are
each run once under a tracer, which records:
- on every device, the Python functions called: the spec's launcher (and a chain's links) and,
  under Triton's interpreter, the @triton.jit function bodies the interpreter runs;
- on CUDA, also the GPU kernel names the profiler records.
checks/independence.py judges what the two share; the point is then checked as an eager call."""
from __future__ import annotations

import os
import sys

from ...outcome import NoteKind, SpecBroken, error_facts
from .base import Call, Traces


def _is_ours(filename: str) -> bool:
    """Code that is neither the kernel's nor the reference's: torch, triton, numpy, kladder's
    machinery (not its zoo), the standard library."""
    f = filename.replace(os.sep, "/")
    if "/kladder/" in f and "/kladder/zoo/" not in f:
        return True
    return any(part in f for part in ("/torch/", "/triton/", "/numpy/", "/scipy/", "/python3.", "<frozen", "<string>"))


class _Tracer:
    """The Python functions called while active, and which of them the Triton interpreter
    ran as kernel bodies."""

    def __init__(self):
        self.called: dict = {}
        self.kernels: set = set()

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if _is_ours(code.co_filename):
            return
        self.called[code] = f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
        caller = frame.f_back
        if caller is not None and "/triton/" in caller.f_code.co_filename.replace(os.sep, "/"):
            self.kernels.add(code)

    def __enter__(self):
        self._old = sys.getprofile()
        sys.setprofile(self)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._old)


def _gpu_kernels(fn) -> set[str]:
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return {e.name for e in prof.events() if getattr(e, "device_type", None) is not None and "cuda" in str(e.device_type).lower()}


def _launchers(spec) -> set:
    from ...chain import Chain
    fns = spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]
    return {getattr(f, "__code__", None) for f in fns} - {None}


class Independence:
    name = "independence"

    def observe(self, h):
        spec = h.spec
        prep = h.prepare()
        with _Tracer() as kt:
            returned = h.call(prep, "kernel, traced")
        ref_prep = h.prepare()
        try:
            with _Tracer() as rt:
                spec.reference(*ref_prep.ref_args)
        except Exception as e:  # noqa: BLE001
            raise SpecBroken(NoteKind.REFERENCE_RAISED, **error_facts(e)) from e
        k_gpu: set[str] = set()
        r_gpu: set[str] = set()
        if h.device == "cuda":
            again = h.prepare()
            k_gpu = _gpu_kernels(lambda: h.call(again, "kernel, profiled"))
            r_gpu = _gpu_kernels(lambda: spec.reference(*again.ref_args))
        yield Traces(kt.called, kt.kernels, _launchers(spec), rt.called, k_gpu, r_gpu)
        yield Call(prep, returned)


MODE = Independence()
