"""A lean inside the tolerance: errors that all go one way. An unbiased kernel's rounding
errors cancel across a model's layers; a biased one's add up (reference/000 §7.2). A warning,
never a failure: rung 8 shows what it costs.

Judged against the honest peer's own lean: a correct float32 softmax leans against its float64
reference (so does the reference run in float32, the same way), and a correct op's rounding is
not a warning. With the peer, the kernel must lean against the reference AND against the peer,
the same way."""
from __future__ import annotations

from ..outcome import Check, Finding

BIAS_P = 1e-6              # the sign test's threshold: chance would lean this way once in a million
BIAS_ULPS = 0.1            # and the mean error must be at least a tenth of the output's rounding unit
SAMPLE = 1 << 22           # elements a test reads at most (a strided sample of a big output)


def _flat(t, step: int):
    import torch
    return t.detach().reshape(-1)[::step].to(torch.float64)


def _lean(o, r, ref_for_scale, dtype):
    """(lean, up, down, p, mean_ulps, rel) of the first significant way `o` leans from `r`, or None."""
    import torch
    from scipy.stats import binomtest
    mag = torch.maximum(ref_for_scale.abs(), ref_for_scale.pow(2).mean().sqrt())   # near zero, the RMS sets the scale
    ulp = mag * torch.finfo(dtype).eps
    # two ways to lean: above/below (an offset) and away from/toward zero (a scale)
    for lean, diff in (("offset", o - r), ("scale", (o - r) * ref_for_scale.sign())):
        up, down = int((diff > 0).sum()), int((diff < 0).sum())
        if up + down < 64:
            return None
        p = binomtest(up, up + down, 0.5).pvalue
        mean_ulps = float((diff / ulp).mean())
        if p >= BIAS_P or abs(mean_ulps) < BIAS_ULPS:
            continue
        return lean, up, down, p, mean_ulps, float((diff / mag).mean())
    return None


def bias(name: str, out, ref, peer=None) -> Finding | None:
    """A sign test over the elements that differ, and the mean signed error in units of the
    output dtype's rounding (ulps at the reference's magnitude). With `peer` (the reference run
    in the kernel's precision), only a lean the peer does not share."""
    import torch
    if not (isinstance(out, torch.Tensor) and out.is_floating_point()) or out.numel() < 64:
        return None
    step = max(1, out.numel() // SAMPLE)
    o = _flat(out, step)
    r = _flat(ref, step).to(o.device)
    p = None
    if peer is not None and isinstance(peer, torch.Tensor) and peer.shape == out.shape:
        p = _flat(peer, step).to(o.device)
    ok = o.isfinite() & r.isfinite() & (r != 0)
    if p is not None:
        ok &= p.isfinite()
    o, r = o[ok], r[ok]
    p = p[ok] if p is not None else None
    if o.numel() > 1:       # repeated (kernel, reference) pairs (identical rows) count once
        rows = [o, r] if p is None else [o, r, p]
        uniq = torch.unique(torch.stack(rows), dim=1)
        o, r = uniq[0], uniq[1]
        p = uniq[2] if p is not None else None
    lean = _lean(o, r, r, out.dtype)
    if lean is None:
        return None
    if p is not None:
        against_peer = _lean(o, p, r, out.dtype)
        if against_peer is None or against_peer[0] != lean[0] or (against_peer[1] > against_peer[2]) != (lean[1] > lean[2]):
            return None
    kind, up, down, pv, mean_ulps, rel = lean
    return Finding(Check.BIAS, name, facts={"lean": kind, "up": up, "down": down, "p": max(pv, 1e-300),
                                           "mean_ulps": mean_ulps, "rel": rel, "peer": p is not None,
                                           "dtype": str(out.dtype).removeprefix("torch.")})
