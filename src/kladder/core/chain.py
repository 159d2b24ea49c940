"""Chains: a producer -> consumer pipeline checked as one kernel against the reference pipeline.

Each link is called with the parameters its signature names, looked up by name among the
spec's arguments and the outputs of the links before it, so each link is fed the real output
of the link before (a quantiser's interleaved scales reach the GEMM as the GEMM will see them
in production). Two kernels that each pass their own test can be wrong together (aiter #5465:
the producer writes interleaved scales, the consumer reads row-major).

    kernel=kl.chain(kl.Link(quantize, outputs=("xq", "xs")), kl.Link(gemm, outputs=("y",)))

A Spec binds the chain to its argument names (positional calls, as every kernel gets).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from .problems import friendly as _friendly


@_friendly("kl.Link")
@dataclass(frozen=True)
class Link:
    fn: Callable[..., Any]
    outputs: tuple[str, ...] = ("out",)

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))


class Chain:
    def __init__(self, links: tuple[Link, ...], names: tuple[str, ...] = ()):
        self.links, self.names = links, names
        self.__name__ = " -> ".join(link.name for link in links)

    def bound(self, names) -> "Chain":
        return Chain(self.links, tuple(names))

    def __call__(self, *args, **kwargs):
        if len(args) > len(self.names):
            raise TypeError(f"chain {self.__name__}: called with {len(args)} positional args; it knows the names of {len(self.names)} ({', '.join(self.names)})")
        scope = dict(zip(self.names, args, strict=False))
        result = None
        for link in self.links:
            params = inspect.signature(link.fn).parameters
            call_kw = {}
            for p in params.values():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    continue
                if p.name in scope:
                    call_kw[p.name] = scope[p.name]
                elif p.name in kwargs:
                    call_kw[p.name] = kwargs[p.name]
                elif p.default is p.empty:
                    raise TypeError(f"chain link {link.name}: nothing named {p.name!r} among the spec's args "
                                    f"({', '.join(self.names)}) or the outputs of the links before")
            result = link.fn(**call_kw)
            values = result if len(link.outputs) > 1 else (result,)
            if len(link.outputs) > 1 and (not isinstance(result, (tuple, list)) or len(result) != len(link.outputs)):
                raise TypeError(f"chain link {link.name}: declared outputs {link.outputs} but returned {type(result).__name__}")
            scope.update(zip(link.outputs, values, strict=False))
        return result

    def functions(self) -> list[Callable]:
        return [link.fn for link in self.links]


def chain(*links: Link) -> Chain:
    """A pipeline of links; see the module docstring."""
    for i, link in enumerate(links):
        if not isinstance(link, Link):
            raise TypeError(f"kl.chain: link {i} is {type(link).__name__}; wrap it: kl.Link(fn, outputs=('name', ...))")
        if not callable(link.fn):
            raise TypeError(f"kl.chain: link {i}'s fn is not callable: {link.fn!r}")
    if not links:
        raise TypeError("kl.chain: give at least one kl.Link(fn, outputs=(...))")
    return Chain(tuple(links))
