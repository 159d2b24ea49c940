"""Reference independence: a reference that runs the kernel under test agrees with it while
both are wrong (two paths, one kernel: zoo/shared_kernel_reference.py). The independence mode traces what
the kernel and the reference each ran; what the reference shares of the kernel's own code makes
the reference not independent: the spec's problem (BROKEN, naming the reference and what it
shares), never a failure of the kernel.

The kernel's own code is what its launcher owns: its Python launchers (the spec's kernel, a
chain's links), the Triton kernels it launches (and, under Triton's interpreter, the @triton.jit
bodies it runs), and on CUDA the GPU kernels it launches outside torch's own ops (a Triton
kernel, an extension's kernel). GPU kernels torch's ops run (ATen's, cuBLAS's, cuDNN's: a
torch.bincount in the launcher and in the reference) are torch's and say nothing, unless the
kernel under test is itself a torch op: then a reference that calls that op runs the kernel."""
from __future__ import annotations

from ..core.outcome import Note, NoteKind

# The operator library torch ships: a GPU kernel launched inside one of its ops (ATen's own
# kernels, and the cuBLAS / cuDNN / cuFFT kernels its ops call) is torch's, not the launcher's.
TORCH_OP_NAMESPACE = "aten::"


def own_gpu_kernels(kernels: dict, reference: dict | None = None) -> set:
    """The GPU kernels the kernel's call ran that no torch op launched (name -> the launching
    op, '' for none: a Triton launch, an extension's own launch), in either call: the profiler
    does not always tie a kernel to its op (on an H100 a torch.bincount's inner min reduction came
    back tied to no op in the launcher's call, run under kladder's dispatch mode, and to aten::min
    in the reference's), and a kernel a torch op launched in one call is torch's in both."""
    torch_ops = {n for n, op in (reference or {}).items() if op.startswith(TORCH_OP_NAMESPACE)}
    return {n for n, op in kernels.items() if not op.startswith(TORCH_OP_NAMESPACE) and n not in torch_ops}


def shared_code(traces) -> Note | None:
    """The note that makes the point BROKEN, or None when the reference shares none of the
    kernel's own code."""
    both_jit = set(traces.kernel_jit) & set(traces.reference_jit)
    jit = sorted(traces.reference_jit[f] for f in both_jit)
    bodies = {getattr(f, "__code__", None) for f in both_jit}          # named once, as Triton kernels
    own = (traces.kernel_bodies | (traces.launchers & set(traces.kernel_called))) - bodies
    functions = sorted(traces.reference_called[c] for c in own & set(traces.reference_called))
    ref_gpu = traces.reference_gpu if isinstance(traces.reference_gpu, dict) else dict.fromkeys(traces.reference_gpu, "")
    gpu = sorted(own_gpu_kernels(traces.kernel_gpu, ref_gpu) & set(ref_gpu))
    op = traces.torch_op if traces.torch_op is not None and traces.reference_op_calls else None
    if not (functions or jit or gpu or op):
        return None
    return Note.of(NoteKind.REFERENCE_NOT_INDEPENDENT, reference=traces.reference, functions=functions,
                   jit_kernels=jit, gpu_kernels=gpu, torch_op=op)
