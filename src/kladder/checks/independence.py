"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (two paths, one kernel: zoo/shared_kernel_reference.py). The independence mode traces what
the kernel and the reference each ran; what the reference shares with the kernel, of the
kernel's own code, makes the reference invalid."""
from __future__ import annotations

from ..outcome import Check, Finding
from ..facts import InvalidReferenceFacts

# GPU kernels every torch program runs (copies, fills, casts, reductions): sharing them says nothing
GENERIC_GPU_KERNELS = ("elementwise", "copy", "fill", "memcpy", "memset", "reduce_kernel", "catarray",
                       "index", "gather", "scatter", "distribution", "sort", "arange")


def shared_code(traces) -> Finding | None:
    """The kernel's own code is its launchers (a chain's links) and the @triton.jit bodies the
    interpreter ran; the reference must call none of it, nor run a non-generic GPU kernel the
    kernel ran."""
    own = traces.kernel_bodies | (traces.launchers & set(traces.kernel_called))
    functions = sorted(traces.reference_called[c] for c in own & set(traces.reference_called))
    gpu = sorted(n for n in traces.kernel_gpu & traces.reference_gpu if not any(g in n.lower() for g in GENERIC_GPU_KERNELS))
    if not functions and not gpu:
        return None
    return Finding(Check.INVALID_REFERENCE, facts=InvalidReferenceFacts(functions=functions, gpu_kernels=gpu))
