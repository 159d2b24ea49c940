"""report/words/values.py: the words of a comparison, its budget (each branch, from typed facts
built here), a bias, an invariant, NaN accepted and the model's score."""
from __future__ import annotations

from kladder.core import facts as F
from kladder.core.outcome import Check, Finding, Largest, Pattern
from kladder.report.words import MESSAGES, message
from kladder.report.words.values import budget_headline, budget_text, describe, model_detail, model_samples

F32 = {"rtol": 1.3e-06, "atol": 1e-05}             # float32's default tolerance (spec.DEFAULT_TOLERANCES)


def _values(facts: F.ValuesFacts, index=(2, 5), allowed=1.2e-05, mismatched=3, total=4096) -> Finding:
    return Finding(Check.VALUES, output="y", pattern=Pattern(kind="single"), mismatched=mismatched, total=total,
                   largest=Largest(index=index, kernel=1.5, reference=1.0, allowed=allowed), facts=facts)


# ---------------------------------------------------------------------------- describe and the message
def test_describe_needs_dtype_and_shape_and_adds_a_mode():
    assert describe(_values(F.ValuesFacts(dtype="bfloat16", shape=[1, 4095], mode="eager"))) == "bfloat16, 1 x 4095, eager"
    assert describe(_values(F.ValuesFacts(dtype="float32", shape=[8]))) == "float32, 8"
    assert describe(_values(F.ValuesFacts(dtype="float32"))) == ""
    assert describe(Finding(Check.INVARIANT, facts=F.InvariantFacts(name="x"))) == ""


def test_describe_a_scalar_output():
    """A 0-d output (a reduction to one value) has shape []: its description says so, not
    "int32, , eager" (as docs/results/2026-12-06-cpu-zoo/make_zoo_098b236.txt showed)."""
    assert describe(_values(F.ValuesFacts(dtype="int32", shape=[], mode="eager"))) == "int32, scalar, eager"


def test_the_values_message_verdict_first_then_a_statistic_a_line():
    f = _values(F.ValuesFacts(dtype="float32", shape=[64, 64], mode="eager", sampled=True, nonfinite=2, **F32))
    assert message(f).split("\n") == [
        "Mismatched elements: 3 / 4,096 checked (0.1%) in `y` (float32, 64 x 64, eager): the single element.",
        "Greatest difference at index (2, 5): kernel 1.5, reference 1.0 (up to 1.2e-05 allowed)",
        "2 non-finite where the reference is finite",
        "allowed 1.2e-05 = float32 default",
    ]


def test_a_near_miss_is_said_first_and_not_as_a_failure():
    f = _values(F.ValuesFacts(near_miss=1.734, **F32, dtype="float32", shape=[4], mode=""))
    first = message(f).split("\n")[0]
    assert first.startswith("A near miss, not judged a failure: at most 1.73 x its budget at these elements "
                            "(within 2 x)")


def test_a_total_of_zero_does_not_divide_by_zero():
    f = _values(F.ValuesFacts(), mismatched=0, total=0)
    assert message(f).startswith("Mismatched elements: 0 / 0 (0.0%)")


# ---------------------------------------------------------------------------- budget_headline's branches
def test_no_headline_without_a_tolerance_or_a_largest():
    assert budget_headline(_values(F.ValuesFacts(dtype="float32"))) == ""
    no_big = Finding(Check.VALUES, output="y", facts=F.ValuesFacts(**F32, dtype="float32"))
    assert budget_headline(no_big) == ""
    assert budget_headline(Finding(Check.INVARIANT, facts=F.InvariantFacts(name="x"))) == ""


def test_the_tolerance_is_named_a_default_only_where_it_is_one():
    assert budget_headline(_values(F.ValuesFacts(dtype="float32", **F32))) == "allowed 1.2e-05 = float32 default"
    spec = F.ValuesFacts(dtype="float32", rtol=1e-3, atol=1e-3)
    assert budget_headline(_values(spec)) == "allowed 1.2e-05 = the spec's tolerance"
    assert budget_headline(_values(F.ValuesFacts(rtol=1e-3, atol=1e-3))) == "allowed 1.2e-05 = the tolerance"
    assert budget_headline(_values(F.ValuesFacts(dtype="float32", **F32), allowed=0.0)) == "allowed 0 = float32 default"


def test_the_tolerance_alone_says_why_no_peer_gave_a_budget():
    skipped = F.ValuesFacts(dtype="float32", **F32, peer=F.PeerSkippedFacts(skipped=12345))
    assert budget_headline(_values(skipped)) == ("allowed 1.2e-05 = float32 default (no honest peer asked: "
                                                 "12,345 elements fail)")
    not_needed = F.ValuesFacts(dtype="float32", **F32, peer=F.PeerNotNeededFacts(times=4321.4, decides=64))
    assert budget_headline(_values(not_needed)) == (
        "allowed 1.2e-05 = float32 default (no honest peer needed: off by 4,321 x it, past the 64 x within which a "
        "correct implementation's rounding could change the verdict)")
    failed = F.ValuesFacts(dtype="float16", rtol=1e-3, atol=1e-5, peer=F.PeerFailedFacts(error="E", text="no half"))
    assert budget_headline(_values(failed)) == ("allowed 1.2e-05 = float16 default (the reference cannot run in "
                                                "float16)")


def _budgeted(budget: str, **kw) -> F.ValuesFacts:
    base = dict(dtype="float32", **F32, budget=budget, budget_at=[2, 5], budget_allowed=3.4e-05,
                budget_default=1.2e-05, budget_peer_error=1.7e-05, c=2.0, peer=F.PeerFacts(dtype="float32", factor=3.0))
    return F.ValuesFacts(**{**base, **kw})


def test_the_default_budget_with_a_peer_that_is_exact():
    f = _values(_budgeted("default", budget_allowed=1.2e-05, budget_peer_error=0.0))
    assert budget_headline(f) == "allowed 1.2e-05 = float32 default (a float32 implementation is off by 0 here)"
    g = _values(_budgeted("default", budget_allowed=1.2e-05, budget_peer_error=4e-6))
    assert budget_headline(g) == ("allowed 1.2e-05 = float32 default (a float32 implementation is off by up to "
                                  "4e-06 here)")


def test_the_budget_names_the_element_it_is_at_where_that_is_not_the_largest_difference():
    f = _values(_budgeted("default", budget_at=[7, 1], budget_peer_error=None, peer=None))
    assert budget_headline(f) == "allowed 3.4e-05 at (7, 1) = float32 default"


def test_the_spread_budget():
    x = _budgeted("spread", spread=F.SpreadFacts(draws=8, at=2e-6, terms=123.0))
    assert budget_headline(_values(x)) == ("allowed 3.4e-05 = float32 default at the scale of the terms that make the "
                                           "element (1.2e+02; 1.2e-05 at its own); a float32 implementation is off by "
                                           "up to 1.7e-05 here")


def test_the_peer_budget_and_its_cap():
    assert budget_headline(_values(_budgeted("peer"))) == (
        "allowed 3.4e-05 = 2 x what a float32 implementation is off by here (1.7e-05), more than the float32 default "
        "(1.2e-05)")
    capped = _budgeted("peer", peer=F.PeerFacts(dtype="float32", factor=3.0, capped=True, cap=16.0))
    assert budget_headline(_values(capped)) == (
        "allowed 3.4e-05 = a peer budget's cap (not 2 x 1.7e-05: a float32 implementation off by that much here is "
        "past rounding), more than the float32 default (1.2e-05)")
    spec_tol = _budgeted("peer", rtol=1e-2, atol=1e-2)
    assert "more than the spec's tolerance (1.2e-05)" in budget_headline(_values(spec_tol))   # no "the the"


# ---------------------------------------------------------------------------- budget_text (the derivation)
def test_budget_text_is_empty_without_a_budget_or_for_other_facts():
    assert budget_text(F.ValuesFacts(dtype="float32", **F32)) == ""
    assert budget_text(F.InvariantFacts(name="x")) == ""


def test_budget_text_of_the_default_with_and_without_what_the_peers_saw():
    assert budget_text(_budgeted("default", peer=None)) == (
        "allowed: the float32 default (rtol 1.3e-06 x max(|ref|, the row's RMS) + atol 1e-05)")
    x = _budgeted("default", spread=F.SpreadFacts(draws=0, at=1e-6, terms=0.0),
                  peer=F.PeerFacts(dtype="float32", factor=1.5, capped=True, cap=16.0, half_digits=0.5))
    assert budget_text(x) == (
        "allowed: the float32 default (rtol 1.3e-06 x max(|ref|, the row's RMS) + atol 1e-05); the honest peers allow "
        "no more (s = 1e-06 there (the float64 reference under rounding of every input, the output's rounding alone); "
        "the reference run in float32 is off by up to K = 1.5 x s, counted up to the larger of 16 x what the default "
        "or s allows and sqrt(u) of the element's scale (half its float32 digits))")


def test_budget_text_of_spread_and_peer():
    spread = _budgeted("spread", peer=None, spread=F.SpreadFacts(draws=8, at=2.5e-6, terms=40.0))
    assert budget_text(spread) == (
        "allowed: the default at the scale of the terms that make the element (the rounding spread s over the inputs' "
        "unit roundoff), more than the float32 default (rtol 1.3e-06 x max(|ref|, the row's RMS) + atol 1e-05) "
        "(s = 2.5e-06 there (the float64 reference under rounding of every input, 8 draws, terms of size 40))")
    failed = _budgeted("peer", dtype=None, peer=F.PeerFailedFacts(error="RuntimeError", text="no fp16 here"))
    assert budget_text(failed) == (
        "allowed: 2 x K x s (K: the largest error of the reference run in the kernel's own precision, in units of s), "
        "more than the default (rtol 1.3e-06 x max(|ref|, the row's RMS) + atol 1e-05) (the reference cannot run in "
        "the kernel's precision (RuntimeError: no fp16 here))")


def test_a_peer_without_a_factor_adds_nothing_to_the_derivation():
    x = _budgeted("default", peer=F.PeerFacts(dtype="float32"))
    assert budget_text(x) == "allowed: the float32 default (rtol 1.3e-06 x max(|ref|, the row's RMS) + atol 1e-05)"


# ---------------------------------------------------------------------------- the other value checks
def test_invariant_with_and_without_a_pattern():
    f = Finding(Check.INVARIANT, mismatched=3, total=1000, pattern=Pattern(kind="every"),
                facts=F.InvariantFacts(name="sum"))
    assert message(f) == "the invariant 'sum' fails at 3 of 1,000 positions: every element"


def test_nonfinite():
    assert message(Finding(Check.NONFINITE)) == ("the kernel accepted NaN/Inf inputs and returned; the spec's policy "
                                                 "is nonfinite='raise'")


def _bias(lean, up, down, peer=False) -> Finding:
    return Finding(Check.BIAS, output="y", facts=F.BiasFacts(lean=lean, up=up, down=down, p=3.2e-7, mean_ulps=0.512,
                                                             rel=-1.5e-4, peer=peer, dtype="bfloat16"))


def test_bias_says_which_way_it_leans():
    assert message(_bias("offset", 90, 10)).split("\n") == [
        "`y` leans above the reference: 90 of 100 differing rows (sign test p = 3.2e-07)",
        "mean error +0.51 ulps of bfloat16 (-1.50e-04 relative).",
        "Inside the tolerance, but errors that lean one way compound through a model's layers"]
    assert message(_bias("offset", 10, 90)).startswith("`y` leans below the reference: 90 of 100")
    assert message(_bias("scale", 5, 1)).startswith("`y` leans away from zero from the reference")
    assert message(_bias("scale", 1, 5)).startswith("`y` leans toward zero from the reference")
    assert "the same way against the reference run in the kernel's own precision" in message(_bias("scale", 1, 5, True))


def _scores(where="slot", **kw):
    base = dict(where=where, baseline=0.75, kernel=0.5, samples=[["1+2=", "3", "3"], ["4+4=", "8", "9"]], slot="mlp",
                target="exact match", nll_baseline=0.1, nll_kernel=0.125, gain=0.0123, drift=1.5e-3, n=64,
                dtype="bfloat16", rise=0.25)
    return {**base, **kw}


def test_model_detail_in_a_slot_and_for_a_whole_model():
    assert model_detail(F.ModelScoresFacts(**_scores())) == (
        "exact match 0.5000 with the kernel vs 0.7500 baseline; the right answers' NLL 1.250e-01 vs 1.000e-01 "
        "nats/token (+25.0%); 64 problems, bfloat16; logits +1.23% along the baseline's, drift 1.50e-03")
    assert model_detail(F.ModelScoresFacts(**_scores(where="model"))) == "score 0.5000 with the kernel vs 0.7500 " \
                                                                         "baseline (exact match)"


def test_model_detail_says_a_huge_rise_as_a_ratio():
    x = F.ModelScoresFacts(**_scores(nll_kernel=2.5, rise=24.0))
    assert "nats/token (x25);" in model_detail(x)


def test_model_samples_mark_wrong_answers_in_a_slot():
    assert model_samples(F.ModelScoresFacts(**_scores())) == ["1+2=3 got 3", "4+4=8 got 9  <- wrong"]
    assert model_samples(F.ModelScoresFacts(**_scores(where="model", samples=[["a", "b"]]))) == ["a b"]


def test_the_model_message_by_its_metric():
    score = F.ModelFacts(**_scores(), metric="score", allowed=0.01)
    lines = message(Finding(Check.MODEL, facts=score)).split("\n")
    assert lines[0] == "the model's score fell from 0.7500 to 0.5000 (a drop of 0.2500; 0.01 allowed) with the kernel in its slot."
    assert lines[1:] == [model_detail(score) + ".", "Answers: 1+2=3 got 3; 4+4=8 got 9  <- wrong"]
    nll = F.ModelFacts(**_scores(kernel=0.75), metric="nll", allowed=0.05, kernel_score=0.75, baseline_score=0.75)
    text = message(Finding(Check.MODEL, facts=nll))
    assert text.startswith("the model's answers lost likelihood: the right answers' negative log-likelihood rose +25.0% "
                           "(1.000e-01 -> 1.250e-01 nats/token; 5% allowed) with the kernel in `mlp`, while exact match "
                           "stayed 0.7500 (baseline 0.7500)")


def test_the_values_family_registers_its_classes():
    for cls in (F.ValuesFacts, F.InvariantFacts, F.NonfiniteFacts, F.ModelFacts, F.BiasFacts):
        assert cls in MESSAGES
