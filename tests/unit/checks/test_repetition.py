"""checks/repetition.py: rung 5's verdicts from what the repetition measured (Repeats, built here
directly): a clean run's note and bound, differing calls as a warning or (deterministic) a
failure, wrong calls' rate and numbers, the worst call held against the reference both ways; and
the stream's tally batch by batch (hard failures, peers asked, excused, undecided, truncated)."""
import json
import types

import pytest
import torch

import kladder as kl
from kladder.checks import repetition, values
from kladder.checks.repetition import StreamTally, judge
from kladder.core.notation import Inputs, Launch
from kladder.core.outcome import Check, Finding, Note, NoteKind
from kladder.core.point import Point
from kladder.run.modes.base import Repeats, StreamBatch, Streamed


def _spec(deterministic=False, dtype="float32"):
    return kl.Spec("r", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype=dtype)},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)},
                   repetition=kl.Repetition(deterministic=deterministic))


PT = Point("r", 5, (("M", 4), ("N", 8)), dtypes=(("x", "float32"),))
REF = torch.arange(32, dtype=torch.float64).reshape(4, 8) / 7


def _repeats(bits=(0, 0, 0, 0), far=(0, 0, 0, 0), worst=None, worst_first=None, worst_call=0, firsts=1, **kw):
    n = len(bits)
    return Repeats({"out": torch.tensor(bits)}, {"out": torch.tensor(far)}, n + firsts, firsts, 2.0, Launch.EAGER,
                   Inputs.SAME, False, "calls", looped=n, worst_call=worst_call,
                   worst=None if worst is None else {"out": worst}, worst_first=None if worst_first is None else {"out": worst_first},
                   **kw)


def _expected():
    return values.Expected({"out": REF})


def test_no_output_compared_says_nothing():
    r = _repeats()
    r.bits, r.far = {}, {}
    assert judge(_spec(), PT, r, None) == ([], [], None)


def test_a_clean_run_says_what_it_proves():
    found, warned, note = judge(_spec(), PT, _repeats(bits=(0,) * 100, far=(0,) * 100), None)
    assert found == [] and warned == []
    assert note.kind == NoteKind.REPEATS_CLEAN and (note.facts.calls, note.facts.compared, note.facts.firsts) == (101, 100, 1)
    assert note.facts.rate == 0.0 and 0 < note.facts.bound < 0.05 and note.facts.calls_s == 50.0
    assert Note.from_dict(json.loads(json.dumps(note.to_dict(), allow_nan=False))) == note


def test_calls_that_differ_within_the_tolerance_are_a_warning_not_a_failure():
    first = REF.float()
    worst = first.clone()
    worst[2, 3] = torch.nextafter(worst[2, 3], torch.tensor(100.0))
    r = _repeats(bits=(0, 1, 0, 1), worst=worst, worst_first=first, worst_call=3)
    found, warned, note = judge(_spec(), PT, r, _expected())
    assert found == [] and note.kind == NoteKind.REPEATS_CLEAN and note.facts.differ == 2
    (w,) = warned
    assert w.check == Check.NONDETERMINISTIC and w.facts.bitwise and w.facts.against == "first call"
    assert w.facts.first_calls == [3, 5] and w.facts.rate == 0.5 and w.mismatched == 1 and w.pattern.rows == ("one", 2)
    assert w.call == "call 3 of 5" and w.max_abs_err == pytest.approx(float(worst[2, 3] - first[2, 3]))


def test_deterministic_spec_fails_on_any_differing_bit():
    first = REF.float()
    worst = first.clone()
    worst[0, 0] = torch.nextafter(worst[0, 0], torch.tensor(1.0))
    r = _repeats(bits=(0, 0, 1, 0), worst=worst, worst_first=first, worst_call=4)
    (f,), warned, note = judge(_spec(deterministic=True), PT, r, _expected())
    assert f.check == Check.REPEATS and f.facts.bitwise and f.facts.deterministic and f.facts.first_calls == [4]
    assert warned == [] and note is None
    assert judge(_spec(deterministic=True), PT, _repeats(), _expected())[0] == []     # the same bits: passes


def test_far_calls_are_wrong_with_their_rate_and_numbers():
    first = REF.float()
    worst = first.clone()
    worst[1] += 1.0                                        # a whole row off from the first call
    r = _repeats(bits=(5, 0, 8, 8) + (0,) * 16, far=(0, 0, 8, 8) + (0,) * 16, worst=worst, worst_first=first,
                 worst_call=4, firsts=2)
    (f,), warned, note = judge(_spec(), PT, r, None)       # no reference to hold the worst against
    assert f.check == Check.REPEATS and not f.facts.bitwise and f.facts.against == "first call"
    assert (f.facts.wrong, f.facts.differ, f.facts.compared) == (2, 3, 20) and f.facts.first_calls == [5, 6]
    assert f.facts.rate == 0.1 and f.facts.lo < 0.1 < f.facts.hi and f.pattern.rows == ("one", 1)
    assert warned == [] and note is None
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f


def test_the_first_eight_wrong_calls_are_kept():
    r = _repeats(bits=(1,) * 12, far=(1,) * 12, worst=REF.float() + 1, worst_first=REF.float(), worst_call=2)
    (f,), _, _ = judge(_spec(), PT, r, None)
    assert f.facts.first_calls == list(range(2, 10)) and f.facts.wrong == 12


def test_a_worst_call_wrong_against_the_reference_is_located_there():
    first = REF.float()
    worst = first.clone()
    worst[3, 7] = 99.0
    r = _repeats(bits=(0, 0, 1), far=(0, 0, 0), worst=worst, worst_first=first, worst_call=4)   # far missed it
    (f,), _, _ = judge(_spec(), PT, r, _expected())
    assert f.facts.against == "reference" and f.facts.wrong == 1 and f.facts.first_calls == [4]
    assert f.largest.index == (3, 7) and f.largest.kernel == 99.0 and f.facts.nonfinite == 0


def test_a_worst_call_right_against_the_reference_clears_far_calls_unless_deterministic():
    # far from the first call, but both within the reference's tolerance: the first call was the
    # unlucky one (atomics in another order); bits still differ: a warning
    first = REF.float()
    worst = (REF * (1 + 1e-6)).float()
    r = _repeats(bits=(32, 32), far=(32, 32), worst=worst, worst_first=first, worst_call=2)
    found, warned, note = judge(_spec(), PT, r, _expected())
    assert found == [] and [w.check for w in warned] == [Check.NONDETERMINISTIC] and note.facts.wrong == 0
    (f,), _, _ = judge(_spec(deterministic=True), PT, r, _expected())
    assert f.facts.bitwise and f.facts.wrong == 2          # deterministic: the far calls stay counted


def test_when_the_first_call_on_those_inputs_is_wrong_too_far_decides():
    bad = REF.float() + 5.0                                # every call wrong: the first call's own finding says so
    r = _repeats(bits=(0, 0), far=(0, 0), worst=bad, worst_first=bad.clone(), worst_call=2)
    found, warned, note = judge(_spec(), PT, r, _expected())
    assert found == [] and note.kind == NoteKind.REPEATS_CLEAN


def test_a_reference_of_another_shape_is_left_to_the_first_calls_contract_finding():
    # the worst call and the first on its inputs both "fail" a reference of another shape: every
    # call would, so no call is blamed for it here (the first call's contract finding says so)
    r = _repeats(bits=(0, 0), far=(0, 0), worst=REF.float(), worst_first=REF.float(), worst_call=3)
    found, warned, note = judge(_spec(), PT, r, values.Expected({"out": REF[:2]}))
    assert found == [] and warned == [] and note.facts.wrong == 0


# ---------------------------------------------------------------------------- the stream
def _batch(outs, refs, first_call=1, budget_s=10.0):
    n = len(outs)
    return StreamBatch(first_call, list(range(n)), [], {"out": torch.stack(outs)}, {"out": torch.stack(refs)},
                       [(j % 2 + 1, "AB"[j % 2]) for j in range(n)], budget_s)


def _streamed(calls):
    return Streamed(calls, 2.0, "calls", 2, "AB", True, calls, True, False)


def _peers(answer, asked):
    def peers(j, names):
        asked.append(j)
        return {n: answer(j) for n in names}
    return peers


def test_a_clean_stream_is_a_note_with_what_it_judged():
    refs = [REF + j for j in range(6)]
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch([r.float() for r in refs], refs), _peers(lambda j: None, asked := []))
    found, warned, note = tally.result(_streamed(7))
    assert found == [] and warned == [] and asked == []
    assert note.kind == NoteKind.STREAM_CLEAN and note.facts.judged == 6 and note.facts.wrong == 0
    assert note.facts.calls_s == 3.5


def test_a_non_finite_call_is_wrong_without_asking_a_peer():
    refs = [REF + j for j in range(4)]
    outs = [r.float() for r in refs]
    outs[2][1, 1] = float("nan")
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch(outs, refs, first_call=11), _peers(lambda j: None, asked := []))
    (f,), _, _ = tally.result(_streamed(15))
    assert asked == [] and f.check == Check.STREAM and f.facts.first_wrong == 13 and f.facts.first_calls == [13]
    assert (f.facts.step, f.facts.letter) == (1, "A") and f.call == "call 13 of 15" and f.facts.nonfinite == 1
    assert f.largest.index == (1, 1)


def test_a_finite_miss_asks_the_peer_which_excuses_or_not():
    refs = [REF + j for j in range(4)]
    outs = [r.float() for r in refs]
    outs[1] = outs[1] + 1e-4                               # past float32's default (~7 x), finite
    honest = types.SimpleNamespace(kernel=outs[1].clone(), spread=None, facts={"dtype": "float32"}, unit=2.0 ** -24)
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch(outs, refs), _peers(lambda j: honest, asked := []))
    found, _, note = tally.result(_streamed(5))
    assert asked == [1] and found == [] and (note.facts.peered, note.facts.excused) == (1, 1)
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch(outs, refs), _peers(lambda j: None, asked := []))     # no peer: the default decides
    (f,), _, _ = tally.result(_streamed(5))
    assert asked == [1] and f.facts.wrong == 1 and f.facts.first_wrong == 2 and f.facts.peered == 1


def test_past_the_peer_budget_a_miss_is_undecided(monkeypatch):
    monkeypatch.setattr(repetition, "PEER_CALLS", 1)
    refs = [REF + j for j in range(3)]
    outs = [r.float() + 1e-3 for r in refs]
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch(outs, refs), _peers(lambda j: None, asked := []))
    (f,), _, _ = tally.result(_streamed(4))
    assert asked == [0] and (f.facts.wrong, f.facts.undecided, f.facts.peered) == (1, 2, 1)
    tally = StreamTally(_spec(), PT)
    tally.peer_s = 100.0                                   # past PEER_SHARE of a 10 s budget already
    tally.batch(_batch(outs, refs), _peers(lambda j: None, asked := []))
    assert asked == [] and tally.undecided == 3


def test_a_bfloat16_miss_only_the_interpreters_truncation_explains_is_not_judged():
    spec = _spec(dtype="bfloat16")
    pt = Point("r", 5, (("M", 4), ("N", 8)), dtypes=(("x", "bfloat16"),))
    ref = (1 + torch.arange(32, dtype=torch.float64).reshape(4, 8) / 64)
    eps = torch.finfo(torch.bfloat16).eps
    tol = spec.tolerance_for("bfloat16")
    off = ref.to(torch.bfloat16).clone()
    off[0, 0] = (ref[0, 0] * (1 + tol.rtol) + 0.6 * eps * ref[0, 0]).to(torch.bfloat16)      # just past, within an ulp
    assert values.mismatch(off, ref, tol) is not None
    tally = StreamTally(spec, pt)
    tally.batch(_batch([off], [ref]), _peers(lambda j: None, []), rounding={"what": "truncates", "x": [], "got": [], "want": []})
    found, _, note = tally.result(_streamed(2))
    assert found == [] and note.facts.truncated == 1
    tally = StreamTally(spec, pt)
    tally.batch(_batch([off], [ref]), _peers(lambda j: None, []))             # a device that rounds: wrong
    assert tally.wrong == [1]


def test_wrong_calls_accumulate_over_batches_and_the_first_is_kept():
    refs = [REF + j for j in range(3)]
    good = [r.float() for r in refs]
    bad = [r.float() for r in refs]
    bad[0][0, 0] = float("inf")
    tally = StreamTally(_spec(), PT)
    tally.batch(_batch(good, refs, first_call=1), _peers(lambda j: None, []))
    tally.batch(_batch(bad, refs, first_call=4), _peers(lambda j: None, []))
    bad2 = [r.float() for r in refs]
    bad2[2][3, 3] = float("nan")
    tally.batch(_batch(bad2, refs, first_call=7), _peers(lambda j: None, []))
    (f,), _, _ = tally.result(_streamed(10))
    assert tally.wrong == [4, 9] and f.facts.first_wrong == 4 and f.facts.judged == 9 and f.largest.index == (0, 0)
    assert f.facts.rate == pytest.approx(2 / 9)


def test_each_calls_rows_keep_their_own_scale():
    t = torch.arange(2 * 3 * 4).reshape(2, 3, 4)
    assert repetition._per_call_rows(t, 2).shape == (6, 4)
    assert repetition._per_call_rows(torch.zeros(5, 7), 5).shape == (5, 7)       # a 1-d output: one row a call
    assert repetition._per_call_rows(torch.zeros(3), 3).shape == (3, 1)          # a scalar output


def test_calls_of_several_configs_are_grouped_by_config():
    tally = StreamTally(_spec(), PT)
    preps = [types.SimpleNamespace(point=types.SimpleNamespace(config=c)) for c in ((("B", 1),), (("B", 2),), (("B", 1),))]
    b = types.SimpleNamespace(preps=preps)
    groups = tally._by_config(b, 3)
    assert {c: t.tolist() for c, t in groups.items()} == {(("B", 1),): [0, 2], (("B", 2),): [1]}
    one = types.SimpleNamespace(preps=preps[:1] * 3)
    assert tally._by_config(one, 3) == {(("B", 1),): None}
    assert tally._by_config(types.SimpleNamespace(preps=[]), 3) == {PT.config: None}


def test_calls_of_several_configs_are_each_judged_on_their_own_rows():
    refs = [REF + j for j in range(3)]
    outs = [r.float() for r in refs]
    outs[1][3, 5] = float("nan")                           # the second call (config B=2), its last row
    b = _batch(outs, refs)
    b.preps = [types.SimpleNamespace(point=types.SimpleNamespace(config=c)) for c in ((("B", 1),), (("B", 2),), (("B", 1),))]
    tally = StreamTally(_spec(), PT)
    tally.batch(b, _peers(lambda j: None, []))
    assert tally.wrong == [2]
    outs[1][3, 5] = refs[1][3, 5]
    outs[2][0, 0] += 1.0                                   # the third call (config B=1), a finite miss
    b.outputs = {"out": torch.stack(outs)}
    tally = StreamTally(_spec(), PT)
    tally.batch(b, _peers(lambda j: None, asked := []))
    assert asked == [2] and tally.wrong == [3]
