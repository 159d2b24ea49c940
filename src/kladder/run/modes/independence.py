"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (two paths, one kernel: zoo/shared_kernel_reference.py). The kernel and the reference are
each run once under a tracer, which records what each ran of what the launcher owns:
- on every device, the Python functions called (the spec's launcher and a chain's links) and
  the Triton kernels launched (under Triton's interpreter also the @triton.jit bodies it runs);
- on CUDA, the GPU kernels the profiler records, each with the op that launched it: torch's
  own ops' kernels (ATen's, cuBLAS's, cuDNN's) are torch's, not the launcher's;
- when the kernel under test is itself a torch op (spec.kernel is torch.sin, F.softmax, ...),
  the reference's calls of that op.
checks/independence.py judges what the two share; the point is then checked as an eager call."""
from __future__ import annotations

from ...core.outcome import NoteKind, SpecBroken, error_facts
from ..faults import is_oom
from .base import Call, Mode, Traces
from .tracing import Launches, Tracer, gpu_kernels, torch_op_name


def _launchers(spec) -> set:
    from ...core.chain import Chain
    fns = spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]
    return {getattr(f, "__code__", None) for f in fns} - {None}


def _jit(launched) -> dict:
    """The Triton kernels launched: their Python function -> 'name (file:line)'."""
    import os
    found = {}
    for launch in launched.seen:
        fn = getattr(launch.fn, "fn", None) or launch.fn
        code = getattr(fn, "__code__", None)
        where = f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})" if code is not None else ""
        found[fn] = f"{launch.name}{where}"
    return found


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


class Independence(Mode):
    name = "independence"
    rungs = (3,)
    profiles_on = ("cuda",)            # tracing.gpu_kernels: the profiler, in this worker where no process of its own runs the call

    def observe(self, h):
        spec = h.spec
        op = torch_op_name(spec.kernel)
        prep = h.prepare()
        with Tracer() as kt, Launches() as kl:
            returned = h.call(prep, "kernel, traced")
        ref_prep = h.prepare()
        try:
            with Tracer(op) as rt, Launches() as rl:
                spec.reference(*ref_prep.ref_args, **spec.reference_keywords(h.point.config))
        except Exception as e:
            if is_oom(e):
                raise                  # no memory for it: nobody's verdict (run/faults.py), not the spec's
            raise SpecBroken(NoteKind.REFERENCE_RAISED, **error_facts(e)) from e
        k_gpu: dict = {}
        r_gpu: dict = {}
        if h.device == "cuda":
            again = h.prepare()
            k_gpu = gpu_kernels(lambda: h.call(again, "kernel, profiled"), owners=True)
            r_gpu = gpu_kernels(lambda: spec.reference(*again.ref_args, **spec.reference_keywords(h.point.config)),
                                owners=True)
        yield Traces(kt.called, kt.kernels, _launchers(spec), rt.called, k_gpu, r_gpu, _jit(kl), _jit(rl), op,
                     rt.op_calls, _name(spec.reference))
        yield Call(prep, returned)


MODE = Independence()
