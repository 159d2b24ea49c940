"""Values: the kernel's output against the reference's, NaN-aware, with per-dtype tolerances
scaled by the reference's magnitude, widened where an honest peer shows a correct
implementation cannot do better (checks/peer.py). Every mismatch is collected before anything
is reported, and located: which elements, in what pattern, how far off, and what was allowed
(the habit of torch.testing).

The comparison reads the output and the reference once, in slabs of whole rows (CHUNK elements:
every temporary of a slab stays in cache, so a slab's ops cost one pass over memory), in
float32 wherever float32 decides as float64 would: elements within a rounding of float32 of
their threshold, or past float32's range, are decided again in float64. Only an output that
fails goes further (the peers, the pattern, the largest difference)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..core.outcome import Check, Finding, Largest
from ..core.facts import ContractFacts, ValuesFacts
from ..core.sizes import as_rows, output_cliffs
from ..core.spec import Tolerance
from . import fast
from . import peer as peers
from .pattern import Where, count, describe, original_index, unravel


@dataclass(frozen=True)
class Expected:
    """What a call's outputs are judged against (run/harness.py Harness.expected): the
    reference's outputs by name, and on a GPU, for floating outputs of 32 bits or fewer, their
    copies rounded to the output's dtype, which the comparison's fast pass reads (as many bytes
    as the output) before the float64 reference where it cannot decide (checks/fast.py)."""
    refs: dict[str, Any]
    refs_lo: dict[str, Any] = field(default_factory=dict)


CHUNK = 1 << 22               # elements a slab: 16 MiB a float32 temporary
# float32 decides when |difference - allowed| is past this many units of the magnitudes
# involved: the float32 rounding of the reference, the difference and the threshold is at most
# ~2^-22 of them, so 2^-20 leaves a margin of four
MARGIN = 2.0 ** -20
# failures past this many are not re-judged (their flat indices alone would take 2 GiB): a
# float16 cumsum that accumulates in float16 fails the default in 20M of 33M elements at N = 8192
PEER_MAX_ELEMENTS = 1 << 28
# The honest peer runs only where the verdict depends on it: an output whose worst element is off
# by more than PEER_DECIDES x the dtype's default budget there fails whatever the peers measure, and
# is judged at once. Across kladder's false-alarm suite (16 correct torch ops, rungs 1-3, seeds 0 and
# 1 on the CPU: 4,966 points) the most a peer ever widened a failing element's budget was 20 x its
# default (a bfloat16 attention on near-tied values; layer_norm on ties 14 x), and a peer's own budget
# stops at 8 x the rest or sqrt(u) of the element (188 x the float32 default, 22 x float16's); the
# zoo's value bugs are 10-100 x past their budgets (they still get their peers). Issue 32's GEMV,
# off by 8% (10^4 x its budget), spent 104.7 s in the peers' stage for a verdict they could not change.
PEER_DECIDES = 1000.0


@dataclass
class Mismatch:
    """The failed elements of one output: `bad` (a bool mask of the output's shape, on the
    reference's device), each reference row's RMS (the scale), and, once the peers were asked,
    the budget each remaining failure had (`settled`: flat index -> allowed) and which budget
    applied (`facts`, see outcome.Check.VALUES)."""
    bad: Any
    rms: Any
    cols: int
    n_bad: int
    n_excusable: int                       # finite against finite, over the tolerance: a peer may excuse these
    settled: tuple | None = None           # (flat indices, allowed there) after the peers
    facts: dict = field(default_factory=dict)
    worst_ratio: float = 0.0               # after the peers: the largest error / allowed among what still fails


def _torch():
    import torch
    return torch


def _slabs(rows: int, cols: int):
    """(rows, cols) slices covering a (rows, cols) view in slabs of about CHUNK elements:
    whole rows where a row fits, else pieces of one row."""
    if cols <= CHUNK:
        step = max(1, CHUNK // max(cols, 1))
        for a in range(0, rows, step):
            yield slice(a, min(rows, a + step)), slice(None)
    else:
        for a in range(rows):
            for b in range(0, cols, CHUNK):
                yield slice(a, a + 1), slice(b, min(cols, b + CHUNK))


def row_rms(r):
    """RMS of each reference row over finite entries (float64): the output's scale, so that an
    element near zero is held to the row's rounding noise, not to its own tiny magnitude."""
    torch = _torch()
    r2 = as_rows(r.detach())
    rows, cols = r2.shape
    sq = torch.zeros(rows, dtype=torch.float64, device=r2.device)
    cnt = torch.zeros(rows, dtype=torch.float64, device=r2.device)
    for rs, cs in _slabs(rows, cols):
        a, n = _sum_squares(r2[rs, cs])
        sq[rs] += a
        cnt[rs] += n
    return (sq / cnt.clamp(min=1)).sqrt()


def _sum_squares(r):
    """Each row's sum of squares and count over its finite entries (float64)."""
    torch = _torch()
    f = r.to(torch.float64)
    fin = f.isfinite()
    f = torch.where(fin, f, torch.zeros_like(f))
    return (f * f).sum(-1), fin.sum(-1)


def _verdict(o, r, s, tol: Tolerance, fmax: float, nonfinite: str | None):
    """True where `o` fails against `r` (NaN-aware), in the dtype of the operands."""
    allowed = _allowed(r, s, tol)
    both_nan = o.isnan() & r.isnan()
    same_inf = o.isinf() & r.isinf() & (o == r)
    finite = o.isfinite() & r.isfinite()
    bad = ~(both_nan | same_inf) & (~finite | ((o - r).abs() > allowed))
    # a true value past the output dtype's largest finite is +-inf in that dtype (or the
    # largest finite, for a kernel that saturates): overflow is the right answer there
    # (a reference within the tolerance of the largest finite may round either way)
    over = r.isfinite() & (r.abs() + allowed > fmax)
    bad &= ~(over & (o.sign() == r.sign()) & (o.abs() >= fmax))
    if nonfinite == "ignore":
        # NaN/Inf inputs must not reach the outputs; positions the reference cannot say are skipped
        bad = (bad & r.isfinite()) | ~o.isfinite()
    return bad


def _slab_verdict(o, r32, s, tol: Tolerance, fmax: float, nonfinite: str | None):
    """The verdict of one slab in float32 (`r32`: the float32 copy of the reference), and the
    elements float32 cannot decide: within MARGIN of their threshold (which covers the float32
    rounding of the reference, the difference, the threshold and the row's scale), past float32's
    range, or near the output dtype's largest."""
    torch = _torch()
    o32, s32 = o.to(torch.float32), s.to(torch.float32)
    bad = _verdict(o32, r32, s32, tol, fmax, nonfinite)
    d = (o32 - r32).abs()
    allowed = tol.atol + tol.rtol * torch.maximum(r32.abs(), s32)
    doubt = (d - allowed).abs() <= MARGIN * (r32.abs() + d + allowed)
    doubt |= r32.isinf()
    doubt |= r32.abs() + allowed > 0.5 * fmax
    return bad, doubt


def _decide_exactly(bad, doubt, o, r2, rs, cs, tol: Tolerance, fmax: float, nonfinite: str | None) -> None:
    """The doubtful elements of a slab decided in float64, with their rows' exact RMS: the only
    reads of the float64 reference when float32 decides the rest."""
    torch = _torch()
    rows = doubt.any(1).nonzero().flatten()
    first = rs.start or 0
    exact = row_rms(r2[rows + first])                      # whole rows, float64
    scale = torch.zeros(doubt.shape[0], dtype=torch.float64, device=doubt.device)
    scale[rows] = exact
    s64 = scale.unsqueeze(1).expand(doubt.shape)
    r = r2[rs, cs]
    bad[doubt] = _verdict(o[doubt].to(torch.float64), r[doubt].to(torch.float64), s64[doubt], tol, fmax, nonfinite)


def mismatch(out, ref, tol: Tolerance, nonfinite: str | None = None, ref_lo=None) -> Mismatch | None:
    """The failed elements of `out` at the dtype's default tolerance, or None when none fails.
    Integer and bool outputs are exact. On a GPU, with `ref_lo` (the reference rounded to the
    output's dtype, made with it: harness.expected), one fused pass counts the failures first
    (checks/fast.py) and a point that surely passes stops there. Otherwise the verdict is made
    in float32 slab by slab, each row's scale (its RMS) taken from the float32 copy (within
    2^-23 of float64's), and every element float32 cannot decide is decided in float64."""
    torch = _torch()
    if nonfinite is None and fast.applies(out, ref_lo) and fast.counts(out, ref_lo, tol.rtol, tol.atol) == (0, 0):
        return None
    o2, r2 = as_rows(out.detach()), as_rows(ref.detach())
    rows, cols = r2.shape
    if not r2.numel():
        return None
    dev = r2.device
    bad = torch.empty((rows, cols), dtype=torch.bool, device=dev)
    if not out.is_floating_point():
        for rs, cs in _slabs(rows, cols):
            bad[rs, cs] = o2[rs, cs].to(device=dev, dtype=torch.int64) != r2[rs, cs].to(torch.int64)
        n_bad = count(bad)
        return Mismatch(bad.reshape(out.shape), None, cols, n_bad, 0) if n_bad else None
    narrow = out.dtype != torch.float64
    whole_rows = cols <= CHUNK                 # then each slab's rows give their own RMS, read once
    rms = torch.empty(rows, dtype=torch.float64, device=dev) if whole_rows else row_rms(r2)
    fmax = torch.finfo(out.dtype).max
    for rs, cs in _slabs(rows, cols):
        o = o2[rs, cs].to(dev)
        r = r2[rs, cs]
        r32 = r.to(torch.float32) if narrow else None
        if whole_rows:
            sq, n = _sum_squares(r if r32 is None else r32)
            rms[rs] = (sq / n.clamp(min=1)).sqrt()
        if r32 is None:
            bad[rs, cs] = _verdict(o.to(torch.float64), r.to(torch.float64), rms[rs].unsqueeze(1), tol, fmax, nonfinite)
            continue
        slab, doubt = _slab_verdict(o, r32, rms[rs].unsqueeze(1), tol, fmax, nonfinite)
        if bool(doubt.any()):
            _decide_exactly(slab, doubt, o, r2, rs, cs, tol, fmax, nonfinite)
        bad[rs, cs] = slab
    n_bad = count(bad)
    if not n_bad:
        return None
    excusable = 0
    for rs, cs in _slabs(rows, cols):
        excusable += int((bad[rs, cs] & o2[rs, cs].to(dev).isfinite() & r2[rs, cs].isfinite()).sum())
    return Mismatch(bad.reshape(out.shape), rms, cols, n_bad, excusable)


def beyond_peers(m: Mismatch, out, ref, tol: Tolerance) -> float | None:
    """The worst excusable failure's error over the dtype's default budget there, when it is past
    PEER_DECIDES (no peer can change the verdict: judged at once), else None."""
    torch = _torch()
    if not m.n_excusable or m.rms is None:
        return None
    flat = m.bad.reshape(-1)
    dev = flat.device
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    worst = 0.0
    for a in range(0, flat.numel(), CHUNK):
        fb = flat[a:a + CHUNK]
        if not bool(fb.any()):
            continue
        oc = o[a:a + CHUNK].to(device=dev, dtype=torch.float64)
        rc = r[a:a + CHUNK].to(torch.float64)
        idx = torch.arange(a, a + fb.numel(), device=dev)
        scale = torch.maximum(rc.abs(), m.rms[idx // m.cols].to(torch.float64))
        ratio = (oc - rc).abs() / (tol.atol + tol.rtol * scale)
        ok = fb & oc.isfinite() & rc.isfinite() & ratio.isfinite()
        if bool(ok.any()):
            worst = max(worst, float(ratio[ok].max()))
    return worst if worst > PEER_DECIDES else None


def not_needed(m: Mismatch, times: float) -> Mismatch:
    """`m` judged at once: the default is its budget, and the facts say why no peer was asked."""
    from ..core.facts import PeerNotNeededFacts
    return dataclasses.replace(m, facts={**m.facts, "budget": "default",
                                         "peer": PeerNotNeededFacts(times=times, decides=PEER_DECIDES)})


def _ulp(x, dtype):
    """One unit in the last place of `dtype` at |x| (float64)."""
    torch = _torch()
    _, e = torch.frexp(x.abs().clamp(min=torch.finfo(dtype).tiny))
    return torch.ldexp(torch.ones_like(x), e - 1) * torch.finfo(dtype).eps


def settle(m: Mismatch, out, ref, tol: Tolerance, spread=None, peer=None, peer_facts: dict | None = None,
           slack_ulps: int = 0, unit: float = 0.0, runs: tuple = (), rounded=None) -> Mismatch | None:
    """Re-judge the failures a budget may excuse (finite against finite) with max(the default,
    atol + rtol x s / unit, C x K x s') (checks/peer.py: s the element's rounding spread, unit the
    inputs' largest unit roundoff, K the kernel-precision peer's error in units of s');
    `slack_ulps` more units in the last place where the Triton interpreter is known to round
    worse than the device (run/interpreter.py). The failures are judged CHUNK at a time (a
    float16 cumsum at N = 8192 fails the default in 61% of its elements: each temporary stays a
    slab's). `runs`: more correct runs in the kernel's precision, (peer, its float64 reference)
    each: K is then the largest over the peer and them (checks/peer.SETTLE_MARGIN). `rounded`: a
    backward's spread with the reference's own arithmetic rounded too (checks/peer.backward_rounding):
    the spread's budget takes the larger of the two spreads (K stays measured against `spread`).
    Returns what still fails (None: nothing), with the budget that applied in its facts."""
    torch = _torch()
    if not m.n_excusable or m.n_excusable > PEER_MAX_ELEMENTS:
        if m.n_excusable:
            m = dataclasses.replace(m, facts={**m.facts, "budget": "default", "peer": {"skipped": m.n_excusable}})
        return m
    m = dataclasses.replace(m, bad=m.bad.clone(), facts=dict(m.facts))
    flat = m.bad.reshape(-1)
    dev = flat.device
    out_dtype = str(out.dtype).removeprefix("torch.")
    o = out.detach().reshape(-1)
    r = ref.detach().reshape(-1)
    if m.settled is not None:
        idx_all, floor_all = m.settled
    else:
        idx_all = torch.nonzero(flat & o.isfinite().to(dev) & r.isfinite()).flatten()
        floor_all = None
    factor = _peer_factor(m, peer, ref, spread, out_dtype) if peer is not None else None
    if factor is not None:
        for run, run_ref in runs:
            factor = max(factor, _peer_factor(m, run, run_ref, spread, out_dtype))
    ratio = 0.0
    kept_idx, kept_allowed, worst, kinds = [], [], None, None
    for a in range(0, idx_all.numel(), CHUNK):
        idx = idx_all[a:a + CHUNK]
        floor = None if floor_all is None else floor_all[a:a + CHUNK]
        oi, ri = o[idx.to(o.device)].to(device=dev, dtype=torch.float64), r[idx].to(torch.float64)
        scale = torch.maximum(ri.abs(), m.rms[idx // m.cols])
        default = tol.atol + tol.rtol * scale
        budgets = {"default": default if floor is None else torch.maximum(default, floor)}
        moved = raw = cap = None
        if spread is not None or peer is not None or rounded is not None:
            sp = None if spread is None else spread.reshape(-1)[idx.to(spread.device)].to(device=dev, dtype=torch.float64)
            s_i = peers.rounding(sp, scale, out_dtype)
            moved = torch.zeros_like(scale) if sp is None else torch.where(sp.isfinite(), sp, torch.zeros_like(sp))
            if rounded is not None:
                sr = rounded.reshape(-1)[idx.to(rounded.device)].to(device=dev, dtype=torch.float64)
                moved = torch.maximum(moved, torch.where(sr.isfinite(), sr, torch.zeros_like(sr)))
            # the default, at the scale of the terms that make the element (s / unit)
            budgets["spread"] = tol.atol + tol.rtol * (moved / unit if unit else torch.zeros_like(moved))
            if factor is not None:
                raw = peers.C * factor * s_i
                cap = peers.peer_cap(torch.maximum(default, budgets["spread"]), scale, out_dtype)
                budgets["peer"] = torch.minimum(raw, cap)
        kinds = list(budgets)
        allowed, which = torch.stack([budgets[k] for k in kinds]).max(0)
        if slack_ulps:
            allowed = allowed + slack_ulps * _ulp(torch.maximum(ri.abs(), oi.abs()), out.dtype)
        err = (oi - ri).abs()
        still = err > allowed
        flat[idx[~still]] = False
        m.n_bad -= int((~still).sum())
        if bool(still.any()):
            ratio = max(ratio, float((err[still] / allowed[still]).max()))
            kept_idx.append(idx[still])
            kept_allowed.append(allowed[still])
            over = torch.where(still, err - allowed, torch.full_like(err, -float("inf")))
            j = int(torch.argmax(over))
            if worst is None or float(over[j]) > worst[0]:
                worst = (float(over[j]), kinds[int(which[j])], None if moved is None else float(moved[j]),
                         None if raw is None else bool(raw[j] > cap[j]),
                         (int(idx[j]), float(allowed[j]), float(budgets["default"][j]),
                          None if raw is None else float(raw[j]) / peers.C))
    m.n_excusable = sum(int(t.numel()) for t in kept_idx)
    m.worst_ratio = ratio
    if not m.n_bad:
        return None
    empty = idx_all[:0]
    m.settled = (torch.cat(kept_idx) if kept_idx else empty,
                 torch.cat(kept_allowed) if kept_allowed else torch.zeros(0, dtype=torch.float64, device=dev))
    if m.n_excusable and kinds is not None and len(kinds) > 1:
        _, budget, at, capped, (flat_at, allowed_there, default_there, peer_there) = worst
        facts = m.facts
        facts.update(budget=budget, c=peers.C, budget_flat=flat_at, budget_allowed=allowed_there,
                     budget_default=default_there,
                     spread={"draws": peers.SPREAD_DRAWS if spread is not None else 0, "at": at or 0.0,
                             "terms": (at or 0.0) / unit if unit else 0.0})
        if peer_facts is not None:
            facts["peer"] = dict(peer_facts)
            if factor is not None:
                facts["peer"].update(factor=factor, capped=bool(capped), cap=peers.MAX_WIDENING,
                                     half_digits=peers.HALF_DIGITS)
                facts["budget_peer_error"] = peer_there
                if runs:
                    facts["peer"]["runs"] = 1 + len(runs)
    if slack_ulps:
        m.facts["slack_ulps"] = slack_ulps
    return m


def decided(m: Mismatch, out, ref, tol: Tolerance, spread, peer, unit: float) -> bool:
    """Whether every failure `settle` may excuse passes already, with `spread` a lower bound of
    the rounding spread (fewer draws, the rest counted as moving nothing) and the peer budget at
    its least: C x K x s' >= C x the peer's own error at the element whatever s is (K is at least
    that element's error in units of s'), capped by peer_cap at the lower bound's budgets. Every
    budget only grows with s, so when this says True, `settle` with the whole spread passes too."""
    torch = _torch()
    if m.n_bad != m.n_excusable or not m.n_excusable or m.n_excusable > PEER_MAX_ELEMENTS:
        return False
    out_dtype = str(out.dtype).removeprefix("torch.")
    flat = m.bad.reshape(-1)
    dev = flat.device
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    idx_all = torch.nonzero(flat).flatten()
    for a in range(0, idx_all.numel(), CHUNK):
        idx = idx_all[a:a + CHUNK]
        oi, ri = o[idx.to(o.device)].to(device=dev, dtype=torch.float64), r[idx].to(torch.float64)
        scale = torch.maximum(ri.abs(), m.rms[idx // m.cols])
        default = tol.atol + tol.rtol * scale
        sp = spread.reshape(-1)[idx.to(spread.device)].to(device=dev, dtype=torch.float64)
        moved = torch.where(sp.isfinite(), sp, torch.zeros_like(sp))
        rest = torch.maximum(default, tol.atol + tol.rtol * (moved / unit if unit else torch.zeros_like(moved)))
        allowed = rest
        if peer is not None:
            own = (peer.reshape(-1)[idx.to(peer.device)].to(device=dev, dtype=torch.float64) - ri).abs()
            own = torch.where(own.isfinite() & (scale > 0), own, torch.zeros_like(own))   # s' = 0: no peer budget
            allowed = torch.maximum(rest, torch.minimum(peers.C * own, peers.peer_cap(rest, scale, out_dtype)))
        if bool(((oi - ri).abs() > allowed).any()):
            return False
    return True


def settle_with(m: Mismatch, out, ref, tol: Tolerance, peer) -> Mismatch | None:
    """`settle` with one output's honest peer (run/harness.Peer, or None when it could not be
    made: then only the default applies); a near miss (every remaining failure within
    checks/peer.SETTLE_MARGIN x its budget) settled again with the peer's further runs."""
    rounded = getattr(peer, "rounded", None)
    first = settle(m, out, ref, tol, getattr(peer, "spread", None), getattr(peer, "kernel", None),
                   getattr(peer, "facts", None), unit=getattr(peer, "unit", 0.0), rounded=rounded)
    more = getattr(peer, "more", None)
    if first is None or more is None or getattr(peer, "kernel", None) is None or not near_miss(first):
        return first
    runs = tuple(more())
    if not runs:
        return first
    return settle(m, out, ref, tol, peer.spread, peer.kernel, peer.facts, unit=peer.unit, runs=runs, rounded=rounded)


# A near miss that more correct runs did not settle is a warning, not the kernel's failure, where
# it touches at most this share of the output: a correct float32 two-pass LayerNorm on an H100
# (examples/norm/layernorm_spec.py, ties, 17 x 8192) was off by 1.01 x its budget at 14 of
# 139,264 elements while torch's Welford peer and its re-rounded runs were 10 x closer: another
# correct summation order is that far off, and the peers, all torch's, cannot show it. A bug is
# not hidden by it: the zoo's value bugs are 10-100 x past their budget, or wrong at whole rows
# and tails; a near miss at more elements, or past SETTLE_MARGIN anywhere, stays a failure.
NEAR_MISS_SHARE = 1e-3


def near_miss_kept(m: Mismatch, total: int, peer) -> bool:
    """What still fails after the peer's further runs is a near miss (near_miss) at few elements
    (NEAR_MISS_SHARE of `total`): a warning. Only where the further runs were made (a peer
    with `more`): without them nothing settles a near miss."""
    return (getattr(peer, "more", None) is not None and getattr(peer, "kernel", None) is not None
            and near_miss(m) and m.n_bad <= NEAR_MISS_SHARE * total)


def near_miss(m: Mismatch) -> bool:
    """Every remaining failure within SETTLE_MARGIN x its budget, every one excusable (a
    non-finite output where the reference is finite is never a near miss)."""
    return m.n_bad == m.n_excusable and 0.0 < m.worst_ratio <= peers.SETTLE_MARGIN


def _peer_factor(m: Mismatch, peer, ref, spread, out_dtype: str) -> float:
    """K over the whole output, slab by slab (checks/peer.py)."""
    torch = _torch()
    p2, r2 = as_rows(peer.detach()), as_rows(ref.detach())
    s2 = None if spread is None else as_rows(spread.detach())
    rows, cols = r2.shape
    largest, sq, n = 0.0, 0.0, 0
    for rs, cs in _slabs(rows, cols):
        r = r2[rs, cs]
        scale = torch.maximum(r.abs().to(torch.float64), m.rms[rs].unsqueeze(1))
        s = peers.rounding(None if s2 is None else s2[rs, cs].to(r.device), scale, out_dtype)
        k, k2, c = peers.peer_errors(p2[rs, cs].to(r.device), r, s)
        largest, sq, n = max(largest, k), sq + k2, n + c
    return peers.tail_factor(largest, sq, n, rows * cols)


def finding(name: str, m: Mismatch, out, ref, tol: Tolerance, where: Where, about: dict | None = None) -> Finding:
    """The Finding for what still fails: its pattern, count, and the greatest difference with
    what was allowed there."""
    torch = _torch()
    flat = m.bad.reshape(-1)
    dev = flat.device
    o, r = out.detach().reshape(-1), ref.detach().reshape(-1)
    best, best_at, nonfinite = -2.0, 0, 0
    for a in range(0, flat.numel(), CHUNK):
        fb = flat[a:a + CHUNK]
        if not bool(fb.any()):
            continue
        oc = o[a:a + CHUNK].to(device=dev, dtype=torch.float64)
        rc = r[a:a + CHUNK].to(torch.float64)
        err = (oc - rc).abs()
        err = torch.where(err.isnan() | (fb & ~oc.isfinite()), torch.full_like(err, float("inf")), err)
        v, i = torch.where(fb, err, torch.full_like(err, -1.0)).max(0)
        if float(v) > best:
            best, best_at = float(v), a + int(i)
        nonfinite += int((fb & ~oc.isfinite() & rc.isfinite()).sum())
    oi, ri = float(o[best_at]), float(r[best_at])
    allowed = _allowed_at(m, best_at, ri, tol)
    shown = original_index(unravel(best_at, tuple(out.shape)), where)
    facts = {"nonfinite": nonfinite, "sampled": bool(where.row_ids), "rtol": tol.rtol, "atol": tol.atol,
             **(about or {}), **m.facts}
    cliffs = output_cliffs(facts.get("shape"), facts.get("dtype"))   # where the map marks the first row past a cliff
    if cliffs:
        facts["cliffs"] = cliffs
    flat_at = facts.pop("budget_flat", None)          # the element the budget facts describe, as the report indexes it
    if flat_at is not None:
        facts["budget_at"] = list(original_index(unravel(flat_at, tuple(out.shape)), where))
    return Finding(Check.VALUES, name, pattern=describe(m.bad, where), mismatched=m.n_bad, total=m.bad.numel(),
                   largest=Largest(shown, oi, ri, allowed), max_abs_err=abs(oi - ri) if _finite(oi) else float("inf"),
                   facts=ValuesFacts(**facts))


def _allowed_at(m: Mismatch, at: int, ref_value: float, tol: Tolerance) -> float:
    if m.settled is not None:
        hit = (m.settled[0] == at).nonzero()
        if hit.numel():
            return float(m.settled[1][int(hit[0])])
    if m.rms is None:
        return 0.0
    return tol.atol + tol.rtol * max(abs(ref_value), float(m.rms[at // m.cols]))


def shape_finding(name: str, out, ref) -> Finding | None:
    """The reference returned another shape than the kernel: a contract problem, not values."""
    if tuple(ref.shape) == tuple(out.shape):
        return None
    return Finding(Check.CONTRACT, name, facts=ContractFacts(reference_shape=list(ref.shape), kernel_shape=list(out.shape)))


def compare(name: str, out, ref, tol: Tolerance, where: Where, about: dict | None = None,
            nonfinite: str | None = None, spread=None, peer=None, unit: float = 0.0) -> Finding | None:
    """The whole comparison in one call (the default tolerance, then the peers when given)."""
    bad_shape = shape_finding(name, out, ref)
    if bad_shape is not None:
        return bad_shape
    m = mismatch(out, ref, tol, nonfinite)
    if m is not None and (spread is not None or peer is not None):
        m = settle(m, out, ref, tol, spread, peer, {"dtype": str(out.dtype).removeprefix("torch.")} if peer is not None else None,
                   unit=unit)
    return None if m is None else finding(name, m, out, ref, tol, where, about)


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def allowed_of(r, tol: Tolerance):
    """What each element may differ from `r` (in r's dtype, r's shape): atol + rtol x the larger
    of |r| and its row's RMS, the dtype's default as `mismatch` applies it. Rung 5 holds each call
    to the first call's output with it (run/modes/differ.py)."""
    torch = _torch()
    r2 = as_rows(r.detach()).to(torch.float64)
    return _allowed(r2, row_rms(r2)[:, None], tol).to(r.dtype).reshape(r.shape)


def _allowed(r, s, tol: Tolerance):
    """The dtype's default: atol + rtol x the larger of |r| and the scale `s` (the row's RMS)."""
    return tol.atol + tol.rtol * _torch().maximum(r.abs(), s)
