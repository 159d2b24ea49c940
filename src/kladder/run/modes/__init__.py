"""Execution modes: how a kernel is called, one module each, behind one Protocol (base.Mode).

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
judges. kladder.run.trial feeds each observation to the checks as it comes."""
from __future__ import annotations

import importlib

from .base import MODES_NEEDING_CUDA, Mode

MODULES = {"eager": "eager", "reused": "reused", "aba": "aba", "graph": "graph", "stream": "stream",
           "padding": "padding", "independence": "independence", "jitcache": "jitcache", "compiled": "compiled",
           "model": "in_model", "dispatch": "dispatch", "flags": "flags", "cachekey": "cachekey", "imports": "imports",
           "collective": "collective", "repeat": "repeat", "sanitize": "sanitize",
           "accumulate": "accumulate", "calls": "calls"}


def get(name: str) -> Mode:
    if name not in MODULES:
        raise ValueError(f"mode {name!r}: no such mode; known modes are {sorted(MODULES)}.")
    return importlib.import_module(f"{__name__}.{MODULES[name]}").MODE


__all__ = ["MODES_NEEDING_CUDA", "MODULES", "Mode", "get"]
