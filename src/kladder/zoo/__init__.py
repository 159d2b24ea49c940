"""kladder's zoo: buggy kernels and their fixed twins, the project's own benchmark.

Each case is one module, named after the case. It holds the buggy kernel and its fixed
twin (a @triton.jit kernel plus the Python launcher a library would export), the plain
torch reference its author would write, a ``CASE`` record (gap, rung expected to catch it,
the public bug it mirrors, what it needs, the story), and the kladder specs ``spec`` (the
buggy kernel) and ``fixed`` (the twin), identical except for the kernel.

Cases are found by walking this package (kladder.tools.cases).
`kladder climb` must catch every ``spec`` at the case's rung and pass every ``fixed``.
"""
from __future__ import annotations


def build_specs(make_spec, *kernels):
    """One spec per kernel: the buggy kernel's and its twin's, identical but for the kernel."""
    return tuple(make_spec(kernel) for kernel in kernels)
