"""The typed facts (src/kladder/facts/): the JSON they write is the JSON main wrote, key for
key; they go through a worker's JSON and back unchanged; a dict or a misspelt key is refused
where the facts are made; the generated schema types each check's facts."""
import json
import pathlib
import re

import jsonschema
import pytest

from kladder.core.facts import CHECK_FACTS, NOTE_FACTS, CrashedFacts, RaisedFacts, SanitizerFacts, ValuesFacts
from kladder.core.outcome import Check, Finding, Largest, Note, NoteKind, Outcome, Pattern, Status
from kladder.core.point import Point
from kladder.report.jsonout import outcome_dict
from kladder.report.words import message, note_text

HERE = pathlib.Path(__file__).resolve().parent
SAMPLES = json.loads((HERE / "facts_json" / "main_facts.json").read_text())
SCHEMA = json.loads((HERE.parent / "docs" / "report.schema.json").read_text())


_CHECKED = []


def _validate(doc, schema: dict) -> None:
    """jsonschema.validate(doc, schema) for SCHEMA with a oneOf of its own $defs, the schema itself
    checked once a process (jsonschema.validate checks it on every call: ~0.5-1 CPU s with this
    schema, tests/conftest.py's _validator; the added oneOf of one $ref is a valid schema whenever
    SCHEMA is)."""
    cls = jsonschema.validators.validator_for(SCHEMA)
    if not _CHECKED:
        cls.check_schema(SCHEMA)
        _CHECKED.append(True)
    error = jsonschema.exceptions.best_match(cls(schema).iter_errors(doc))
    if error is not None:
        raise error


def _valid(facts: dict, name: str) -> None:
    _validate(facts, {**SCHEMA, "oneOf": [{"$ref": f"#/$defs/{name}"}]})


@pytest.mark.parametrize("s", SAMPLES["findings"], ids=lambda s: f"{s['kind']}-{len(s['facts'])}")
def test_a_findings_facts_as_main_wrote_them_come_back_the_same(s):
    typed = CHECK_FACTS[s["kind"]].from_dict(s["facts"])
    assert typed.to_dict() == s["facts"]
    _valid(s["facts"], f"facts_{s['kind']}")


@pytest.mark.parametrize("s", SAMPLES["notes"], ids=lambda s: f"{s['kind']}-{len(s['facts'])}")
def test_a_notes_facts_as_main_wrote_them_come_back_the_same(s):
    typed = NOTE_FACTS[s["kind"]].from_dict(s["facts"])
    assert typed.to_dict() == s["facts"]
    _valid(s["facts"], f"note_facts_{s['kind']}")


@pytest.mark.parametrize("s", SAMPLES["notes"], ids=lambda s: f"{s['kind']}-{len(s['facts'])}")
def test_a_notes_words_are_mains(s):
    assert note_text(Note.from_dict({"kind": s["kind"], "facts": s["facts"]})) == s["reason"]


WITH_PATTERN = {"values", "repeats", "nondeterministic", "input_changed", "invariant", "padding"}   # not in the JSON


def _fold(text: str) -> str:
    """A message with its separators (". ", "; ", a new line) folded: split over lines, the same words."""
    return re.sub(r"[.;]?\s+", " ", text)


@pytest.mark.parametrize("s", [s for s in SAMPLES["findings"] if s["kind"] not in WITH_PATTERN],
                         ids=lambda s: f"{s['kind']}-{len(s['facts'])}")
def test_a_findings_words_are_mains(s):
    f = Finding(Check(s["kind"]), s["output"], s["call"], mismatched=s["mismatched"], total=s["total"],
                facts=CHECK_FACTS[s["kind"]].from_dict(s["facts"]))
    assert _fold(message(f)) == _fold(s["message"])


def test_the_samples_cover_the_common_kinds():
    kinds = {s["kind"] for s in SAMPLES["findings"]} | {s["kind"] for s in SAMPLES["notes"]}
    assert {"values", "guard", "repeats", "device_fault", "dispatch", "gpu_point", "repeats_clean", "ran"} <= kinds


def test_a_dict_or_another_kinds_facts_or_a_misspelt_key_is_refused():
    with pytest.raises(TypeError):
        Finding(Check.RAISED, facts={"error": "E", "text": ""})
    with pytest.raises(TypeError):
        Finding(Check.RAISED, facts=CrashedFacts(signal="SIGSEGV"))
    with pytest.raises(TypeError):
        RaisedFacts(eror="E")
    with pytest.raises(TypeError):
        Note.of(NoteKind.KERNEL_OOM, call="", txt="out of memory")


def test_an_optional_field_is_left_out_while_none_and_a_required_one_always_written():
    assert CrashedFacts(signal="SIGSEGV", frames=[]).to_dict() == {"signal": "SIGSEGV", "frames": []}
    assert CrashedFacts(exit_status=3).to_dict() == {"exit_status": 3}
    unread = SanitizerFacts(tool="memcheck", kind="unread", count=4)
    assert unread.to_dict() == {"tool": "memcheck", "kind": "unread", "count": 4}
    assert "second" in SanitizerFacts(tool="memcheck", kind="invalid", text="x").to_dict()
    assert Finding(Check.NONFINITE).facts.to_dict() == {} and Note(NoteKind.NO_OUT_ARGS).facts.to_dict() == {}


def test_an_outcome_goes_through_a_workers_json_and_back_unchanged():
    f = Finding(Check.VALUES, "out", pattern=Pattern("single"), mismatched=1, total=9, largest=Largest((0, 8), float("nan"), 1.0, 0.01),
                facts=ValuesFacts(nonfinite=1, sampled=False, rtol=0.016, atol=1e-5, dtype="bfloat16", shape=[1, 9],
                                  mode="eager"))
    o = Outcome(Point("s", 1, (("N", 9),)), Status.FAILED, [f],
                note=Note.of(NoteKind.GPU_POINT, need_bytes=1 << 30, budget="64 MiB"),
                warnings=[Finding(Check.RAISED, facts=RaisedFacts(error="E", text="t"))])
    back = Outcome.from_dict(json.loads(json.dumps(o.to_dict())))
    assert back.findings[0].facts == f.facts and type(back.findings[0].facts) is ValuesFacts
    assert back.note == o.note and back.warnings[0].facts == o.warnings[0].facts
    d = outcome_dict(back)
    assert d["findings"][0]["facts"] == {"nonfinite": 1, "sampled": False, "rtol": 0.016, "atol": 1e-5,
                                         "dtype": "bfloat16", "shape": [1, 9], "mode": "eager"}
    assert d["note"] == {"kind": "gpu_point", "facts": {"need_bytes": 1 << 30, "budget": "64 MiB"}}


def test_the_schema_types_a_findings_facts_by_its_check():
    bad = {"check": "values", "facts": {"nonfinte": 1}}
    finding = {**SCHEMA, "oneOf": [{"$ref": "#/$defs/finding"}]}
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad, finding)


def test_a_facts_piece_is_typed_from_its_json_and_written_back_key_for_key():
    """ValuesFacts.spread and .peer (the honest-peer budget's derivation) are facts classes: made
    from a worker's JSON they are typed, the peer's three shapes each its own class, and the JSON
    written back is the JSON read."""
    from kladder.core.facts import PeerFacts, PeerFailedFacts, PeerSkippedFacts, SpreadFacts
    spread = {"draws": 16, "at": 1.03e-07, "terms": 1.73}
    for peer, cls in (({"dtype": "float32", "factor": 0.5, "capped": False, "cap": 8.0, "half_digits": 0.5}, PeerFacts),
                      ({"error": "RuntimeError", "text": "no kernel for Half"}, PeerFailedFacts),
                      ({"skipped": 1 << 29}, PeerSkippedFacts)):
        d = {"rtol": 1.3e-6, "atol": 1e-5, "dtype": "float32", "budget": "peer", "spread": spread, "peer": peer}
        x = ValuesFacts(**d)
        assert type(x.spread) is SpreadFacts and x.spread.terms == 1.73 and type(x.peer) is cls
        assert x.to_dict() == d and ValuesFacts.from_dict(json.loads(json.dumps(x.to_dict()))) == x
        _valid(d, "facts_values")
    with pytest.raises(TypeError, match="ValuesFacts.peer"):
        ValuesFacts(peer={"dtype": "float32", "skipped": 3})                  # the fields of no one shape
    with pytest.raises(jsonschema.ValidationError):
        _valid({"peer": {"dtype": "float32", "factr": 1.0}}, "facts_values")
    with pytest.raises(TypeError):
        SpreadFacts(draws=16, at=1e-7)                                        # a field missing


def test_the_golden_check_is_typed_and_says_whether_it_fails_the_climb():
    from kladder.core.facts import GoldenChangedFacts, GoldenFacts
    d = {"recorded": "2026-12-01T09:00:00", "target": {"torch": "2.13"}, "toolchain": {}, "strict": True, "fails": True,
         "equal": ["a"], "changed": [{"id": "b", "outputs": ["out"]}], "not_kept": [], "nondeterministic": ["c"]}
    g = GoldenFacts.from_dict(d)
    assert g.changed == [GoldenChangedFacts(id="b", outputs=["out"])] and g.to_dict() == d
    assert g.of_point("b").to_dict() == {"bits": "changed", "since": "2026-12-01T09:00:00", "outputs": ["out"]}
    assert g.of_point("c").bits == "nondeterministic" and g.of_point("zz") is None
    _validate(d, {**SCHEMA, "oneOf": [{"$ref": "#/$defs/golden"}]})


# ---------------------------------------------------------------------------- kinds registered once
def test_a_facts_class_registers_its_kind_and_the_tables_are_built_from_the_registrations():
    from kladder.core.facts import HangFacts, registered
    assert HangFacts.kind_of is Check.HANG and registered(Check.HANG) is HangFacts and CHECK_FACTS["hang"] is HangFacts
    assert registered(NoteKind.GPU_POINT) is NOTE_FACTS["gpu_point"]
    assert [c.kind_of for c in CHECK_FACTS.values()] == list(Check)
    assert [c.kind_of for c in NOTE_FACTS.values()] == list(NoteKind)


def test_a_facts_class_without_a_kind_or_claiming_a_taken_one_is_refused_at_creation():
    from kladder.core.facts import Facts, HangFacts
    with pytest.raises(TypeError, match="must say what it is the facts of"):
        class NoKind(Facts):
            x: int = 0
    with pytest.raises(TypeError, match="must say what it is the facts of"):
        class TwoKinds(Facts, check=Check.HANG, part=True):
            pass
    with pytest.raises(TypeError, match=r"Check.HANG already has its facts class, HangFacts"):
        class SecondHang(Facts, check=Check.HANG):
            timeout_s: float = 0.0
    with pytest.raises(TypeError, match="is not a Check member"):
        class WrongEnum(Facts, check=NoteKind.RAN):
            pass
    assert CHECK_FACTS["hang"] is HangFacts                  # the refused classes took nothing


def test_a_kind_without_its_facts_class_is_refused_when_the_table_is_built():
    from enum import Enum

    from kladder.core.facts import table_of
    from kladder.core.facts import base
    extra = Enum("Extra", {"ODD": "odd"})
    base._BY_KIND[extra] = {}
    try:
        with pytest.raises(TypeError, match="without a facts class: .'odd'."):
            table_of(extra)
    finally:
        del base._BY_KIND[extra]


def test_a_union_member_is_read_by_its_declared_tag():
    from kladder.core.facts import Facts, PeerFacts, PeerFailedFacts, PeerNotNeededFacts, PeerSkippedFacts, load
    hint = PeerFacts | PeerFailedFacts | PeerSkippedFacts | PeerNotNeededFacts | None
    assert [c.tag for c in typing_args(hint)] == ["dtype", "error", "skipped", "times"]
    assert type(load(hint, {"times": 40.0, "decides": 8.0})) is PeerNotNeededFacts
    assert type(load(hint, {"error": "E", "text": ""})) is PeerFailedFacts
    with pytest.raises(TypeError, match="hold the tags of 0"):
        load(hint, {"decides": 8.0})

    class Untagged(Facts, part=True):
        pass
    with pytest.raises(TypeError, match="declares no tag"):
        load(PeerFacts | Untagged, {"dtype": "x"})


def typing_args(hint):
    import typing
    return [a for a in typing.get_args(hint) if a is not type(None)]


# ---------------------------------------------------------------------------- one serializer
def _rich_outcome():
    from kladder.core.facts import PeerSkippedFacts, ReusedFacts, SpreadFacts, UnderLoadFacts
    from kladder.core.outcome import Load, Replay, RowsChecked, Span, Stage
    pat = Pattern("block", cols=Span(128, 129, 130, ("N", 64, 2)), rows=("runs", ((0, 3), (8, 9))), n_bad=12,
                  n_total=8320, n_rows=6, ids=(0, 1, 2), first=(0, 128), sample=((0, 128), (1, 129)),
                  density=(2, 4, ((50, 0), (0, 100))))
    f = Finding(Check.VALUES, "out", "replay 2 of 3", pat, 12, 8320, Largest((0, 128), 1.5, 1.25, 0.01), 0.25,
                ValuesFacts(rtol=0.016, dtype="bfloat16", spread=SpreadFacts(draws=16, at=1e-4, terms=0.02),
                            peer=PeerSkippedFacts(skipped=900)))
    w = Finding(Check.UNDER_LOAD, facts=UnderLoadFacts(first="hang", lanes=2, alone="passed", oom_kills=0))
    return Outcome(Point("s", 2, (("M", 64), ("N", 130))), Status.FLAKY, [f], Note.of(NoteKind.GPU_POINT, need_bytes=1,
                   budget="cpu"), 1.25, RowsChecked(8, 64, "M", 4), "repro", [w], Replay.FLAKY, Status.PASSED, "printed",
                   {Stage.INPUTS: 0.1, Stage.KERNEL: 0.5}, Load(lanes=2, alone=Status.PASSED, alone_s=0.3),
                   {"out": "ab"}, Load(lanes=1, host_used_bytes=10), ReusedFacts(run_id="r", climb=3, kept="t"))


def test_outcome_finding_and_pattern_round_trip_through_the_one_serializer():
    from kladder.core.facts import dump, load
    from kladder.core.outcome import Span
    o = _rich_outcome()
    d = json.loads(json.dumps(o.to_dict()))
    back = Outcome.from_dict(d)
    assert back == o and back.to_dict() == d
    assert type(back.findings[0].pattern.cols) is Span and back.findings[0].pattern.rows == ("runs", ((0, 3), (8, 9)))
    assert type(back.findings[0].facts.peer).__name__ == "PeerSkippedFacts" and back.stages == o.stages
    f = o.findings[0]
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))) == f and dump(f) == f.to_dict()
    assert load(Pattern, json.loads(json.dumps(dump(f.pattern)))) == f.pattern
    assert list(d) == ["point", "status", "findings", "note", "seconds", "rows", "repro", "warnings", "replay",
                       "replay_status", "output", "stages", "load", "hashes", "ran_with", "reused"]
    assert d["load"]["host_used_bytes"] is None and d["load"]["alone"] == "passed"   # the outcome's load: whole
    assert "host_used_bytes" not in d["warnings"][0]["facts"]                          # a finding's: opt() left out
    from kladder.core.outcome import Wait, Waited
    w = Waited(Wait.WORKER, 0.40004, 2)
    assert w.to_dict() == {"for": "worker", "seconds": 0.4, "times": 2} and Waited.from_dict(w.to_dict()) == w


def test_an_outcome_as_main_stored_it_loads_and_writes_back_key_for_key():
    """tests/facts_json/main_outcomes.json: outcomes written by main's hand-written Outcome.to_dict
    (what history/outcomes.py stores and a worker sends): read by the one serializer and written
    back, the same JSON."""
    stored = json.loads((HERE / "facts_json" / "main_outcomes.json").read_text())["outcomes"]
    for d in stored:
        o = Outcome.from_dict(d)
        assert json.dumps(o.to_dict()) == json.dumps(d)


def test_the_typed_results_write_the_json_they_replaced_key_for_key():
    """ClimbReport.start_error, .shrunk and the debugging commands' results are dataclasses now; their
    JSON is what the dicts were: a usage error's kind and message alone, the device's facts then
    its line; a shrink's `from`; bisect's output tail before its outcome."""
    from kladder.tools.bisect import BisectResult
    from kladder.core.facts import ShrunkFacts
    from kladder.core.results import StartErrorFacts
    assert StartErrorFacts(kind="usage", message="bad --rungs").to_dict() == {"kind": "usage", "message": "bad --rungs"}
    device = {"kind": "device", "what": "a context", "error": "OOM", "waited_s": 1.0, "gpu": "0", "free_bytes": 1,
              "total_bytes": 2, "holders": [{"pid": 4, "name": "python", "used_bytes": None}], "message": "m"}
    typed = StartErrorFacts.from_dict(device)
    assert typed.holders[0].pid == 4 and json.dumps(typed.to_dict()) == json.dumps(device)
    shrunk = {"from": {"spec": "s", "rung": 1, "dims": [["N", 9]]}, "check": "values", "method": "m", "runs": 3,
              "complete": True, "passes_at": {"N": {"size": 8, "status": "passed"}}, "smallest": None,
              "cannot_shrink": None, "cause": None, "rung": 1, "failed_id": "r1-N=9"}
    s = ShrunkFacts.from_dict(shrunk)
    assert s.passes_at["N"].size == 8 and json.dumps(s.to_dict()) == json.dumps(shrunk)
    r = BisectResult(repo="r", spec="s", good="g", bad="b", device="cpu", predicate={"point": None, "rungs": "1"},
                     git_output_tail="...", outcome="bisect_failed")
    assert list(r.to_dict())[-3:] == ["git_output_tail", "outcome", "seconds"]
    assert "git_output_tail" not in BisectResult.from_dict({**r.to_dict(), "git_output_tail": None}).to_dict()
