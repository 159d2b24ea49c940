"""The words of rung 5: calls repeated on the same inputs, against the first call (and the
reference), with the rate's statistics."""
from __future__ import annotations

from ...core.facts import NondeterministicFacts, RepeatsCleanFacts, RepeatsFacts, StreamCleanFacts, StreamFacts
from .base import cap, notes, pattern_text, says
from .reuse import accumulated_text


def count_text(x: RepeatsFacts) -> str:
    return f"{x.differ if x.bitwise else x.wrong:,}"


def rate_text(x: RepeatsFacts) -> str:
    """"rate 7.0e-05 (95% CI 2.8e-05 to 1.4e-04); even odds of seeing it take 9,903 calls, 95% 42,796"."""
    conf = f"{x.conf:.0%}"
    return (f"rate {x.rate:.2g} ({conf} CI {x.lo:.2g} to {x.hi:.2g}); a rate like it is seen with even odds "
            f"in {x.calls_50:,} calls and with 95% odds in {x.calls_95:,}")


def how_text(x: RepeatsCleanFacts) -> str:
    """How the calls ran: "graph replays, fresh inputs from a pool of 8, under load"."""
    parts = ["graph replays" if x.launch == "graph" else "eager calls"]
    if x.fallback:
        parts[0] = "eager calls (the kernel cannot be captured in a CUDA graph: " \
                   f"{x.fallback.error}: {x.fallback.text})"
    parts.append(f"fresh inputs from a pool of {x.firsts}" if x.inputs == "fresh" else "the same inputs")
    if x.load:
        parts.append("beside a second stream of work")
    parts.append(f"{x.calls:,} calls in {x.seconds:.3g} s" + (" (the time budget ended it)" if x.stopped == "seconds" else ""))
    return ", ".join(parts)


@says(RepeatsFacts)
def _repeats(f, x: RepeatsFacts) -> str:
    """The verdict, then how the calls ran, the rate, and where the worst call is off: a line each."""
    n = f"{x.compared:,}"
    if x.bitwise:
        head = (f"{x.differ:,} of {n} calls differ bit for bit from the first call on the same inputs"
                + (", although the spec declares deterministic=True" if x.deterministic else ""))
    else:
        head = (f"{x.wrong:,} of {n} calls were wrong: beyond the tolerance of the first call on the same inputs, "
                "itself judged against the reference")
    return f"{head}.\n{cap(how_text(x))}.\n{cap(rate_text(x))}\n{worst_text(f, x)}"


def worst_text(f, x: RepeatsFacts) -> str:
    first = ", ".join(f"{c:,}" for c in x.first_calls)
    if x.against == "reference" and f.pattern is not None:
        big = f.largest
        return (f"first at calls {first}; the worst, call {x.worst_call:,}, against the reference: "
                f"{f.mismatched:,} / {f.total:,} elements of `{f.output}` wrong, {pattern_text(f.pattern)}; greatest "
                f"difference at index {big.index}: kernel {big.kernel!r}, reference {big.reference!r} "
                f"(up to {big.allowed:.3g} allowed)")
    if f.pattern is not None:
        return (f"first at calls {first}; the worst, call {x.worst_call:,}: {f.mismatched:,} / {f.total:,} elements "
                f"of `{f.output}` differ from the first call's, {pattern_text(f.pattern)}, by up to {f.max_abs_err:.3g}")
    return f"first at calls {first}"


@says(NondeterministicFacts)
def _nondeterministic(f, x: NondeterministicFacts) -> str:
    return (f"`{f.output}` is not bit for bit reproducible: {x.differ:,} of {x.compared:,} calls differ from the "
            f"first call on the same inputs, all within the tolerance (nondeterminism, not a failure: the spec leaves "
            f"deterministic=False).\n{cap(how_text(x))}.\n{cap(rate_text(x))}\n"
            f"{worst_text(f, x)}")


@notes(RepeatsCleanFacts)
def repeats_clean_text(x: RepeatsCleanFacts, sized: bool = True) -> str:
    """What a passing rung-5 point proved: "0 of 200,000 calls differ ...: p < 1.5e-05 at 95%"."""
    bound = f"p < {x.bound:.2g} at {x.conf:.0%}"
    more = f"; {accumulated_text(x.accumulated, 'differ' if not x.differ else 'wrong')}" if x.accumulated else ""
    if not x.differ:
        return (f"0 of {x.compared:,} calls differ from the first call on the same inputs: {bound} that a call does; "
                f"{how_text(x)}{more}")
    return (f"0 of {x.compared:,} calls wrong ({x.differ:,} differ within the tolerance): {bound} that a call is "
            f"wrong; {how_text(x)}{more}")


# ---------------------------------------------------------------------------- the stream (kl.Repetition(calls=))
def stream_how_text(x: StreamCleanFacts) -> str:
    """"the pattern 'AABB' (kl.Repetition(calls=)), new input sets every step: 3,000 calls on 1,500 input sets in 2.1 s"."""
    pattern = (f"the model's pattern {x.pattern!r} (kl.Repetition(calls=))" if x.declared
               else "new inputs every call (no kl.Repetition(calls=): the pattern 'A')")
    steps = "new input sets every step" if x.fresh else "the same input sets every step"
    ended = (f" (the time budget ended it before the {x.count:,} calls asked for)" if x.stopped == "seconds" else "")
    ref = "the reference batched over each batch's inputs" if x.batched else "the reference once per input set"
    undecided = (f"; {x.undecided:,} calls over the dtype's default left undecided (the honest peer's share of the "
                 f"time budget ran out after {x.peered:,} calls, {x.excused:,} of them excused)" if x.undecided else "")
    if x.truncated:
        undecided += (f"; {x.truncated:,} bfloat16 calls not judged: only the interpreter's float32 -> bfloat16 "
                      "truncation puts them over (a GPU rounds to nearest)")
    return (f"{pattern}, {steps}: {x.calls:,} calls on {x.sets:,} input sets in {x.seconds:.3g} s{ended}, {ref}"
            f"{undecided}")


@says(StreamFacts)
def _stream(f, x: StreamFacts) -> str:
    """The verdict, how the stream ran, the rate, and where the first wrong call is off."""
    head = (f"{x.wrong:,} of {x.judged:,} calls of the stream were wrong against the reference of their own inputs; "
            f"the first is call {x.first_wrong:,} (step {x.step:,}, input set {x.letter})")
    first = ", ".join(f"{c:,}" for c in x.first_calls)
    where = f"wrong calls: {first}" + (", ..." if x.wrong > len(x.first_calls) else "")
    if f.pattern is not None and f.largest is not None:
        big = f.largest
        where += (f"; at call {x.first_wrong:,}: {f.mismatched:,} / {f.total:,} elements of `{f.output}` wrong, "
                  f"{pattern_text(f.pattern)}; greatest difference at index {big.index}: kernel {big.kernel!r}, "
                  f"reference {big.reference!r} (up to {big.allowed:.3g} allowed)")
    rate = rate_text(x) + (" (a lower bound: the calls not judged are counted right)" if x.undecided or x.truncated else "")
    return f"{head}.\n{cap(stream_how_text(x))}.\n{cap(rate)}\n{cap(where)}"


@notes(StreamCleanFacts)
def stream_clean_text(x: StreamCleanFacts, sized: bool = True) -> str:
    """What a clean stream proved: "0 of 2,999 calls wrong against their own reference: p < 1e-03 at 95%"."""
    more = f"; {accumulated_text(x.accumulated)}" if x.accumulated else ""
    return (f"0 of {x.judged:,} calls wrong against the reference of their own inputs: p < {x.bound:.2g} at "
            f"{x.conf:.0%} that a call is; {stream_how_text(x)}{more}")



def _one_in(p: float) -> str:
    """1 in N calls, N rounded to 2 significant digits."""
    n = 1 / p
    return f"1 in {float(f'{n:.2g}'):,.0f}"


def time_budget_text(b) -> str:
    """Which time budget ran rung 5 and what the longer one adds (budgets.BudgetSummary):
    "budget commit: rung 5 made 10,099 calls over 3 points, at most 9,999 at one point (r5-N=2-calls):
    even odds of seeing a failure rate of 1 in 14,000; a rate of 1 in 100,000 needs 69,315 calls
    there. --budget release: about 29,997 calls there (even odds down to 1 in 43,000)"."""
    head = f"budget {b.name}" + ("" if b.longer else " (the longest)")
    if not b.points:
        text = f"{head}: rung 5 made no repetition or stream calls"
    else:
        text = (f"{head}: rung 5 made {b.calls:,} calls over {b.points} point{'s' if b.points != 1 else ''}, at most "
                f"{b.most:,} at one point ({b.most_point}): even odds of seeing a failure rate of {_one_in(b.even_odds)}")
        if b.example:
            text += f"; a rate of {_one_in(b.example)} needs {b.example_calls:,} calls there"
    if b.overridden:
        text += " (--repeat/--repeat-s set the repetition points' calls)"
    if b.tools:
        text += f"; compute-sanitizer {', '.join(b.tools)}"
    if not b.longer:
        return text + "."
    adds = []
    if b.longer_most > b.most:
        adds.append(f"about {b.longer_most:,} calls there (even odds down to {_one_in(b.longer_even_odds)})")
    if b.longer_seconds:
        adds.append(f"{b.longer_seconds['repeat']:g} s a repetition point, the stream {b.longer_seconds['stream']:g} s")
    if b.longer_tools:
        adds.append(f"compute-sanitizer {', '.join(b.longer_tools)} besides")
    return f"{text}. --budget {b.longer}: {'; '.join(adds) if adds else 'the same here'}."
