"""Bit for bit: two results that must be the same bits (A before and after B; a cold and a
warm cache; zero and poisoned padding). One comparison and one finding for every mode."""
from __future__ import annotations

from ..core.facts import NotBitwiseFacts, PaddingFacts
from ..core.outcome import Cause, Check, Finding
from .pattern import Where, count, describe


def bits_differ(a, b):
    """Where two tensors of one dtype and shape differ bit for bit (NaN == NaN when the bits
    agree; -0 != +0)."""
    import torch
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return a.contiguous().view(ints) != b.contiguous().view(ints)


def same(before: dict, after: dict, cause: Cause, call: str, where: dict[str, Where] | None = None,
         facts: NotBitwiseFacts | PaddingFacts | None = None) -> list[Finding]:
    """A finding per output whose bits differ, with `facts` (None: NotBitwiseFacts of the cause).
    Outputs missing on one side, or of another shape or dtype, are the value checks' business.
    With `where` (padding), the finding says where the differing elements are."""
    import torch
    findings = []
    for name, b in before.items():
        a = after.get(name)
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            continue
        differ = bits_differ(a, b)
        n = count(differ)
        if not n:
            continue
        pattern = describe(differ, where[name]) if where else None
        check = Check.PADDING if cause == Cause.PADDING else Check.NOT_BITWISE
        if facts is None:
            facts = NotBitwiseFacts(cause=str(cause))
        if type(facts) is not (PaddingFacts if cause == Cause.PADDING else NotBitwiseFacts) or facts.cause != cause:
            raise TypeError(f"a {cause} comparison's facts are not {type(facts).__name__}(cause={facts.cause!r})")
        findings.append(Finding(check, name, call=call, pattern=pattern, mismatched=n, total=differ.numel(),
                                facts=facts))
    return findings
