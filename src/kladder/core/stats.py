"""Failure rates with confidence bounds (rung 5). A race is a probability: k wrong calls in n
say that one call fails with a probability p somewhere in an interval, and n clean calls bound
it from above. Pure functions of counts; SciPy is imported inside them, so that importing
kladder stays cheap. Every float returned is finite (the JSON kladder writes is strict).

The interval is Clopper-Pearson (the exact binomial one: never narrower than the data allow),
two-sided at `conf`; the bound a clean run proves is the one-sided upper end at `conf`, the
"0 in 200,000 calls: p < 1.5e-5 at 95%" of the rule of three. Quantiles of the beta
distribution come from scipy.special.betaincinv (scipy.stats takes seconds to import)."""
from __future__ import annotations

import math

CONFIDENCE = 0.95


def interval(k: int, n: int, conf: float = CONFIDENCE) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for the rate of k events in n trials."""
    from scipy.special import betaincinv
    if n <= 0:
        return 0.0, 1.0
    tail = (1 - conf) / 2
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, tail))
    hi = 1.0 if k >= n else float(betaincinv(k + 1, n - k, 1 - tail))
    return lo, hi


def upper_bound(k: int, n: int, conf: float = CONFIDENCE) -> float:
    """One-sided Clopper-Pearson upper bound: the rate is below it with probability `conf`.
    For k = 0 it is 1 - (1 - conf)^(1/n), about 3/n at 95%."""
    from scipy.special import betaincinv
    if n <= 0 or k >= n:
        return 1.0
    return float(betaincinv(k + 1, n - k, conf))


def chance_to_see(p: float, calls: int) -> float:
    """The chance that `calls` independent calls, each wrong with probability p, show at least
    one wrong call: 1 - (1 - p)^N, computed without cancellation for tiny p."""
    if p <= 0 or calls <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    return -math.expm1(calls * math.log1p(-p))


def calls_to_see(p: float, chance: float) -> int:
    """The calls needed to see a rate p at least once with probability `chance`
    (0 when p is 0: no number of calls will)."""
    if p <= 0:
        return 0
    if p >= 1:
        return 1
    return max(1, math.ceil(math.log1p(-chance) / math.log1p(-p)))


def curve(p: float, lo: float, hi: float, calls: int) -> list[list[float]]:
    """The failure-probability curve 1 - (1 - p)^N at N = 1, 2, 5, 10, ... until every end of
    the interval passes 99.9% (or N reaches 10^13): [[N, at p, at lo, at hi], ...]."""
    rows, n = [], 1
    reach = min(max(calls, calls_to_see(lo if lo > 0 else p, 0.999)), 10 ** 13)
    while True:
        rows.append([n, chance_to_see(p, n), chance_to_see(lo, n), chance_to_see(hi, n)])
        if n >= reach:
            return rows
        n = _next_step(n)


def _next_step(n: int) -> int:
    lead = int(str(n)[0])
    return n * 2 if lead == 1 else n * 5 // 2 if lead == 2 else n * 2


def summary(k: int, n: int, conf: float = CONFIDENCE) -> dict:
    """What a report says about k wrong calls in n: the rate, its interval, the bound a clean
    run proves, the calls needed to see the rate with 50% and 95% chance, and the curve."""
    lo, hi = interval(k, n, conf)
    rate = k / n if n else 0.0
    p = rate if k else upper_bound(0, n, conf)
    return {"rate": rate, "lo": lo, "hi": hi, "conf": conf, "bound": upper_bound(k, n, conf),
            "calls_50": calls_to_see(p, 0.5), "calls_95": calls_to_see(p, 0.95),
            "curve": curve(p, lo if k else 0.0, hi, n)}
