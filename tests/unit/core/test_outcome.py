"""core/outcome.py, directly: error_facts (the first line, cut at 300, Triton's "at 5:21:" joined
with the last line, whole), a Note's and a Finding's facts typed by their kind, Waited's rounding
and JSON key, Outcome.headline and its strict-JSON round trip, and the exceptions that carry
answers between layers (Skip, SpecBroken, KernelError, Hung)."""
from __future__ import annotations

import json

import pytest

from kladder.core.facts import GpuPointFacts, HangFacts, NoOutArgsFacts, RaisedFacts
from kladder.core.outcome import (KLADDER_STAGES, STATUSES, Check, Finding, Hung, KernelError, Note, NoteKind, Outcome, Skip,
                                  SpecBroken, Stage, Status, Wait, Waited, error_facts)
from kladder.core.point import Point


# ---------------------------------------------------------------------------- error_facts
def test_error_facts_is_the_type_and_the_first_non_blank_line():
    assert error_facts(ValueError("\n\n  bad shape  \nmore\n")) == {"error": "ValueError", "text": "bad shape  "}
    assert error_facts(KeyError("k")) == {"error": "KeyError", "text": "'k'"}


@pytest.mark.parametrize("message", ["", "   ", "\n \n"])
def test_error_facts_of_an_empty_message(message):
    assert error_facts(RuntimeError(message)) == {"error": "RuntimeError", "text": ""}


def test_error_facts_cuts_the_line_at_300_characters():
    assert error_facts(RuntimeError("x" * 300))["text"] == "x" * 300
    assert error_facts(RuntimeError("x" * 301))["text"] == "x" * 300


def test_a_first_line_that_announces_what_follows_gets_the_last_line():
    e = RuntimeError("at 5:21:\n    x = tl.load(p)\n        ^\nNameError('p is not defined')\n")
    assert error_facts(e)["text"] == "at 5:21: NameError('p is not defined')"
    assert error_facts(RuntimeError("at 5:21:"))["text"] == "at 5:21:"                # nothing follows
    assert error_facts(RuntimeError("first\nlast"))["text"] == "first"               # no colon: the first line alone


def test_error_facts_whole_keeps_the_message_as_it_is():
    assert error_facts(RuntimeError("a\n\nb"), whole=True) == {"error": "RuntimeError", "text": "a\n\nb"}


# ---------------------------------------------------------------------------- typed facts
def test_a_note_without_facts_takes_its_kinds_empty_facts_and_a_finding_its_checks():
    assert type(Note(NoteKind.NO_OUT_ARGS).facts) is NoOutArgsFacts
    assert Finding(Check.HANG, facts=HangFacts(timeout_s=1.0)).facts.timeout_s == 1.0
    with pytest.raises(TypeError):
        Finding(Check.HANG)                                    # HangFacts needs timeout_s: no empty facts for it


def test_facts_of_another_kind_or_a_dict_are_refused_naming_both():
    with pytest.raises(TypeError, match="gpu_point's facts must be a facts.GpuPointFacts, not NoOutArgsFacts"):
        Note(NoteKind.GPU_POINT, NoOutArgsFacts())
    with pytest.raises(TypeError, match="raised's facts must be a facts.RaisedFacts, not dict"):
        Finding(Check.RAISED, facts={"error": "E", "text": ""})


def test_note_of_builds_the_kinds_facts_and_a_kind_given_as_its_value_works():
    n = Note.of(NoteKind.GPU_POINT, need_bytes=8, budget="1 GiB")
    assert n.facts == GpuPointFacts(need_bytes=8, budget="1 GiB")
    assert Note.of("gpu_point", need_bytes=8, budget="1 GiB") == n


def test_waited_rounds_to_the_millisecond_and_writes_for():
    w = Waited(Wait.DEVICE, 1.23456)
    assert w.seconds == 1.235 and w.times == 1
    assert Waited(Wait.HELD, 2).seconds == 2.0 and type(Waited(Wait.HELD, 2).seconds) is float
    assert w.to_dict() == {"for": "device", "seconds": 1.235, "times": 1}
    assert Waited.from_dict({"for": "held", "seconds": 0.5}) == Waited(Wait.HELD, 0.5, 1)


def test_the_stages_kladder_owns_are_every_stage_but_the_kernels():
    assert Stage.KERNEL not in KLADDER_STAGES and set(KLADDER_STAGES) | {Stage.KERNEL} == set(Stage)
    assert STATUSES[0] == Status.PASSED and len(STATUSES) == len(set(STATUSES)) == 7
    assert f"{Status.NOT_JUDGED}" == "not_judged" and str(Stage.PEERS) == "peers"


# ---------------------------------------------------------------------------- Outcome
def _point():
    return Point("t", 1, (("N", 9),))


def test_headline_is_the_first_finding():
    first = Finding(Check.RAISED, facts=RaisedFacts(error="E", text="a"))
    second = Finding(Check.HANG, facts=HangFacts(timeout_s=2.0))
    assert Outcome(_point(), Status.FAILED, [first, second]).headline is first
    assert Outcome(_point(), Status.PASSED).headline is None


def test_an_outcome_goes_through_strict_json_and_back():
    o = Outcome(_point(), Status.FAILED, [Finding(Check.HANG, "out", "call 2", facts=HangFacts(timeout_s=1.5))],
                note=Note.of(NoteKind.GPU_POINT, need_bytes=3, budget="b"), seconds=0.25, stages={Stage.KERNEL: 0.5},
                hashes={"out": "ab"})
    text = json.dumps(o.to_dict(), allow_nan=False)
    back = Outcome.from_dict(json.loads(text))
    assert back == o and type(back.stages) is dict and list(back.stages) == [Stage.KERNEL]
    assert type(back.findings[0].facts) is HangFacts and back.status is Status.FAILED


def test_an_outcome_stored_with_null_hashes_takes_the_default():
    d = json.loads(json.dumps(Outcome(_point(), Status.PASSED).to_dict()))
    d["hashes"] = None
    assert Outcome.from_dict(d).hashes == {}


# ---------------------------------------------------------------------------- between layers
def test_skip_and_spec_broken_carry_their_note():
    s = Skip(NoteKind.GPU_POINT, need_bytes=1, budget="x")
    assert s.note == Note.of(NoteKind.GPU_POINT, need_bytes=1, budget="x") and str(s) == "gpu_point"
    b = SpecBroken(NoteKind.NO_OUT_ARGS)
    assert b.note == Note(NoteKind.NO_OUT_ARGS) and str(b) == "no_out_args: {}"
    with pytest.raises(TypeError):
        Skip(NoteKind.GPU_POINT, need_byte=1, budget="x")                    # a misspelt fact fails where it is made


def test_kernel_error_and_hung():
    inner = IndexError("out of bounds")
    e = KernelError(inner, "replay 2 of 3")
    assert (e.error, e.label, str(e)) == (inner, "replay 2 of 3", "out of bounds")
    h = Hung(1.5)
    assert h.timeout_s == 1.5 and str(h) == "no answer within 1.5 s" and str(Hung(120.0)) == "no answer within 120 s"
