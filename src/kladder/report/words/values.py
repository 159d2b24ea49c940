"""The words of the value checks: a comparison that failed, a bias inside the tolerance, an
invariant, NaN/Inf accepted, the model's score (rungs 1-3 and 8)."""
from __future__ import annotations

from ...core.facts import (BiasFacts, InvariantFacts, ModelFacts, ModelScoresFacts, NonfiniteFacts, PeerFacts, PeerFailedFacts,
                      PeerNotNeededFacts, PeerSkippedFacts, SpreadFacts, ValuesFacts)
from .base import notes, pattern_text, says


def describe(f) -> str:
    """The output's dtype, shape and mode: "bfloat16, 1 x 4095, eager" ("int32, scalar, eager": 0-d)."""
    x = f.facts
    if getattr(x, "dtype", None) is None or getattr(x, "shape", None) is None:
        return ""
    shape = " x ".join(map(str, x.shape)) or "scalar"
    return ", ".join([x.dtype, shape, *([x.mode] if x.mode else [])])   # kl.assert_close: no mode


def largest_text(f) -> str:
    big = f.largest
    return (f"Greatest difference at index {big.index}: kernel {big.kernel!r}, reference {big.reference!r} "
            f"(up to {big.allowed:.3g} allowed)")


@says(ValuesFacts)
def _values(f, x: ValuesFacts) -> str:
    """As torch.testing says it: the verdict first, then one statistic a line."""
    checked = " checked" if x.sampled else ""
    lines = [f"Mismatched elements: {f.mismatched:,} / {f.total:,}{checked} ({100 * f.mismatched / max(f.total, 1):.1f}%) "
             f"in `{f.output}` ({describe(f)}): {pattern_text(f.pattern)}.", largest_text(f)]
    if x.nonfinite:
        lines.append(f"{x.nonfinite:,} non-finite where the reference is finite")
    budget = budget_headline(f)
    if x.near_miss:
        from ...checks.peer import SETTLE_MARGIN
        lines.insert(0, f"A near miss, not judged a failure: at most {x.near_miss:.2f} x its budget at these elements "
                        f"(within {SETTLE_MARGIN:g} x) after the honest peer's further correct runs; a correct "
                        "implementation with another summation order can be this far off.")
    return "\n".join(lines + ([budget] if budget else []))


def _default_name(x: ValuesFacts) -> str:
    """"float32 default" where the tolerance is the dtype's default, else "the spec's tolerance"
    ("the tolerance" where the output's dtype is not known)."""
    from ...core.spec import DEFAULT_TOLERANCES
    if x.dtype is None:
        return "the tolerance"
    d = DEFAULT_TOLERANCES.get(x.dtype)
    if d is not None and (d.rtol, d.atol) == (x.rtol, x.atol):
        return f"{x.dtype} default"
    return "the spec's tolerance"


def _there(f, x: ValuesFacts) -> str:
    """" at (3, 7)" where the budget facts describe another element than the largest difference."""
    big = f.largest
    if x.budget_at is None or big is None or list(big.index) == list(x.budget_at):
        return ""
    return f" at {tuple(x.budget_at)}"


def budget_headline(f) -> str:
    """The budget in one line a person reads at once: what was allowed, which budget it is, and
    what a correct implementation in the kernel's precision is off by there ("allowed 1.2e-05 =
    float32 default (a float32 implementation is off by 0 here)"). The derivation is
    budget_text's. Empty for a finding with no tolerance (a mutated input's bits)."""
    x = f.facts
    if not isinstance(x, ValuesFacts) or x.rtol is None or f.largest is None:
        return ""
    name, peer = _default_name(x), x.peer
    the = "the " if name.endswith("default") else ""          # "more than the float32 default"
    dtype = peer.dtype if isinstance(peer, PeerFacts) else x.dtype
    cannot = f"the reference cannot run in {dtype}" if isinstance(peer, PeerFailedFacts) else ""
    if x.budget_allowed is None:            # no budget but the tolerance: the largest difference's
        tail = (f"no honest peer asked: {peer.skipped:,} elements fail" if isinstance(peer, PeerSkippedFacts)
                else _not_needed(peer) if isinstance(peer, PeerNotNeededFacts) else cannot)
        return f"allowed {_g(f.largest.allowed)} = {name}" + (f" ({tail})" if tail else "")
    allowed = f"allowed {_g(x.budget_allowed)}{_there(f, x)}"
    off = None if x.budget_peer_error is None else _g(x.budget_peer_error)
    peer_words = (f"a {dtype} implementation is off by {'' if off == '0' else 'up to '}{off} here" if off is not None
                  else cannot)
    if x.budget == "default":
        return f"{allowed} = {name}" + (f" ({peer_words})" if peer_words else "")
    if x.budget == "spread":
        terms = x.spread.terms if x.spread is not None else 0.0
        return (f"{allowed} = {name} at the scale of the terms that make the element ({_g(terms)}; "
                f"{_g(x.budget_default)} at its own)" + (f"; {peer_words}" if peer_words else ""))
    more = f"more than {the}{name} ({_g(x.budget_default)})"
    if isinstance(peer, PeerFacts) and peer.capped:                   # C x the peer's error is past what rounding can be
        return (f"{allowed} = a peer budget's cap (not {x.c:g} x {off}: a {dtype} implementation off by that much "
                f"here is past rounding), {more}")
    return f"{allowed} = {x.c:g} x what a {dtype} implementation is off by here ({off}), {more}"


def _g(v: float) -> str:
    """A budget's number, short: 0, 1.2e-05, 0.0023."""
    return "0" if v == 0 else f"{v:.2g}"


def budget_text(x: ValuesFacts) -> str:
    """The budget's derivation, one level below budget_headline (the terminal's -v, the HTML's
    details, the JSON's facts): which error budget applied where the element is furthest past
    it, when an honest peer was asked (checks/peer.py): the dtype's default, the default at the
    terms' scale, or C x a peer's error; the measurements that set it. Empty for any other facts."""
    if not isinstance(x, ValuesFacts) or x.budget is None:
        return ""
    default = f"the {x.dtype + ' ' if x.dtype else ''}default (rtol {x.rtol:g} x max(|ref|, the row's RMS) + atol {x.atol:g})"
    seen = "; ".join(t for t in (_spread_text(x.spread), _peer_text(x.peer)) if t)
    if x.budget == "default":
        return f"allowed: {default}; the honest peers allow no more ({seen})" if seen else f"allowed: {default}"
    what = {"spread": "the default at the scale of the terms that make the element (the rounding spread s over "
                      "the inputs' unit roundoff)",
            "peer": f"{x.c:g} x K x s (K: the largest error of the reference run in the kernel's own precision, "
                    "in units of s)"}
    return f"allowed: {what[x.budget]}, more than {default} ({seen})"


def _spread_text(sp: SpreadFacts | None) -> str:
    if sp is None:
        return ""
    draws = f", {sp.draws} draws" if sp.draws else ", the output's rounding alone"
    terms = f", terms of size {sp.terms:.3g}" if sp.terms else ""
    return f"s = {sp.at:.3g} there (the float64 reference under rounding of every input{draws}{terms})"


def _not_needed(p: PeerNotNeededFacts) -> str:
    return (f"no honest peer needed: off by {p.times:,.0f} x it, past the {p.decides:,.0f} x within which a "
            "correct implementation's rounding could change the verdict")


def _peer_text(p: PeerFacts | PeerFailedFacts | PeerSkippedFacts | PeerNotNeededFacts | None) -> str:
    if isinstance(p, PeerNotNeededFacts):
        return _not_needed(p)
    if isinstance(p, PeerSkippedFacts):
        return f"{p.skipped:,} elements fail: no peer is asked for that many"
    if isinstance(p, PeerFailedFacts):
        return f"the reference cannot run in the kernel's precision ({p.error}: {p.text})"
    if p is None or p.factor is None:
        return ""
    most = (f"the larger of {p.cap:g} x what the default or s allows and sqrt(u) of the element's scale "
            f"(half its {p.dtype} digits)" if p.half_digits is not None else f"{p.cap:g} x what the default or s allows")
    capped = f", counted up to {most}" if p.capped else ""
    return f"the reference run in {p.dtype} is off by up to K = {p.factor:.3g} x s{capped}"


@says(InvariantFacts)
def _invariant(f, x: InvariantFacts) -> str:
    if f.pattern is None:
        return f"the invariant '{x.name}' does not hold"
    return f"the invariant '{x.name}' fails at {f.mismatched:,} of {f.total:,} positions: {pattern_text(f.pattern)}"


@says(NonfiniteFacts)
def _nonfinite(f, x: NonfiniteFacts) -> str:
    return "the kernel accepted NaN/Inf inputs and returned; the spec's policy is nonfinite='raise'"


@says(ModelFacts)
def _model(f, x: ModelFacts) -> str:
    detail = model_detail(x)
    if x.metric == "nll":
        return (f"the model's answers lost likelihood: the right answers' negative log-likelihood rose {x.rise:+.1%} "
                f"({x.nll_baseline:.3e} -> {x.nll_kernel:.3e} nats/token; {x.allowed:.0%} allowed) with the "
                f"kernel in `{x.slot}`, while exact match stayed {x.kernel_score:.4f} (baseline "
                f"{x.baseline_score:.4f}): the errors lean one way and compound through the layers.\n{detail}")
    b, k = x.baseline, x.kernel
    msg = (f"the model's score fell from {b:.4f} to {k:.4f} (a drop of {b - k:.4f}; {x.allowed} allowed) with the "
           f"kernel in its slot.\n{detail}")
    rows = model_samples(x)
    return msg + (".\nAnswers: " + "; ".join(rows) if rows else "")


def model_samples(x: ModelScoresFacts) -> list[str]:
    if x.where == "slot":
        return [f"{p}{want} got {got}" + ("" if got == want else "  <- wrong") for p, want, got in x.samples]
    return [" ".join(s) for s in x.samples]


@notes(ModelScoresFacts)
def model_detail(x: ModelScoresFacts, sized: bool = True) -> str:
    """What the model mode measured, with or without a failure."""
    if x.where != "slot":
        return f"score {x.kernel:.4f} with the kernel vs {x.baseline:.4f} baseline ({x.target})"
    rise = x.rise
    ratio = x.nll_kernel / x.nll_baseline if x.nll_baseline else 0.0
    rise_text = f"{rise:+.1%}" if abs(rise) < 10 else f"x{ratio:.3g}"
    score_k = x.kernel if getattr(x, "kernel_score", None) is None else x.kernel_score
    score_b = x.baseline if getattr(x, "baseline_score", None) is None else x.baseline_score
    return (f"exact match {score_k:.4f} with the kernel vs {score_b:.4f} baseline; the right answers' NLL "
            f"{x.nll_kernel:.3e} vs {x.nll_baseline:.3e} nats/token ({rise_text}); {x.n} problems, {x.dtype}; "
            f"logits {x.gain:+.2%} along the baseline's, drift {x.drift:.2e}")


@says(BiasFacts)
def _bias(f, x: BiasFacts) -> str:
    words = {"offset": ("above", "below"), "scale": ("away from zero from", "toward zero from")}[x.lean]
    side = words[0] if x.up > x.down else words[1]
    return (f"`{f.output}` leans {side} the reference: {max(x.up, x.down):,} of {x.up + x.down:,} differing "
            f"rows (sign test p = {x.p:.1e})\nmean error {x.mean_ulps:+.2f} ulps of {x.dtype} "
            f"({x.rel:+.2e} relative)" + (", and the same way against the reference run in the kernel's own precision "
                                          "(not that precision's rounding)" if x.peer else "")
            + ".\nInside the tolerance, but errors that lean one way compound through a model's layers")
