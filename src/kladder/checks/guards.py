"""Guard bytes: bytes outside a tensor that changed, a store past its end (or before its
start). A store a few elements past the end lands inside the caching allocator's block, where
compute-sanitizer's memcheck sees nothing; the sentinels see it, bit for bit."""
from __future__ import annotations

from ..core.outcome import Check, Finding
from ..core.facts import GuardFacts


def guards(name: str, damaged_before: list[int], damaged_after: list[int], itemsize: int,
           allocated: dict | None = None) -> Finding | None:
    """`allocated`: the tensor was the kernel's own allocation ({op, shape, dtype, returned}),
    not one kladder handed it; `name` is then the output it returned there, or ''."""
    if not damaged_before and not damaged_after:
        return None
    facts = {"allocated": allocated} if allocated else {}
    facts |= {"itemsize": itemsize, "n_after": len(damaged_after), "n_before": len(damaged_before),
             "after": sorted(damaged_after)[:64], "before": sorted(damaged_before)[:64]}
    if damaged_after:
        facts.update(after_lo=min(damaged_after), after_hi=max(damaged_after))
    if damaged_before:
        facts.update(before_lo=min(damaged_before), before_hi=max(damaged_before))
    return Finding(Check.GUARD, name, mismatched=len(damaged_before) + len(damaged_after), facts=GuardFacts(**facts))


def returned_by(allocation, outputs: dict) -> str:
    """The output the kernel returned in this allocation's storage (run/guarded_alloc.py), or
    '': a scratch allocation. A freed allocation returned nothing."""
    if allocation.freed:
        return ""
    for name, t in outputs.items():
        try:
            ptr = t.untyped_storage().data_ptr()
        except (AttributeError, RuntimeError):
            continue
        if ptr == allocation.ptr:
            return name
    return ""


def resized(allocation) -> bool:
    """Whether the tensor handed out was resized or re-pointed since (`resize_`, an out= op
    that resizes its output, `set_`): its bytes are then not the allocation's, and the guard
    after it may be its own elements. Not judged."""
    if allocation.freed:
        return False
    t = allocation.tensor() if allocation.tensor is not None else None
    if t is not None and (tuple(t.shape) != tuple(allocation.shape) or t.untyped_storage().data_ptr() != allocation.ptr):
        return True
    return allocation.g.buf.untyped_storage().nbytes() != allocation.nbytes
