"""report/words/repetition.py: rung 5's words (repeats, nondeterminism, the stream, what a clean
point proved, the time budget), from facts built here."""
from __future__ import annotations

from kladder.core import facts as F
from kladder.core.budgets import BudgetSummary
from kladder.core.outcome import Check, Finding, Largest, Pattern
from kladder.report.words import message
from kladder.report.words.repetition import (
    _one_in,
    count_text,
    how_text,
    rate_text,
    repeats_clean_text,
    stream_clean_text,
    stream_how_text,
    time_budget_text,
    worst_text,
)

RATE = dict(rate=7e-05, lo=2.8e-05, hi=1.4e-04, conf=0.95, calls_50=9903, calls_95=42796, bound=1.5e-05)


def _rep(cls=F.RepeatsFacts, **kw):
    base = dict(calls=200_001, compared=200_000, firsts=8, differ=14, wrong=3, deterministic=False, launch="graph",
                inputs="fresh", load=True, seconds=12.345, stopped="calls", **RATE)
    if cls is not F.RepeatsCleanFacts:
        base |= dict(first_calls=[17, 1203, 40_000], worst_call=1203)
    return cls(**{**base, **kw})


def test_count_text_by_bitwise():
    assert count_text(_rep(bitwise=True)) == "14"
    assert count_text(_rep(bitwise=False, wrong=12_345)) == "12,345"


def test_rate_text():
    assert rate_text(_rep()) == ("rate 7e-05 (95% CI 2.8e-05 to 0.00014); a rate like it is seen with even odds in "
                                 "9,903 calls and with 95% odds in 42,796")


def test_how_text_graphs_fresh_inputs_and_load():
    assert how_text(_rep()) == ("graph replays, fresh inputs from a pool of 8, beside a second stream of work, "
                                "200,001 calls in 12.3 s")


def test_how_text_eager_same_inputs_stopped_by_time():
    x = _rep(launch="eager", inputs="same", load=False, stopped="seconds", seconds=0.5)
    assert how_text(x) == "eager calls, the same inputs, 200,001 calls in 0.5 s (the time budget ended it)"


def test_how_text_says_why_graphs_fell_back_to_eager():
    x = _rep(fallback=F.ErrorFacts(error="RuntimeError", text="capture failed"))
    assert how_text(x).startswith("eager calls (the kernel cannot be captured in a CUDA graph: RuntimeError: "
                                  "capture failed), fresh inputs")


def test_the_repeats_message_bitwise_with_deterministic_declared():
    f = Finding(Check.REPEATS, output="y", facts=_rep(bitwise=True, deterministic=True))
    lines = message(f).split("\n")
    assert lines[0] == ("14 of 200,000 calls differ bit for bit from the first call on the same inputs, although the "
                        "spec declares deterministic=True.")
    assert lines[1] == "Graph replays, fresh inputs from a pool of 8, beside a second stream of work, 200,001 calls in 12.3 s."
    assert lines[2].startswith("Rate 7e-05 (95% CI")
    assert lines[3] == "first at calls 17, 1,203, 40,000"


def test_the_repeats_message_beyond_the_tolerance():
    f = Finding(Check.REPEATS, output="y", facts=_rep())
    assert message(f).startswith("3 of 200,000 calls were wrong: beyond the tolerance of the first call on the same "
                                 "inputs, itself judged against the reference.\n")


def test_worst_text_against_the_first_call_and_the_reference():
    first = Finding(Check.REPEATS, output="y", pattern=Pattern(kind="every"), mismatched=4, total=4096,
                    max_abs_err=0.0123, facts=_rep())
    assert worst_text(first, first.facts) == ("first at calls 17, 1,203, 40,000; the worst, call 1,203: 4 / 4,096 "
                                              "elements of `y` differ from the first call's, every element, by up to "
                                              "0.0123")
    ref = Finding(Check.REPEATS, output="y", pattern=Pattern(kind="single"), mismatched=1, total=64,
                  largest=Largest(index=(0, 3), kernel=2.0, reference=1.0, allowed=0.001),
                  facts=_rep(against="reference"))
    assert worst_text(ref, ref.facts) == ("first at calls 17, 1,203, 40,000; the worst, call 1,203, against the "
                                          "reference: 1 / 64 elements of `y` wrong, the single element; greatest "
                                          "difference at index (0, 3): kernel 2.0, reference 1.0 (up to 0.001 allowed)")


def test_nondeterminism_is_said_not_a_failure():
    f = Finding(Check.NONDETERMINISTIC, output="y", facts=_rep(F.NondeterministicFacts, bitwise=True))
    assert message(f).startswith("`y` is not bit for bit reproducible: 14 of 200,000 calls differ from the first call "
                                 "on the same inputs, all within the tolerance (nondeterminism, not a failure: the "
                                 "spec leaves deterministic=False).\n")


def test_a_clean_repetition_bounds_differing_or_wrong_calls():
    clean = _rep(F.RepeatsCleanFacts, differ=0, wrong=0)
    assert repeats_clean_text(clean) == (
        "0 of 200,000 calls differ from the first call on the same inputs: p < 1.5e-05 at 95% that a call does; "
        "graph replays, fresh inputs from a pool of 8, beside a second stream of work, 200,001 calls in 12.3 s")
    differ = _rep(F.RepeatsCleanFacts, differ=5, wrong=0)
    assert repeats_clean_text(differ).startswith("0 of 200,000 calls wrong (5 differ within the tolerance): p < "
                                                 "1.5e-05 at 95% that a call is wrong; ")


def test_a_clean_repetition_adds_the_evidence_of_earlier_climbs():
    acc = F.AccumulatedFacts(climbs=8, calls=1_200_000, bound=2.5e-06, conf=0.95, since="2026-12-01")
    clean = _rep(F.RepeatsCleanFacts, differ=0, accumulated=acc)
    assert repeats_clean_text(clean).endswith("; over 8 climbs under the same key since 2026-12-01: 0 differ in "
                                              "1,200,000 calls: rate < 2.5e-06 at 95%")
    differ = _rep(F.RepeatsCleanFacts, differ=2, accumulated=acc)
    assert "0 wrong in 1,200,000 calls" in repeats_clean_text(differ)


# ---------------------------------------------------------------------------- the stream
def _stream(cls=F.StreamFacts, **kw):
    base = dict(calls=3000, judged=2999, wrong=4, sets=1500, pattern="AABB", fresh=True, count=3000, declared=True,
                seconds=2.1, stopped="calls", batched=True, **RATE)
    if cls is F.StreamFacts:
        base |= dict(first_wrong=1024, first_calls=[1024, 2000], step=512, letter="B")
    return cls(**{**base, **kw})


def test_stream_how_text_declared_and_batched():
    assert stream_how_text(_stream()) == ("the model's pattern 'AABB' (kl.Repetition(calls=)), new input sets every "
                                          "step: 3,000 calls on 1,500 input sets in 2.1 s, the reference batched over "
                                          "each batch's inputs")


def test_stream_how_text_undeclared_stopped_undecided_and_truncated():
    x = _stream(declared=False, fresh=False, stopped="seconds", count=10_000, batched=False, undecided=7, peered=300,
                excused=12, truncated=3)
    assert stream_how_text(x) == (
        "new inputs every call (no kl.Repetition(calls=): the pattern 'A'), the same input sets every step: 3,000 calls "
        "on 1,500 input sets in 2.1 s (the time budget ended it before the 10,000 calls asked for), the reference once "
        "per input set; 7 calls over the dtype's default left undecided (the honest peer's share of the time budget "
        "ran out after 300 calls, 12 of them excused); 3 bfloat16 calls not judged: only the interpreter's float32 -> "
        "bfloat16 truncation puts them over (a GPU rounds to nearest)")


def test_the_stream_message_lists_its_wrong_calls_and_says_more_when_more_are_wrong():
    f = Finding(Check.STREAM, output="y", facts=_stream())
    lines = message(f).split("\n")
    assert lines[0] == ("4 of 2,999 calls of the stream were wrong against the reference of their own inputs; the "
                        "first is call 1,024 (step 512, input set B).")
    assert lines[-1] == "Wrong calls: 1,024, 2,000, ..."
    assert not lines[2].endswith("counted right)")
    exact = Finding(Check.STREAM, output="y", pattern=Pattern(kind="every"), mismatched=2, total=8,
                    largest=Largest(index=(1,), kernel=0.5, reference=0.25, allowed=0.01), facts=_stream(wrong=2))
    assert message(exact).split("\n")[-1] == (
        "Wrong calls: 1,024, 2,000; at call 1,024: 2 / 8 elements of `y` wrong, every element; greatest difference at "
        "index (1,): kernel 0.5, reference 0.25 (up to 0.01 allowed)")


def test_a_stream_with_calls_not_judged_gives_a_lower_bound():
    f = Finding(Check.STREAM, output="y", facts=_stream(undecided=1))
    assert message(f).split("\n")[2].endswith("(a lower bound: the calls not judged are counted right)")


def test_a_clean_stream():
    assert stream_clean_text(_stream(F.StreamCleanFacts, wrong=0)).startswith(
        "0 of 2,999 calls wrong against the reference of their own inputs: p < 1.5e-05 at 95% that a call is; the "
        "model's pattern 'AABB'")


# ---------------------------------------------------------------------------- the time budget
def test_one_in_rounds_to_two_significant_digits():
    assert _one_in(1 / 14_321) == "1 in 14,000"
    assert _one_in(0.5) == "1 in 2"
    assert _one_in(1 / 987_654) == "1 in 990,000"


def test_time_budget_of_the_longest_budget_with_no_calls():
    assert time_budget_text(BudgetSummary(name="release")) == ("budget release (the longest): rung 5 made no "
                                                               "repetition or stream calls.")


def test_time_budget_with_a_longer_one_that_adds_calls_seconds_and_tools():
    b = BudgetSummary(name="commit", longer="release", points=1, calls=10_099, most=9_999, most_point="r5-N=2-calls",
                      even_odds=1 / 14_400, example=1e-5, example_calls=69_315, longer_most=29_997,
                      longer_even_odds=1 / 43_000, tools=("memcheck",), longer_tools=("racecheck", "initcheck"),
                      overridden=True, longer_seconds={"repeat": 30.0, "stream": 12.5})
    assert time_budget_text(b) == (
        "budget commit: rung 5 made 10,099 calls over 1 point, at most 9,999 at one point (r5-N=2-calls): even odds "
        "of seeing a failure rate of 1 in 14,000; a rate of 1 in 100,000 needs 69,315 calls there (--repeat/--repeat-s "
        "set the repetition points' calls); compute-sanitizer memcheck. --budget release: about 29,997 calls there "
        "(even odds down to 1 in 43,000); 30 s a repetition point, the stream 12.5 s; compute-sanitizer racecheck, "
        "initcheck besides.")


def test_time_budget_whose_longer_one_adds_nothing_here():
    b = BudgetSummary(name="commit", longer="release", points=2, calls=10, most=5, most_point="p", even_odds=0.1,
                      longer_most=5)
    assert time_budget_text(b).endswith(". --budget release: the same here.")
    assert "over 2 points" in time_budget_text(b) and "needs" not in time_budget_text(b)
