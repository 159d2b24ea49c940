"""Rung 5's verdict on many calls of one point (run/modes/repeat.py measured them): which calls
differ from the first call on the same inputs, which are wrong, at what rate, and what a clean
run proves.

- A call is wrong when some element is further from the first call's than twice the tolerance
  (the first call was judged within the tolerance of the reference, so such an element is
  beyond it too), or when it is the worst call and fails against the reference itself.
- Spec(deterministic=True): any bit that differs fails, with the rate of differing calls.
- Otherwise wrong calls fail, with their rate; calls that differ only within the tolerance are
  a warning (nondeterminism), with their rate.
- Either way a rate comes with its Clopper-Pearson interval, the calls needed to see it with
  50% and 95% chance and the curve 1 - (1 - p)^N; a clean run says the bound it proves."""
from __future__ import annotations

from ..outcome import Check, Finding, Note, NoteKind
from ..facts import CHECK_FACTS
from ..sizes import dtype_of, shape_of
from ..stats import summary
from . import bitwise, values
from .pattern import describe, where_of

FIRST_CALLS = 8       # the numbers of the first calls that differ, kept as facts


def judge(spec, point, r, expected: dict | None, peers=None) -> tuple[list[Finding], list[Finding], Note | None]:
    """(findings, warnings, note) for a rung-5 repetition. `peers(names)` gives the honest peers
    of the worst call's inputs (harness.Peer by name), asked only for an output that fails the
    dtype's default where a peer may excuse it, as every call of rungs 1-4 is judged."""
    import torch
    if not r.bits:
        return [], [], None                      # no output could be compared: the first call's contract says why
    compared = r.calls - r.firsts
    differ = torch.stack([b > 0 for b in r.bits.values()]).any(0)
    wrong = torch.stack([f > 0 for f in r.far.values()]).any(0)
    against, worst_right = _worst_against_reference(spec, point, r, expected, peers)
    if against is not None and r.worst_call > r.firsts:
        wrong[r.worst_call - r.firsts - 1] = True
    elif worst_right and not spec.deterministic:
        # the worst call (the most elements past twice the default from its first call) is right
        # against the reference with its honest peer's budget: the first call passed within that
        # budget, not the default, so "past twice the default from it" is no evidence of a wrong
        # call (float atomics summed in another order each call: a weight gradient over 1,024 rows)
        wrong = torch.zeros_like(wrong)
    facts = _facts(spec, r, compared, differ, wrong)
    if spec.deterministic and facts["differ"]:
        return [_finding(spec, point, r, Check.REPEATS, facts, differ, against, bitwise_only=True)], [], None
    if facts["wrong"]:
        return [_finding(spec, point, r, Check.REPEATS, facts, wrong, against)], [], None
    note = Note.of(NoteKind.REPEATS_CLEAN, **facts, **_rate(0, compared))
    if facts["differ"]:
        return [], [_finding(spec, point, r, Check.NONDETERMINISTIC, facts, differ, None, bitwise_only=True)], note
    return [], [], note


def _facts(spec, r, compared: int, differ, wrong) -> dict:
    return {"calls": r.calls, "compared": compared, "firsts": r.firsts, "differ": int(differ.sum()),
            "wrong": int(wrong.sum()), "deterministic": spec.deterministic, "launch": r.launch, "inputs": r.inputs,
            "load": r.load, "seconds": round(r.seconds, 3), "stopped": r.stopped, "fallback": r.fallback,
            "post_graph": r.post_graph.format(),
            "calls_s": round(r.looped / r.seconds, 1) if r.seconds > 0 else 0.0}


def _rate(k: int, n: int) -> dict:
    s = summary(k, n)
    return {"rate": s["rate"], "lo": s["lo"], "hi": s["hi"], "conf": s["conf"], "bound": s["bound"],
            "calls_50": s["calls_50"], "calls_95": s["calls_95"], "curve": s["curve"]}


def _worst_against_reference(spec, point, r, expected, peers=None) -> tuple[Finding | None, bool]:
    """The worst call's outputs against the reference of its inputs: where it is wrong (None
    when it is right, or when the first call on those inputs is wrong too: every call is then,
    and the first call's own finding says so), and whether it was judged right."""
    if r.worst is None or expected is None:
        return None, False
    found = _against(spec, point, r.worst, expected, peers)
    if found is None:
        return None, True
    return (found if _against(spec, point, r.worst_first, expected, peers) is None else None), False


def _against(spec, point, outputs: dict, expected: values.Expected, peers=None) -> Finding | None:
    refs, refs_lo = expected.refs, expected.refs_lo
    for name, out in outputs.items():
        dtype = dtype_of(spec, name, point.dtype_of)
        about = {"dtype": dtype, "shape": list(shape_of(spec, name, point.sizes)), "mode": point.mode}
        tol, where = spec.tolerance_for(dtype), where_of(spec, name)
        bad_shape = values.shape_finding(name, out, refs[name])
        if bad_shape is not None:
            return bad_shape
        m = values.mismatch(out, refs[name], tol, None, refs_lo.get(name))
        if m is not None and m.n_excusable and peers is not None:
            m = values.settle_with(m, out, refs[name], tol, peers([name]).get(name))
        if m is not None:
            return values.finding(name, m, out, refs[name], tol, where, about)
    return None


def _finding(spec, point, r, check: Check, facts: dict, calls, against: Finding | None,
             bitwise_only: bool = False) -> Finding:
    """The rate of the calls in `calls` (a bool per compared call), and where the worst is off:
    against the reference when it is wrong there, else where its bits differ from the first."""
    k = int(calls.sum())
    numbers = (calls.nonzero().flatten()[:FIRST_CALLS] + r.firsts + 1).tolist()
    facts = {**facts, **_rate(k, facts["compared"]), "first_calls": numbers, "worst_call": r.worst_call,
             "bitwise": bitwise_only}
    label = f"call {r.worst_call:,} of {r.calls:,}" if r.worst_call else ""
    if against is not None and not bitwise_only:
        return Finding(check, against.output, call=label, pattern=against.pattern, mismatched=against.mismatched,
                       total=against.total, largest=against.largest, max_abs_err=against.max_abs_err,
                       facts=CHECK_FACTS[str(check)](**facts, nonfinite=getattr(against.facts, "nonfinite", None) or 0, against="reference"))
    name, differ = _bits_of_worst(spec, r)
    if name is None:
        return Finding(check, next(iter(r.bits)), call=label, facts=CHECK_FACTS[str(check)](**facts, against="first call"))
    worst, first = r.worst[name], r.worst_first[name]
    largest = float((worst.double() - first.double()).abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max())
    return Finding(check, name, call=label, pattern=describe(differ, where_of(spec, name)),
                   mismatched=int(differ.sum()), total=differ.numel(), max_abs_err=largest,
                   facts=CHECK_FACTS[str(check)](**facts, against="first call"))


def _bits_of_worst(spec, r):
    """The first output whose bits differ between the worst call and the first on its inputs."""
    if r.worst is None or r.worst_first is None:
        return None, None
    for name, out in r.worst.items():
        differ = bitwise.bits_differ(out, r.worst_first[name])
        if bool(differ.any()):
            return name, differ
    return None, None
