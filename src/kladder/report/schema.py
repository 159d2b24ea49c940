"""docs/report.schema.json's facts, generated from facts.py's dataclasses.

The report's own fields are written by hand in the schema (their descriptions are prose);
the facts of each finding and note are generated here: one definition per Check and per
NoteKind (`facts_<check>`, `note_facts_<kind>`), and the finding's `facts` (the note's) typed by
its check (its kind) with if/then. `python -m kladder.report.schema [PATH]` rewrites PATH
(docs/report.schema.json) in place; `--check` exits 1 when it is not current (tests/test_house.py)."""
from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from ..core import facts as F

def part_name(cls: type) -> str:
    """The definition of a facts class one facts class holds in a field (facts.SpreadFacts ...)."""
    return "part_" + cls.__name__


def type_schema(t: Any, parts: set | None = None) -> dict:
    """A Python annotation (facts.py's) as a JSON Schema; a facts class in it as a reference to
    its definition, added to `parts`."""
    if isinstance(t, type) and issubclass(t, F.Facts):
        if parts is not None:
            parts.add(t)
        return {"$ref": f"#/$defs/{part_name(t)}"}
    if t is Any:
        return {}
    if t is type(None):
        return {"type": "null"}
    if t is bool:
        return {"type": "boolean"}
    if t is int:
        return {"type": "integer"}
    if t is float:
        return {"$ref": "#/$defs/real"}
    if t is str:
        return {"type": "string"}
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [type_schema(a, parts) for a in args]}
    if origin is list:
        return {"type": "array", "items": type_schema(args[0], parts)} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1], parts)} if args else {"type": "object"}
    raise TypeError(f"no JSON Schema for {t!r}")


def facts_schema(cls: type, parts: set | None = None) -> dict:
    """One facts class: every field typed; those written always are required; no other key."""
    hints = typing.get_type_hints(cls)
    props, required = {}, []
    for f in dataclasses.fields(cls):
        props[f.name] = type_schema(hints[f.name], parts)
        if not f.metadata.get("omit") and f.name not in cls.sometimes:
            required.append(f.name)
    doc = (cls.__doc__ or "").strip()
    made = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")   # what dataclass writes for none
    out = {"type": "object", "title": cls.__name__}
    if doc and doc != made:
        out["description"] = " ".join(doc.split())
    return {**out, "required": required, "properties": props, "additionalProperties": False}


def _keyed(key: str, table: dict, prefix: str) -> list[dict]:
    return [{"if": {"properties": {key: {"const": k}}, "required": [key]},
             "then": {"properties": {"facts": {"$ref": f"#/$defs/{prefix}{k}"}}}} for k in table]


def generate(schema: dict) -> dict:
    """`schema` with its generated parts made afresh from facts.py."""
    parts: set = set()
    made = {f"facts_{k}": facts_schema(c, parts) for k, c in F.CHECK_FACTS.items()}
    made |= {f"note_facts_{k}": facts_schema(c, parts) for k, c in F.NOTE_FACTS.items()}
    made |= {"golden": facts_schema(F.GoldenFacts, parts), "golden_point": facts_schema(F.GoldenPointFacts, parts),
             "diff": facts_schema(F.DiffFacts, parts), "golden_record": facts_schema(F.GoldenRecordFacts, parts),
             "shrink_cause": facts_schema(F.ShrinkCauseFacts, parts),
             "reuse": facts_schema(F.ReuseFacts, parts), "reused": facts_schema(F.ReusedFacts, parts)}
    done: set = set()
    while parts - done:
        for cls in sorted(parts - done, key=lambda c: c.__name__):
            done.add(cls)
            made[part_name(cls)] = facts_schema(cls, parts)
    classes, todo = set(), [F.Facts]
    while todo:
        classes |= set(todo)
        todo = [c for t in todo for c in t.__subclasses__() if c not in classes]
    names = {c.__name__ for c in classes}     # a definition made from one (its title) is made afresh or goes
    defs = {k: v for k, v in schema["$defs"].items() if k not in made and v.get("title") not in names}
    finding = defs["finding"]
    finding["properties"]["check"] = {"enum": list(F.CHECK_FACTS), "description": "outcome.Check"}
    finding["properties"]["facts"] = {"type": "object", "description": "the check's facts: facts_<check>"}
    finding["allOf"] = _keyed("check", F.CHECK_FACTS, "facts_")
    note = defs["point"]["properties"]["note"]["oneOf"][1]
    note["properties"]["kind"] = {"enum": list(F.NOTE_FACTS), "description": "outcome.NoteKind"}
    note["properties"]["facts"] = {"type": "object", "description": "the kind's facts: note_facts_<kind>"}
    note["allOf"] = _keyed("kind", F.NOTE_FACTS, "note_facts_")
    return {**schema, "$defs": defs | made}


def text(schema: dict) -> str:
    return json.dumps(schema, indent=2) + "\n"


DEFAULT = Path(__file__).resolve().parents[3] / "docs" / "report.schema.json"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    path = Path(paths[0]) if paths else DEFAULT
    old = path.read_text()
    new = text(generate(json.loads(old)))
    if check:
        if new != old:
            print(f"{path} is not current: run python -m kladder.report.schema {path}", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
