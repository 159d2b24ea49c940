"""Invariants: properties the outputs must have with or without a reference (probabilities
sum to one; V = 1 gives 1), checked where they apply."""
from __future__ import annotations

from ..core.notation import ValueKind
from ..core.outcome import Check, Finding, NoteKind, SpecBroken, error_facts
from ..core.facts import InvariantFacts
from .pattern import Where, describe


def invariants(spec, point, inputs: dict, outputs: dict) -> list[Finding]:
    """Each invariant that applies here: those without values everywhere, those with values
    where the point gives the inputs those values."""
    import torch
    findings = []
    given = point.kinds
    for inv in spec.invariants:
        if inv.values and any(given.get(a) != ValueKind.parse(k) for a, k in inv.values.items()):
            continue
        try:
            held = inv.check(inputs, outputs)
        except Exception as e:  # the spec's own predicate failed
            raise SpecBroken(NoteKind.INVARIANT_RAISED, name=inv.name, **error_facts(e)) from e
        if isinstance(held, torch.Tensor) and held.numel() > 1:
            bad = ~held.to(torch.bool)
            n_bad = int(bad.sum())
            if n_bad:
                findings.append(Finding(Check.INVARIANT, inv.name, pattern=describe(bad, Where()), mismatched=n_bad,
                                        total=bad.numel(), facts=InvariantFacts(name=inv.name)))
        elif not bool(held):
            findings.append(Finding(Check.INVARIANT, inv.name, facts=InvariantFacts(name=inv.name)))
    return findings
