"""kladder: climb the validation ladder for GPU kernels.

Describe what a kernel computes and where its behaviour can change (a Spec); kladder places
points at those places, runs them the way production runs kernels, and reports which rung
failed, where in the output, and the one command that reproduces it.
"""
from __future__ import annotations

import importlib

from .chain import Link, chain  # noqa: F401  (bound here: the submodule kladder.chain would shadow a lazy `chain`)
from .version import __version__

# Where each other public name lives: imported at its first use (PEP 562), so that `import
# kladder` costs little until a name is used and `kladder climb` reaches its signal handler early
# in its life (a Ctrl-C during the imports before it was a traceback).
_HOME = {"Point": "point",
         **{name: "spec" for name in ("DEFAULT_TOLERANCES", "Collective", "Dim", "Expect", "Flag", "Invariant", "Out",
                                      "Size", "Config", "Calls", "Spec", "SpecError", "Tensor", "Tolerance")}}


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kladder' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__all__ = ["Spec", "Tensor", "Out", "Dim", "Size", "Config", "Calls", "Tolerance", "Invariant", "Expect", "Flag", "Collective", "SpecError", "Point", "Link", "chain",
           "capture", "DEFAULT_TOLERANCES", "climb", "__version__"]


def capture(target, to, **kw):
    """Record the arguments of real calls to `target` under DIR: `with kl.capture("pkg.mod:fn", to="caps"): run()`."""
    from .capturing import capture as _capture
    return _capture(target, to, **kw)


def climb(spec, *, rungs=None, device: str = "auto", timeout_s: float | None = None, log_path: str | None = None,
          jobs: int = 1, seed: int = 0):
    """Climb `spec` (a Spec, or a reference 'path.py::name') and return the ClimbReport.
    Points run in worker processes (`jobs` at a time), which import the spec by reference."""
    from .api import climb_spec
    return climb_spec(spec, rungs=rungs, device=device, timeout_s=timeout_s, log_path=log_path, jobs=jobs,
                      seed=seed)
