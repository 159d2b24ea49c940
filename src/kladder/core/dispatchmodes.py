"""A TorchDispatchMode's first call without importing torch._dynamo.

torch wraps every TorchDispatchMode subclass's __torch_dispatch__ in dynamo's disable, and the first
call imports torch._dynamo to make it: sympy and ~900 modules, 2.2 s of CPU a process on the 2-core
machine (more than `import torch`), for a mode that never compiles anything. Before dynamo is
imported no frame can be traced, so there is nothing to disable: `dynamo_disable_when_imported`
calls the function directly until then, and through dynamo's disable from its first call after,
as torch would. Used by every mode kladder enters in a worker: the guarded allocations
(run/guarded_alloc.py) and the honest peer's backward rounding (checks/peer.py)."""
from __future__ import annotations


def dynamo_disable_when_imported(cls) -> None:
    """For a TorchDispatchMode subclass whose __torch_dispatch__ torch wrapped in
    torch._disable_dynamo: call it directly while torch._dynamo is not imported, and from its
    first call after, through dynamo's disable as torch would. (torch keeps the disabled function
    on the original as `__dynamo_disable`; under another torch that does otherwise, nothing
    changes here and torch imports dynamo at the first call, as before.)"""
    import sys
    raw = cls.__dict__.get("__torch_dispatch__")
    fn = getattr(raw, "__wrapped__", None)
    if fn is None or getattr(fn, "__dynamo_disable", None) is not None:
        return

    def until_dynamo(*args, **kwargs):
        if "torch._dynamo" in sys.modules:
            delattr(fn, "__dynamo_disable")           # torch's own path from here on, its disable cached
            return raw(*args, **kwargs)
        return fn(*args, **kwargs)
    setattr(fn, "__dynamo_disable", until_dynamo)
