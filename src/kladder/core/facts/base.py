"""The base of every facts class, its registration by kind, and the one JSON serializer of the
typed data (facts, and outcome.py's Outcome, Finding, Note, Pattern, ...).

A facts class says what it is where it is made: `class HangFacts(Facts, check=Check.HANG)` (the
facts of a Finding of that check), `note=NoteKind.X` (of a Note of that kind), or `part=True` (a
piece other facts hold, or a fact of the report's own: SpreadFacts, GoldenFacts, ...). A class
that says none of these, or a second class for a kind already taken, is refused when it is
created; facts/__init__.py builds CHECK_FACTS and NOTE_FACTS from the registrations, in the
enums' order, and refuses a member without a class.

The serializer: `dump(value)` writes a value as JSON's own types (a dataclass by its fields in
their order, an enum as its value, a tuple as a list); `load(hint, value)` reads it back as the
annotation `hint` says (a dataclass from its dict, an enum from its value, a tuple made a tuple
again). A class with a `to_dict` / `from_dict` of its own that does not come from `Plain` (Point:
it checks what it reads) is written and read by them. A field annotated with a union of facts
classes is read as the member whose `tag` (a key its JSON always holds, declared at the class:
`class PeerSkippedFacts(Facts, part=True, tag="skipped")`) the dict holds; a field annotated with
the base `Facts` is read as the class registered for the kind another field of the same object
names (`field(metadata={"kind": "check"})`); a field whose JSON key is not its name (a keyword:
"from") says its key (`field(metadata={"key": "from"})`).
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar, Union

from .kinds import Check, NoteKind

Json = Any          # a JSON value: str, int, float, bool, None, a list or a dict of them


def opt(default: Any = None) -> Any:
    """A field left out of the JSON while it is None."""
    return field(default=default, metadata={"omit": True})


# ---------------------------------------------------------------------------- the serializer
class Plain:
    """A dataclass written and read by the one serializer: `to_dict` its fields in their order,
    `from_dict` back (a key it does not have is ignored, a missing one takes the field's default)."""

    def to_dict(self) -> dict[str, Json]:
        return dump_fields(self)

    @classmethod
    def from_dict(cls, d: dict[str, Json] | None):
        return load_fields(cls, d or {})


def dump(v: Any, whole: bool = False) -> Any:
    """`v` as JSON's own types. `whole`: a facts class with every field, None ones too."""
    if v is None or type(v) in _SCALARS:
        return v
    if isinstance(v, Enum):
        return v.value
    if isinstance(v, Plain):
        return dump_fields(v, whole)
    if isinstance(v, (list, tuple)):
        return [dump(x) for x in v]
    if isinstance(v, dict):
        return {(k.value if isinstance(k, Enum) else k): dump(x) for k, x in v.items()}
    if isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if dataclasses.is_dataclass(v):
        return dump_fields(v, whole)
    return v


_SCALARS = frozenset({bool, int, float, str})


@functools.cache
def _dump_plan(cls: type) -> tuple[tuple[str, str, bool, bool], ...]:
    """Each field's (name, JSON key, left out while None, written whole), in order."""
    return tuple((f.name, f.metadata.get("key", f.name), bool(f.metadata.get("omit")), bool(f.metadata.get("whole")))
                 for f in fields(cls))


def dump_fields(obj: Any, whole: bool = False) -> dict[str, Json]:
    """A dataclass's fields in their order; a facts class leaves out an opt() field while it is
    None (unless `whole`) and the fields its left_out names."""
    out = {}
    left_out = () if whole or not isinstance(obj, Facts) else obj.left_out()
    for name, key, omit, inner_whole in _dump_plan(type(obj)):
        v = getattr(obj, name)
        if not whole and ((v is None and omit) or name in left_out):
            continue
        out[key] = dump(v, inner_whole)
    return out


@functools.cache
def hints_of(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _is_facts(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, Facts)


@functools.cache
def _load_plan(cls: type) -> dict[str, tuple]:
    """{JSON key: (field name, its loader, the field naming its kind or None, null means the default)}."""
    hints, plan = hints_of(cls), {}
    for f in fields(cls):
        t = hints[f.name]
        null_default = not _is_facts(cls) and not _allows_none(t) and _has_default(f)
        plan[f.metadata.get("key", f.name)] = (f.name, _loader(t), f.metadata.get("kind"), null_default)
    return plan


def load_fields(cls: type, d: dict[str, Json]):
    """`cls` made from its dict: each key read as its field's annotation says. A facts class
    refuses a key it does not have (its constructor names it); another dataclass ignores it;
    a null where the field cannot be None (Outcome.hashes) takes the field's default."""
    plan, kw = _load_plan(cls), {}
    for key, v in d.items():
        p = plan.get(key)
        if p is None:
            if _is_facts(cls):
                kw[key] = v                  # the constructor refuses it, naming it
            continue
        name, loader, kind_by, null_default = p
        if kind_by:
            kw[name] = _of_kind(_kind(cls, d, kind_by), v)
        elif v is None:
            if not null_default:
                kw[name] = None
        else:
            kw[name] = loader(v)
    for key, (name, _, kind_by, _) in plan.items():
        if kind_by and name not in kw and key not in d:
            kw[name] = _of_kind(_kind(cls, d, kind_by), None)
    return cls(**kw)


def _kind(cls: type, d: dict, by: str) -> Any:
    """The kind field `by` of `d` names (the enum member): it picks a facts field's class."""
    return load(hints_of(cls)[by], d.get(by))


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not MISSING or f.default_factory is not MISSING


def _allows_none(t: Any) -> bool:
    return t is Any or (typing.get_origin(t) in (Union, types.UnionType) and type(None) in typing.get_args(t))


def _of_kind(kind: Any, v: Any) -> Facts | None:
    """The facts of a finding or a note, read as the class registered for its kind."""
    if isinstance(v, Facts):
        return v
    return registered(kind).from_dict(v)


def load(t: Any, v: Any) -> Any:
    """`v` (JSON) as the annotation `t` says."""
    return None if v is None else _loader(t)(v)


def _same(v: Any) -> Any:
    return v


@functools.cache
def _loader(t: Any):
    """The function that reads a (non-null) JSON value as the annotation `t` says: a dataclass
    from its dict, an enum from its value, a tuple frozen, a union of facts classes by its tags;
    anything else as it is."""
    if t is Any:
        return _same
    origin, args = typing.get_origin(t), typing.get_args(t)
    if isinstance(t, type):
        if issubclass(t, Enum):
            return lambda v: v if isinstance(v, t) else t(v)
        if t is tuple:
            return _freeze
        if issubclass(t, Plain) or hasattr(t, "from_dict"):
            return lambda v: t.from_dict(v) if isinstance(v, dict) else v
        if dataclasses.is_dataclass(t):
            return lambda v: load_fields(t, v) if isinstance(v, dict) else v
        return _same
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = _loader(members[0])
            return lambda v: None if v is None else inner(v)
        classes = tuple(a for a in members if _is_facts(a))
        if classes:
            return lambda v: _tagged(classes, v).from_dict(v) if isinstance(v, dict) else v
        return _same
    if origin is list:
        if not args:
            return lambda v: list(v) if isinstance(v, list) else v
        inner = _loader(args[0])
        if inner is _same:
            return _same
        return lambda v: [None if x is None else inner(x) for x in v] if isinstance(v, list) else v
    if origin is tuple:
        return _freeze
    if origin is dict and args:
        lk, lv = _loader(args[0]), _loader(args[1])
        if lk is _same and lv is _same:
            return _same
        return lambda v: ({lk(k): None if x is None else lv(x) for k, x in v.items()} if isinstance(v, dict) else v)
    return _same


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


@functools.cache
def _tags(classes: tuple[type, ...]) -> dict[str, type]:
    """A union's members by their tags: each declares one, no two the same, and no member has
    another's tag among its fields (so the key that picks one is never another's)."""
    tags: dict[str, type] = {}
    for c in classes:
        if c.tag is None:
            raise TypeError(f"{c.__name__} is a member of a union of facts classes {[x.__name__ for x in classes]} "
                            "and declares no tag: class X(Facts, part=True, tag='KEY')")
        if c.tag in tags:
            raise TypeError(f"{c.__name__} and {tags[c.tag].__name__} declare one tag, {c.tag!r}")
        tags[c.tag] = c
    for c in classes:
        clash = [t for t in tags if tags[t] is not c and t in {f.name for f in fields(c)}]
        if clash:
            raise TypeError(f"{c.__name__} has the field {clash[0]!r}, the tag of {tags[clash[0]].__name__}")
    return tags


def _tagged(classes: tuple[type, ...], d: dict) -> type:
    tags = _tags(classes)
    picked = [c for t, c in tags.items() if t in d]
    if len(picked) != 1:
        raise TypeError(f"{sorted(d)} hold the tags of {len(picked)} of {[c.__name__ for c in classes]} "
                        f"(tags {sorted(tags)}); one is needed")
    return picked[0]


# ---------------------------------------------------------------------------- the registry
_BY_KIND: dict[type, dict[Enum, type]] = {Check: {}, NoteKind: {}}


def registered(kind: Check | NoteKind | str) -> type[Facts]:
    """The facts class registered for a Check or a NoteKind member."""
    table = _BY_KIND.get(type(kind))
    if table is None or kind not in table:
        raise KeyError(f"no facts class is registered for {kind!r}")
    return table[kind]


def table_of(enum: type[Enum]) -> dict[str, type[Facts]]:
    """{member's value: its facts class} in the enum's order; every member must have its class."""
    missing = [m for m in enum if m not in _BY_KIND[enum]]
    if missing:
        raise TypeError(f"{enum.__name__} members without a facts class: {[m.value for m in missing]} "
                        f"(class XFacts(Facts, {'check' if enum is Check else 'note'}={enum.__name__}.X))")
    return {m.value: _BY_KIND[enum][m] for m in enum}


@dataclass(frozen=True, kw_only=True)
class Facts(Plain):
    """The base of every facts class: JSON out (`to_dict`) and back in (`from_dict`)."""
    kind_of: ClassVar[Check | NoteKind | None] = None    # the check or note kind it is the facts of (None: a part)
    tag: ClassVar[str | None] = None                     # in a union of facts classes: the key that picks it
    sometimes: ClassVar[tuple[str, ...]] = ()     # fields left_out may drop (not required in the schema)

    def __init_subclass__(cls, *, check: Check | None = None, note: NoteKind | None = None, part: bool = False,
                          tag: str | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        said = [x for x in (check, note) if x is not None] + ([True] if part else [])
        if len(said) != 1:
            raise TypeError(f"facts class {cls.__name__} must say what it is the facts of, once: "
                            "class X(Facts, check=Check.Y), (Facts, note=NoteKind.Y) or (Facts, part=True)")
        kind = check if check is not None else note
        if check is not None and not isinstance(check, Check):
            raise TypeError(f"facts class {cls.__name__}: check={check!r} is not a Check member")
        if note is not None and not isinstance(note, NoteKind):
            raise TypeError(f"facts class {cls.__name__}: note={note!r} is not a NoteKind member")
        if kind is not None:
            table = _BY_KIND[type(kind)]
            if kind in table:
                raise TypeError(f"facts class {cls.__name__}: {type(kind).__name__}.{kind.name} already has its "
                                f"facts class, {table[kind].__name__}; one class per kind")
            table[kind] = cls
        cls.kind_of, cls.tag = kind, tag

    def __post_init__(self) -> None:
        for name, hint in _nested(type(self)).items():
            v = getattr(self, name)
            if v is not None and not isinstance(v, Facts):
                try:
                    typed = load(hint, v)
                except TypeError as e:
                    raise TypeError(f"{type(self).__name__}.{name}: {e}") from None
                if typed is not v:
                    object.__setattr__(self, name, typed)

    def to_dict(self, whole: bool = False) -> dict[str, Json]:
        return dump_fields(self, whole)

    def left_out(self) -> tuple[str, ...]:
        """Fields this instance does not write at all (a class whose shape depends on a value)."""
        return ()

    @classmethod
    def from_dict(cls, d: dict[str, Json] | None) -> "Facts":
        return load_fields(cls, d or {})


def _mentions_facts(t: Any) -> bool:
    return _is_facts(t) or any(_mentions_facts(a) for a in typing.get_args(t))


@functools.cache
def _nested(cls: type) -> dict[str, Any]:
    """The fields of `cls` typed with a facts class (itself, in a list, or in a union)."""
    hints = hints_of(cls)
    return {f.name: hints[f.name] for f in fields(cls) if _mentions_facts(hints[f.name])}
