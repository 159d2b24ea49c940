"""A lean inside the tolerance: errors that all go one way. An unbiased kernel's rounding
errors cancel across a model's layers; a biased one's add up (reference/000 §7.2). A warning,
never a failure: rung 8 shows what it costs."""
from __future__ import annotations

from ..outcome import Check, Finding

BIAS_P = 1e-6              # the sign test's threshold: chance would lean this way once in a million
BIAS_ULPS = 0.1            # and the mean error must be at least a tenth of the output's rounding unit
BIAS_SAMPLE = 1 << 20      # elements the test looks at: a million decide a lean of 0.1 ulp as well as a billion


def bias(name: str, out, ref) -> Finding | None:
    """A sign test over the elements that differ, and the mean signed error in units of the
    output dtype's rounding (ulps at the reference's magnitude)."""
    import torch
    if not (isinstance(out, torch.Tensor) and out.is_floating_point()) or out.numel() < 64:
        return None
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    if o.numel() > BIAS_SAMPLE:               # a seeded, even sample: sorting 2^26 pairs costs seconds
        step = o.numel() // BIAS_SAMPLE
        o, r = o[::step], r.to(o.device)[::step]
    o = o.to(torch.float64)
    r = r.to(device=o.device, dtype=torch.float64)
    ok = o.isfinite() & r.isfinite() & (r != 0)
    o, r = o[ok], r[ok]
    if o.numel() > 1:       # repeated (kernel, reference) pairs (identical rows) count once
        pairs = torch.unique(torch.stack([o, r]), dim=1)
        o, r = pairs[0], pairs[1]
    mag = torch.maximum(r.abs(), r.pow(2).mean().sqrt())     # near zero, the output's RMS sets the scale
    ulp = mag * torch.finfo(out.dtype).eps
    # two ways to lean: above/below (an offset) and away from/toward zero (a scale)
    for lean, diff in (("offset", o - r), ("scale", (o - r) * r.sign())):
        up, down = int((diff > 0).sum()), int((diff < 0).sum())
        if up + down < 64:
            return None
        mean_ulps = float((diff / ulp).mean())
        # the exact test only where it can matter: |up - down| under 4.5 standard deviations
        # of a fair coin is a p-value far above BIAS_P (SciPy's import costs 0.7 s a worker)
        if abs(mean_ulps) < BIAS_ULPS or abs(up - down) < 4.5 * (up + down) ** 0.5:
            continue
        from scipy.stats import binomtest
        p = binomtest(up, up + down, 0.5).pvalue
        if p >= BIAS_P:
            continue
        return Finding(Check.BIAS, name, facts={"lean": lean, "up": up, "down": down, "p": max(p, 1e-300),
                                               "mean_ulps": mean_ulps, "rel": float((diff / mag).mean()),
                                               "dtype": str(out.dtype).removeprefix("torch.")})
    return None
