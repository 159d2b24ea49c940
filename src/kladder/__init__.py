"""kladder: climb the validation ladder for GPU kernels.

Describe what a kernel computes and where its behaviour can change (a Spec); kladder places
points at those places, runs them the way production runs kernels, and reports which rung
failed, where in the output, and the one command that reproduces it.
"""
from __future__ import annotations

import importlib

from .core.chain import Link, chain  # bound here: the submodule kladder.core.chain would shadow a lazy `chain`
from .version import __version__

# Where each other public name lives: imported at its first use (PEP 562), so that `import
# kladder` costs little until a name is used and `kladder climb` reaches its signal handler early
# in its life (a Ctrl-C during the imports before it was a traceback).
_HOME = {"Point": "core.point", "filled": "gen.fill",
         **{name: "core.spec" for name in ("DEFAULT_TOLERANCES", "Collective", "Dim", "Expect", "Flag", "Invariant", "Out",
                                      "Size", "Config", "Calls", "Spec", "SpecError", "Tensor", "Tolerance",
                                      "Repetition", "Toolchain", "InModel", "Modes")}}


def __getattr__(name: str):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kladder' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__all__ = ["filled", "Spec", "Tensor", "Out", "Dim", "Size", "Config", "Calls", "Tolerance", "Invariant", "Expect", "Flag", "Collective", "Repetition", "Toolchain", "InModel", "Modes", "SpecError", "Point", "Link", "chain",
           "capture", "DEFAULT_TOLERANCES", "climb", "inputs", "assert_close", "__version__"]


def capture(target, to, **kw):
    """Record the arguments of real calls to `target` under DIR: `with kl.capture("pkg.mod:fn", to="caps"): run()`."""
    from .gen.capturing import capture as _capture
    return _capture(target, to, **kw)


def climb(spec, *, rungs=None, device: str = "auto", timeout_s: float | None = None, log_path: str | None = None,
          jobs: int = 1, seed: int = 0):
    """Climb `spec` (a Spec, or a reference 'path.py::name') and return the ClimbReport.
    Points run in worker processes (`jobs` at a time), which import the spec by reference."""
    from .tools.api import climb_spec
    return climb_spec(spec, rungs=rungs, device=device, timeout_s=timeout_s, log_path=log_path, jobs=jobs,
                      seed=seed)


def inputs(spec, point, device: str | None = None) -> dict:
    """A point's inputs as the kernel gets them in a climb, in your own process: {name: argument}
    in Spec.args order (call `kernel(*args.values(), **point.kwargs)`). `spec`: a Spec or
    'path.py::name'; `point`: a kl.Point or its text as a report prints it (kladder/testing.py)."""
    from .tools.testing import inputs as _inputs
    return _inputs(spec, point, device)


def assert_close(actual, expected, *, rtol: float | None = None, atol: float | None = None, spec=None,
                 output: str | None = None, config=(), peer=None, msg: str | None = None) -> None:
    """Judge `actual` against the reference's `expected` with kladder's budget (atol + rtol x
    max(|expected|, its row's RMS), NaN-aware), pattern and words; raise AssertionError worded as
    the report words it. Called as torch.testing.assert_close; how the two differ: kladder/testing.py."""
    from .tools.testing import assert_close as _assert_close
    _assert_close(actual, expected, rtol=rtol, atol=atol, spec=spec, output=output, config=config, peer=peer, msg=msg)
