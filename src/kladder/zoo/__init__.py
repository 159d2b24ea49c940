"""kladder's zoo: buggy kernels and their fixed twins, the project's own benchmark.

Each case is one module, named after the case. It holds the buggy kernel and its fixed
twin (a @triton.jit kernel plus the Python launcher a library would export), the plain
torch reference its author would write, a ``CASE`` record (gap, rung expected to catch it,
the public bug it mirrors, what it needs, the story), and the kladder specs ``spec`` (the
buggy kernel) and ``fixed`` (the twin), identical except for the kernel.

`kladder climb` must catch every ``spec`` at the case's rung and pass every ``fixed``.
"""
from __future__ import annotations

import importlib

RUNG1 = (
    "gemm_k_tail",
    "rmsnorm_n_tail",
    "rows_int32_offset",
    "last_tile_wrap",
    "config_writes_zeros",
    "untuned_fallback",
    "nan_blind",
    "small_overrun",
)
CASES = RUNG1


def load(name: str):
    """The case module `kladder.zoo.<name>` (imports triton: set TRITON_INTERPRET first on a CPU)."""
    if name not in CASES:
        raise ValueError(f"no zoo case {name!r}; cases: {', '.join(CASES)}")
    return importlib.import_module(f"{__name__}.{name}")


def build_specs(make_spec, *kernels):
    """One spec per kernel, or Nones while kladder's public API is not importable yet.

    The kernels, references and CASE records never need kladder's core; only the specs do.
    """
    try:
        from kladder import Spec  # noqa: F401  (the public API the specs are written against)
    except ImportError:
        return (None,) * len(kernels)
    return tuple(make_spec(kernel) for kernel in kernels)
