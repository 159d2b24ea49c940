"""Execution modes: how a kernel is called, one module each, one class each (a base.Mode: its
name, its traits and `observe`), registered by being defined.

A mode sequences a Harness's steps (prepare, call) the way production calls kernels: once
(eager), twice into reused output buffers (reused), A then B then A in one process (aba),
captured and replayed in a CUDA graph (graph), on a side stream (stream), on a cold and a
warm JIT cache (jitcache), under torch.compile (compiled), with poisoned padding (padding), on gradients already held (accumulate),
traced against the reference (independence), in a model's slot (in_model), and rung 7's
traced (dispatch), once per flag value (flags), on a cache another variant left (cachekey),
beside the names downstream code imports (imports), rung 6's on every rank of a collective
(collective), and rung 5's many times over (repeat), in the model's pattern on a stream of distinct inputs (calls),
and under compute-sanitizer (sanitize). It
yields what it observed (base.Call, Same, Traces, Scores, Measured, Ran, Flagged, Imported, Ranks,
Repeats, Sanitized), each labelled with its call; it never
judges. kladder.run.trial feeds each observation to the checks as it comes.

The registry is built on first use from every module of this package (none imports torch at its
top; not at the package's import, since jitcache, envset and sanitize also run as `python -m`
children): each module's base.Mode subclasses, one per notation.Mode member, checked here, so
that a mode added to either and not the other fails at once."""
from __future__ import annotations

import functools
import importlib
import pkgutil

from ...core.notation import Mode as Name
from .base import Mode


@functools.cache
def registry() -> dict[str, type[Mode]]:
    found: dict[str, type[Mode]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Mode) and obj is not Mode and obj.__module__ == module.__name__:
                if obj.name in found:
                    raise RuntimeError(f"mode {obj.name!r}: declared twice ({found[obj.name].__module__}, {module.__name__})")
                found[obj.name] = obj
    named = {str(m) for m in Name}
    if set(found) != named:
        raise RuntimeError(f"run/modes: the mode classes {sorted(found)} and notation.Mode {sorted(named)} differ: "
                           f"each member needs one class (and each class a member).")
    return found


def traits(name: str) -> type[Mode]:
    """The mode's class: its traits as class attributes (base.Mode lists them)."""
    known = registry()
    if name not in known:
        raise ValueError(f"mode {name!r}: no such mode; known modes are {sorted(known)}.")
    return known[name]


def get(name: str) -> Mode:
    return traits(name)()


def of_rung(rung: int) -> set[str]:
    """The modes a rung's generators make points of."""
    return {name for name, cls in registry().items() if rung in cls.rungs}


__all__ = ["Mode", "get", "of_rung", "registry", "traits"]
