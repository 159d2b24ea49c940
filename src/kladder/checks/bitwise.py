"""Bit for bit: two results that must be the same bits (A before and after B; a cold and a
warm cache; zero and poisoned padding). One comparison and one finding for every mode."""
from __future__ import annotations

from ..core.facts import NotBitwiseFacts, PaddingFacts
from ..core.outcome import Cause, Check, Finding
from .pattern import Where, describe


def bits_differ(a, b):
    """Where two tensors of one dtype and shape differ bit for bit (NaN == NaN when the bits
    agree; -0 != +0)."""
    import torch
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.contiguous().view(ints) != b.contiguous().view(ints)


def same(before: dict, after: dict, cause: Cause, call: str, where: dict[str, Where] | None = None,
         facts: dict | None = None) -> list[Finding]:
    """A finding per output whose bits differ. Outputs missing on one side, or of another
    shape or dtype, are the value checks' business. With `where` (padding), the finding
    says where the differing elements are."""
    import torch
    findings = []
    for name, b in before.items():
        a = after.get(name)
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            continue
        differ = bits_differ(a, b)
        n = int(differ.sum())
        if not n:
            continue
        pattern = describe(differ, where[name]) if where else None
        check = Check.PADDING if cause == Cause.PADDING else Check.NOT_BITWISE
        facts_class = PaddingFacts if cause == Cause.PADDING else NotBitwiseFacts
        findings.append(Finding(check, name, call=call, pattern=pattern, mismatched=n, total=differ.numel(),
                                facts=facts_class(cause=str(cause), **(facts or {}))))
    return findings
