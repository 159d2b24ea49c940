"""report/schema.py: facts classes as JSON Schema (each annotation, required and optional
fields, parts), the generated schema's shape, its validation of facts written by to_dict, and
`--check` on a stale file."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest

from kladder.core import facts as F
from kladder.report import schema as S

SCHEMA = json.loads(S.DEFAULT.read_text())


@functools.cache
def _made() -> dict:
    return S.generate(SCHEMA)


# ---------------------------------------------------------------------------- annotations
@pytest.mark.parametrize("t, out", [
    (bool, {"type": "boolean"}), (int, {"type": "integer"}), (str, {"type": "string"}),
    (float, {"$ref": "#/$defs/real"}), (type(None), {"type": "null"}), (Any, {}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (dict[str, float], {"type": "object", "additionalProperties": {"$ref": "#/$defs/real"}}),
    (Literal["a", "b"], {"enum": ["a", "b"]}),
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
])
def test_type_schema_of_each_annotation(t, out):
    assert S.type_schema(t) == out


def test_a_facts_class_in_an_annotation_is_a_reference_and_a_part():
    parts: set = set()
    assert S.type_schema(list[F.SpreadFacts] | None, parts) == {
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/part_SpreadFacts"}}, {"type": "null"}]}
    assert parts == {F.SpreadFacts}
    assert S.type_schema(F.PeerFacts) == {"$ref": "#/$defs/part_PeerFacts"}     # no parts set: nothing to add to


def test_an_annotation_without_a_schema_is_refused_by_name():
    with pytest.raises(TypeError, match="no JSON Schema for <class 'complex'>"):
        S.type_schema(complex)
    with pytest.raises(TypeError, match="set"):
        S.type_schema(set[int])
    with pytest.raises(TypeError, match="<class 'list'>"):
        S.type_schema(list)                                     # a bare list: its items unsaid, no field has one


# ---------------------------------------------------------------------------- facts classes
def test_facts_schema_requires_what_is_always_written():
    s = S.facts_schema(F.HangFacts)
    assert s["required"] == ["timeout_s"] and s["additionalProperties"] is False and s["title"] == "HangFacts"
    assert set(s["properties"]) == {"timeout_s", "watchdog"}
    assert S.facts_schema(F.CrashedFacts)["required"] == []                   # every field opt()


def test_facts_schema_does_not_require_what_left_out_may_drop():
    s = S.facts_schema(F.SanitizerFacts)
    assert "second" in s["properties"] and "second" not in s["required"] and "tool" in s["required"]


def test_facts_schema_keeps_a_written_docstring_and_drops_the_generated_one():
    assert S.facts_schema(F.HostFullFacts)["description"].startswith("The worker was killed (SIGKILL")

    @dataclass(frozen=True, kw_only=True)
    class UndocumentedFacts(F.Facts, part=True):
        n: int
    assert "description" not in S.facts_schema(UndocumentedFacts)


# ---------------------------------------------------------------------------- the generated schema
def test_generate_is_idempotent_and_types_every_check_and_note():
    made = _made()
    assert S.generate(made) == made
    keyed = {c["if"]["properties"]["check"]["const"] for c in made["$defs"]["finding"]["allOf"]}
    assert keyed == set(F.CHECK_FACTS)
    assert all(f"facts_{k}" in made["$defs"] for k in F.CHECK_FACTS)
    assert all(f"note_facts_{k}" in made["$defs"] for k in F.NOTE_FACTS)


def test_generate_drops_a_stale_definition_of_a_facts_class_and_keeps_the_hand_written_ones():
    stale = {**SCHEMA, "$defs": {**SCHEMA["$defs"], "facts_gone": {"title": "HangFacts", "type": "object"},
                                 "mine": {"title": "Prose", "type": "string"}}}
    made = S.generate(stale)
    assert "facts_gone" not in made["$defs"] and made["$defs"]["mine"] == {"title": "Prose", "type": "string"}
    assert made["$defs"]["real"] == SCHEMA["$defs"]["real"]


def _validator(name: str):
    made = _made()
    return jsonschema.Draft202012Validator({"$defs": made["$defs"], "$ref": f"#/$defs/{name}"})


@pytest.mark.parametrize("name, facts", [
    ("facts_values", F.ValuesFacts(dtype="float32", shape=[4, 7], rtol=1e-5, atol=1e-5, budget="peer",
                                   spread=F.SpreadFacts(draws=8, at=1e-6, terms=3.0),
                                   peer=F.PeerFacts(dtype="float32", factor=2.0))),
    ("facts_values", F.ValuesFacts(peer=F.PeerSkippedFacts(skipped=3))),
    ("facts_guard", F.GuardFacts(itemsize=4, n_after=8, n_before=0, after=[0, 1], after_lo=0, after_hi=7)),
    ("facts_crashed", F.CrashedFacts(signal="SIGSEGV")),
    ("note_facts_gpu_point", F.GpuPointFacts(need_bytes=1 << 40, budget="1 GiB")),
    ("note_facts_stage_overrun", F.StageOverrunFacts(stage="reference", seconds=1.5, budget_s=1, timeout_s=1)),
])
def test_what_to_dict_writes_validates_against_its_definition(name, facts):
    _validator(name).validate(facts.to_dict())


def test_the_schema_refuses_an_unknown_key_and_a_missing_required_one():
    v = _validator("facts_hang")
    assert not v.is_valid({"timeout_s": 1.0, "typo": 1})
    assert not v.is_valid({"watchdog": True})
    assert v.is_valid({"timeout_s": "Infinity"})                # a non-finite float is written as a string


# ---------------------------------------------------------------------------- the command
def test_check_says_a_stale_file_is_not_current_and_writing_makes_it_current(tmp_path, capsys):
    stale = json.loads(json.dumps(SCHEMA))
    del stale["$defs"]["facts_hang"]
    path = tmp_path / "schema.json"
    path.write_text(S.text(stale))
    assert S.main([str(path), "--check"]) == 1
    assert f"{path} is not current: run python -m kladder.report.schema {path}" in capsys.readouterr().err
    assert path.read_text() == S.text(stale)                     # --check writes nothing
    assert S.main([str(path)]) == 0
    assert Path(path).read_text() == S.text(_made())
