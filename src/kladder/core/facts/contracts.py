"""The facts of the outputs' contract, the guards, inputs changed and the reference's
independence (words: report/words/contracts.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, Json, opt
from .kinds import Check


@dataclass(frozen=True, kw_only=True)
class ContractFacts(Facts, check=Check.CONTRACT):
    """One of: problems; not_tensor; returned and declared; reference_shape and kernel_shape."""
    problems: list[list[Json]] | None = opt()   # [[what ("shape" | "dtype" | "device"), got, expected]]
    not_tensor: str | None = opt()              # the type the kernel returned in an output's place
    returned: str | None = opt()                # the kernel's return value's type, when the outputs cannot be read
    declared: list[str] | None = opt()          # from it: the outputs the spec declares
    reference_shape: list[int] | None = opt()   # the reference returned another shape than the kernel
    kernel_shape: list[int] | None = opt()


@dataclass(frozen=True, kw_only=True)
class AllocatedFacts(Facts, part=True):
    """A tensor the kernel allocated itself during the call, guarded (run/guarded_alloc.py)."""
    op: str                            # the torch factory that made it (empty, zeros, ...)
    shape: list[int]
    dtype: str
    returned: bool                     # the kernel returned it as an output (else its scratch)


@dataclass(frozen=True, kw_only=True)
class GuardFacts(Facts, check=Check.GUARD):
    itemsize: int
    n_after: int                       # guard bytes overwritten after the end, and before the start
    n_before: int
    after: list[int] = field(default_factory=list)    # the first 64 of them (byte offsets)
    before: list[int] = field(default_factory=list)
    after_lo: int | None = opt()
    after_hi: int | None = opt()
    before_lo: int | None = opt()
    before_hi: int | None = opt()
    allocated: AllocatedFacts | None = opt()   # a tensor the kernel allocated itself (run/guarded_alloc.py)


@dataclass(frozen=True, kw_only=True)
class InputChangedFacts(Facts, check=Check.INPUT_CHANGED):
    how: Literal["copy", "hash", "values"]
    gap_bytes: int = 0                     # bytes between a strided view's elements that changed
    resized: list[list[int]] | None = opt()   # [[shape before], [shape after]]
    slabs: int | None = opt()              # hash: slabs of rows that differ, of how many
    of: int | None = opt()
    # a write the spec declares (Spec's grad_overwritten=, mutated='backward'): what the buffer may hold
    # after the call ("gradient": a gradient of the reference's, or its data as passed), and it holds neither
    declared: Literal["gradient"] | None = opt()
    upstream: bool | None = opt()          # the buffer is an upstream gradient kladder handed the backward ('upstream y')


@dataclass(frozen=True, kw_only=True)
class InvalidReferenceFacts(Facts, check=Check.INVALID_REFERENCE):
    functions: list[str] = field(default_factory=list)   # the kernel's functions and GPU kernels the reference ran
    gpu_kernels: list[str] = field(default_factory=list)
