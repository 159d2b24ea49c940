"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (two paths, one kernel: zoo/shared_kernel_reference.py). The kernel and the reference are
each run once under a tracer, which records:
- on every device, the Python functions called: the spec's launcher (and a chain's links) and,
  under Triton's interpreter, the @triton.jit function bodies the interpreter runs;
- on CUDA, also the GPU kernel names the profiler records.
checks/independence.py judges what the two share; the point is then checked as an eager call."""
from __future__ import annotations

from ...outcome import NoteKind, SpecBroken, error_facts
from .base import Call, Traces
from .tracing import Tracer, gpu_kernels


def _launchers(spec) -> set:
    from ...chain import Chain
    fns = spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]
    return {getattr(f, "__code__", None) for f in fns} - {None}


class Independence:
    name = "independence"

    def observe(self, h):
        spec = h.spec
        prep = h.prepare()
        with Tracer() as kt:
            returned = h.call(prep, "kernel, traced")
        ref_prep = h.prepare()
        try:
            with Tracer() as rt:
                spec.reference(*ref_prep.ref_args)
        except Exception as e:  # noqa: BLE001
            raise SpecBroken(NoteKind.REFERENCE_RAISED, **error_facts(e)) from e
        k_gpu: set[str] = set()
        r_gpu: set[str] = set()
        if h.device == "cuda":
            again = h.prepare()
            k_gpu = gpu_kernels(lambda: h.call(again, "kernel, profiled"))
            r_gpu = gpu_kernels(lambda: spec.reference(*again.ref_args))
        yield Traces(kt.called, kt.kernels, _launchers(spec), rt.called, k_gpu, r_gpu)
        yield Call(prep, returned)


MODE = Independence()
