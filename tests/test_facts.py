"""The typed facts (src/kladder/core/facts.py): the JSON they write is the JSON main wrote, key for
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
