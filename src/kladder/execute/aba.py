"""A-B-A in one process: a server calls one kernel with many shapes and configs for days.
A at its shape and config, then B at another, then A again on the same inputs: each call is
checked against the reference, and the second A must equal the first bit for bit. Module
state set by one call (a cached launcher, a workspace sized for the first shape) shows here."""
from __future__ import annotations

import dataclasses


class ABA:
    name = "aba"

    def run(self, h) -> tuple[list, str]:
        a = h.point
        partner = dict(a.partner)
        b = dataclasses.replace(a, dims=partner.get("dims", a.dims), config=partner.get("config", a.config),
                                partner=(), seed=0)
        first = h.prepare(a)
        returned = h.call(first, "call 1 of 3 (A)")
        kept = _snapshot(h, first, returned)
        findings = h.check(first, returned, "call 1 of 3 (A)")
        mid = h.prepare(b)
        findings += h.check(mid, h.call(mid, "call 2 of 3 (B)"), "call 2 of 3 (B)")
        again = h.prepare(a)
        label = "call 3 of 3 (A again, after B)"
        returned = h.call(again, label)
        findings += h.check(again, returned, label)
        findings += _bitwise(h, kept, again, returned, label)
        return findings, ""


def _snapshot(h, prep, returned) -> dict:
    """Copy call 1's outputs before B can overwrite whatever they alias."""
    outputs, _ = h.outputs(prep, returned)
    return {n: t.detach().clone() for n, t in outputs.items() if hasattr(t, "detach")}


def _bitwise(h, kept: dict, prep, returned, label: str) -> list:
    import torch

    from ..compare import Finding
    outputs, _ = h.outputs(prep, returned)
    out = []
    for name, before in kept.items():
        now = outputs.get(name)
        if not isinstance(now, torch.Tensor) or now.shape != before.shape:
            continue
        differ = (now.view(-1).view(torch.uint8) != before.view(-1).view(torch.uint8)) if now.dtype == before.dtype else None
        if differ is not None and bool(differ.any()):
            n = int((now != before).sum()) or int(differ.sum())
            out.append(Finding("not_bitwise", name, f"`{name}` of A after B differs from A's first result in {n:,} "
                               f"of {now.numel():,} elements, on the same inputs: state left by B changed A",
                               pattern="A after B differs from A", mismatched=n, total=now.numel(), call=label))
    return out
