"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (reference/000 §11: two paths, one kernel). The kernel and the reference are
each run once under a tracer; what the reference shares with the kernel, of the kernel's own
code, makes the reference invalid:
- on every device, the Python functions called: the spec's launcher (and a chain's links) and,
  under Triton's interpreter, the @triton.jit function bodies the interpreter runs;
- on CUDA, also the GPU kernel names the profiler records, less the generic kernels every torch
  program runs (copies, fills, casts, reductions).
The point is then checked as an eager call."""
from __future__ import annotations

import os
import sys

GENERIC_GPU_KERNELS = ("elementwise", "copy", "fill", "memcpy", "memset", "reduce_kernel", "catarray",
                       "index", "gather", "scatter", "distribution", "sort", "arange")


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
    names = {e.name for e in prof.events() if getattr(e, "device_type", None) is not None and "cuda" in str(e.device_type).lower()}
    return {n for n in names if not any(g in n.lower() for g in GENERIC_GPU_KERNELS)}


def _launchers(spec) -> set:
    from ..chain import Chain
    fns = spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]
    return {getattr(f, "__code__", None) for f in fns} - {None}


class Independence:
    name = "independence"

    def run(self, h) -> tuple[list, str]:
        from ..compare import Finding
        from ..trial import SpecBroken
        spec = h.spec
        prep = h.prepare()
        with _Tracer() as kt:
            returned = h.call(prep, "kernel, traced")
        ref_prep = h.prepare()
        try:
            with _Tracer() as rt:
                spec.reference(*ref_prep.ref_args)
        except Exception as e:  # noqa: BLE001
            raise SpecBroken(f"the reference raised {type(e).__name__}: {e}") from e
        own = kt.kernels | (_launchers(spec) & set(kt.called))
        shared = sorted(rt.called[c] for c in own & set(rt.called))
        gpu_shared: list[str] = []
        if h.device == "cuda":
            again = h.prepare()
            k_names = _gpu_kernels(lambda: h.call(again, "kernel, profiled"))
            r_names = _gpu_kernels(lambda: spec.reference(*again.ref_args))
            gpu_shared = sorted(k_names & r_names)
        findings = h.check(prep, returned)
        if shared or gpu_shared:
            what = "; ".join(x for x in (", ".join(shared) and f"functions {', '.join(shared)}",
                                        ", ".join(gpu_shared) and f"GPU kernels {', '.join(gpu_shared)}") if x)
            findings.insert(0, Finding("invalid_reference", "", f"the reference runs the kernel under test "
                                       f"({what}); a comparison with it cannot fail when both are wrong. Write the reference "
                                       "in plain torch, independent of the kernel's code", pattern="invalid reference"))
        return findings, ""
