"""Compiled: the kernel under torch.compile, where it is a torch op or a custom op
(torch.library.custom_op): a model compiled with torch.compile calls it through the op's
fake (meta) implementation at trace time and the real one at run time, with the compiled
graph's own buffers. A fake that states the wrong shape or dtype, an op that mutates an input
it did not declare, or a layout the compiled graph hands it, fails here and nowhere else.
Two calls: the first compiles, the second runs the cached graph; both are checked. With
Spec(grads=...) each call is the compiled forward and its backward (AOTAutograd's compiled
backward graph, the op's registered autograd formula traced into it), every listed input's
gradient judged against the reference's autograd as at an eager point."""
from __future__ import annotations

from ...core.outcome import KernelError, NoteKind, Skip
from .base import Call, Mode


def is_torch_op(fn) -> bool:
    import torch
    kinds = (torch._ops.OpOverloadPacket, torch._ops.OpOverload)
    try:
        from torch._library.custom_ops import CustomOpDef
        kinds += (CustomOpDef,)
    except ImportError:  # older torch: only torch.library ops
        pass
    return isinstance(fn, kinds)


class Compiled(Mode):
    name = "compiled"
    rungs = (4,)
    backward = True

    def observe(self, h):
        import torch
        if not is_torch_op(h.spec.kernel):
            raise Skip(NoteKind.NOT_TORCH_OP)
        torch._dynamo.reset()
        compiled = torch.compile(h.spec.kernel, dynamic=False)
        for i, label in enumerate(("call 1 of 2 (compiles)", "call 2 of 2 (the compiled graph)")):
            prep = h.prepare(seed=h.point.seed + i)
            try:
                if prep.backward is not None:       # Spec.grads: the compiled forward, then its compiled backward
                    returned = h._forward_backward(prep, lambda _kernel, args, kwargs: compiled(*args, **kwargs))
                else:
                    returned = compiled(*prep.inputs.args, **prep.point.kwargs)
                if torch.cuda.is_available() and torch.cuda.is_initialized():
                    torch.cuda.synchronize()
            except Exception as e:
                raise KernelError(e, label) from e
            yield Call(prep, returned, label)


MODE = Compiled()
