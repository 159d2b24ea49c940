"""Rung 8's judgement: the model's score with the kernel in its slot against the baseline's,
both on the same fixed problems. Exact match falling beyond Spec.model_tolerance fails; so
does the right answers' likelihood rising beyond Spec.model_nll_tolerance while exact match
holds (errors that lean one way and compound through the layers)."""
from __future__ import annotations

from ..core.outcome import Check, Finding, Note, NoteKind
from ..core.facts import ModelFacts


def judge(spec, scores: dict) -> tuple[list[Finding], Note]:
    """`scores` as the model mode measured them: baseline and kernel scores, and for kladder's
    own model also the answers' NLL, the logits' gain and drift, and sample answers."""
    s = dict(scores)
    b, k = s["baseline"], s["kernel"]
    if s["where"] == "slot":
        rise = s["nll_kernel"] / s["nll_baseline"] - 1 if s["nll_baseline"] > 0 else 0.0
        s["rise"] = rise
        if rise > spec.model.nll_tolerance and b - k <= spec.model.tolerance:
            return [Finding(Check.MODEL, "nll", call="model run with the kernel", max_abs_err=rise,
                            facts=ModelFacts(**{**s, "metric": "nll", "allowed": spec.model.nll_tolerance,
                                                "baseline": s["nll_baseline"], "kernel": s["nll_kernel"],
                                                "baseline_score": b, "kernel_score": k}))], Note.of(NoteKind.MODEL_SCORES, **s)
    drop = b - k
    if drop > spec.model.tolerance:
        return [Finding(Check.MODEL, "score", call="model run with the kernel", max_abs_err=drop,
                        facts=ModelFacts(**s, metric="score", allowed=spec.model.tolerance))], Note.of(NoteKind.MODEL_SCORES, **s)
    return [], Note.of(NoteKind.MODEL_SCORES, **s)
