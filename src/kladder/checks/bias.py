"""A lean inside the tolerance: errors that all go one way. An unbiased kernel's rounding
errors cancel across a model's layers; a biased one's add up (zoo/compounding_bias.py). A warning,
never a failure: rung 8 shows what it costs.

The unit of the sign test is a row, not an element: the elements of a row share its
normaliser's rounding (one rounding of a softmax's sum moves all 4,095 of a row's elements the
same way: a correct float32 softmax "leans" at p = 1e-70 over one row). Rows are independent
roundings; a kernel that truncates leans in every row. And it is judged against the honest
peer's own lean: a correct op's rounding is not a warning, so with the peer (the reference run
in the kernel's precision) the kernel must lean against the reference AND against the peer,
the same way."""
from __future__ import annotations

from ..core.outcome import Check, Finding
from ..core.facts import BiasFacts

BIAS_P = 1e-6              # the sign test's threshold: chance would lean this way once in a million
BIAS_ULPS = 0.1            # and the mean error must be at least a tenth of the output's rounding unit
MIN_ROWS = 64              # fewer independent rows than this cannot show a lean at BIAS_P
SAMPLE = 1 << 22           # elements a test reads at most (rows of a big output, strided)


def _rows(t, keep: int):
    """t as float64 rows (the last dim; a 0-d or 1-d tensor: one element a row), every
    keep-th row (a big output is sampled)."""
    import torch
    t = t.detach()
    r = t.reshape(-1, t.shape[-1]) if t.dim() >= 2 else t.reshape(-1, 1)
    return r[::keep].to(torch.float64)


def _lean(diff, r, dtype):
    """(lean, up, down, p, mean_ulps, rel) of the first significant way `diff` (rows of signed
    errors) leans, or None. Rows that repeat (identical rows) count once."""
    import torch
    ok = diff.isfinite() & r.isfinite() & (r != 0)
    mag = torch.maximum(r.abs(), r[ok].pow(2).mean().sqrt() if bool(ok.any()) else r.abs())
    ulp = mag * torch.finfo(dtype).eps
    count = ok.sum(-1)
    # two ways to lean: above/below (an offset) and away from/toward zero (a scale)
    for lean, d in (("offset", diff), ("scale", diff * r.sign())):
        u = torch.where(ok, d / ulp, torch.zeros_like(d))
        mean_ulps = float(u.sum() / max(int(count.sum()), 1))
        if abs(mean_ulps) < BIAS_ULPS:
            continue
        per_row = torch.unique(u.sum(-1)[count > 0] / count[count > 0])
        up, down = int((per_row > 0).sum()), int((per_row < 0).sum())
        if up + down < MIN_ROWS:
            return None
        from scipy.special import bdtr           # only for a lean worth testing: SciPy costs 0.7 s to import
        p = min(1.0, 2 * float(bdtr(min(up, down), up + down, 0.5)))     # two-sided sign test
        if p >= BIAS_P:
            continue
        rel = float(torch.where(ok, d / mag, torch.zeros_like(d)).sum() / max(int(count.sum()), 1))
        return lean, up, down, p, mean_ulps, rel
    return None


def bias(name: str, out, ref, peer=None) -> Finding | None:
    """A sign test over the rows, and the mean signed error in units of the output dtype's
    rounding (ulps at the reference's magnitude). With `peer`, only a lean the peer does not
    share."""
    import torch
    if not (isinstance(out, torch.Tensor) and out.is_floating_point()) or out.numel() < MIN_ROWS:
        return None
    row = out.shape[-1] if out.dim() >= 2 else 1
    keep = max(1, out.numel() // row // max(SAMPLE // max(row, 1), 1))
    o, r = _rows(out, keep), _rows(ref, keep).to(out.device)
    lean = _lean(o - r, r, out.dtype)
    if lean is None:
        return None
    with_peer = peer is not None and isinstance(peer, torch.Tensor) and peer.shape == out.shape
    if with_peer:
        against = _lean(o - _rows(peer, keep).to(out.device), r, out.dtype)
        if against is None or against[0] != lean[0] or (against[1] > against[2]) != (lean[1] > lean[2]):
            return None
    kind, up, down, p, mean_ulps, rel = lean
    return Finding(Check.BIAS, name, facts=BiasFacts(lean=kind, up=up, down=down, p=max(p, 1e-300),
                                                   mean_ulps=mean_ulps, rel=rel, peer=with_peer,
                                                   dtype=str(out.dtype).removeprefix("torch.")))
