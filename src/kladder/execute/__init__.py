"""Executors: how a kernel is called. One Protocol, one module per execution mode.

An executor sequences a Harness's three steps (prepare, call, check) the way production
calls kernels: once (eager), twice into reused output buffers (reused), A then B then A in
one process (aba), captured and replayed in a CUDA graph (graph), on a side stream (stream).
It returns the findings, each labelled with the call that went wrong."""
from __future__ import annotations

from typing import Any, Callable, Protocol

MODES_NEEDING_CUDA = ("graph", "stream")


class Executor(Protocol):
    name: str

    def run(self, h) -> tuple[list, str]:
        """Run the point's calls through the harness; return (findings, rows checked)."""


def call_once(kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
    """One call, then a synchronize, so that an asynchronous device fault surfaces inside
    this point and not in the next one."""
    import torch
    result = kernel(*args, **kwargs)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return result


def call_raw(kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
    """One call with no synchronize: inside a capture or under a side stream, the executor
    orders the work itself."""
    return kernel(*args, **kwargs)


def bits_differ(a, b):
    """Where two tensors of one dtype and shape differ bit for bit (NaN == NaN when the bits
    agree; -0 != +0)."""
    import torch
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.contiguous().view(ints) != b.contiguous().view(ints)


def get(name: str) -> Executor:
    from .aba import ABA
    from .compiled import Compiled
    from .eager import Eager
    from .graph import Graph
    from .independence import Independence
    from .jitcache import JitCache
    from .model import Model
    from .padding import Padding
    from .reused import Reused
    from .stream import Stream
    executors = {e.name: e for e in (Eager, Reused, ABA, Graph, Stream, Padding, Independence, JitCache, Compiled, Model)}
    if name not in executors:
        raise ValueError(f"mode {name!r}: no such executor; known modes are {sorted(executors)}.")
    return executors[name]()


def run_mode(name: str, h) -> tuple[list, str]:
    from ..trial import Skip
    if name in MODES_NEEDING_CUDA and h.device != "cuda":
        raise Skip(f"the {name} mode needs CUDA; on the CPU it is skipped, never passed")
    return get(name).run(h)
