"""Executors: how a kernel is called. One Protocol, one module per execution mode.
Rung 1 uses eager; later rungs add graph, stream, reused buffers and the rest."""
from __future__ import annotations

from typing import Any, Callable, Protocol


class Executor(Protocol):
    name: str

    def call(self, kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
        """Run the kernel once and return what it returned, with the device idle after."""


def get(name: str) -> Executor:
    from .eager import Eager
    executors = {"eager": Eager}
    if name not in executors:
        raise ValueError(f"mode {name!r}: no such executor; known modes are {sorted(executors)}.")
    return executors[name]()
