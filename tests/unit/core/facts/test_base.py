"""core/facts/base.py, directly, on facts classes of this module's own (part=True: they register
no kind): dump (enums, tuples, dicts keyed by enums, nested dataclasses), dump_fields (opt() left
out while None, a JSON key of its own, `whole`, left_out), load and load_fields (a tuple frozen
again, lists and dicts typed element by element, a null taking the default, a facts class
refusing a key it lacks, another dataclass ignoring it), Facts typing a nested dict, the tags
of a union checked, registered / table_of refusals, and the round trip as a property."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum

import pytest
from hypothesis import given, settings, strategies as st

from kladder.core.facts import base
from kladder.core.facts.base import Facts, Plain, dump, dump_fields, load, opt, registered
from kladder.core.facts.kinds import Check, NoteKind
from kladder.core.outcome import Status


@dataclass(frozen=True, kw_only=True)
class Piece(Facts, part=True, tag="a"):
    a: int
    note: str | None = opt()


@dataclass(frozen=True, kw_only=True)
class Other(Facts, part=True, tag="b"):
    b: int


@dataclass(frozen=True, kw_only=True)
class Holder(Facts, part=True):
    piece: Piece | None = None
    pieces: list[Piece] = field(default_factory=list)
    either: Piece | Other | None = None
    pairs: tuple = ()
    by: dict[Status, float] = field(default_factory=dict)
    since: int = field(default=0, metadata={"key": "from"})
    status: Status | None = None


@dataclass(frozen=True, kw_only=True)
class Shaped(Facts, part=True):
    kind: str
    extra: int = 0

    def left_out(self):
        return ("extra",) if self.kind == "plain" else ()


@dataclass
class Record(Plain):
    status: Status
    hashes: dict[str, str] = field(default_factory=dict)
    maybe: Status | None = None
    seconds: float = 0.0


class Color(Enum):
    RED = "red"


# ---------------------------------------------------------------------------- dump
def test_dump_writes_jsons_own_types():
    assert dump(None) is None and dump(3) == 3 and dump("s") == "s" and dump(True) is True
    assert dump(Color.RED) == "red" and dump(Status.PASSED) == "passed"
    assert dump((1, (2, Color.RED))) == [1, [2, "red"]]
    assert dump({Status.FAILED: (1,), "x": [Color.RED]}) == {"failed": [1], "x": ["red"]}
    assert dump(Piece(a=1)) == {"a": 1}


def test_dump_a_plain_dataclass_or_one_with_to_dict():
    @dataclass
    class Bare:
        x: tuple = (1,)

    class Own:
        def to_dict(self):
            return {"own": True}
    assert dump(Bare()) == {"x": [1]} and dump(Own()) == {"own": True}
    marker = object()
    assert dump(marker) is marker                                           # unknown: as it is


def test_opt_fields_are_left_out_while_none_unless_whole():
    assert Piece(a=1).to_dict() == {"a": 1}
    assert Piece(a=1, note="n").to_dict() == {"a": 1, "note": "n"}
    assert Piece(a=1).to_dict(whole=True) == {"a": 1, "note": None}
    assert dump(Piece(a=1), whole=True) == {"a": 1, "note": None}


def test_a_field_with_a_key_of_its_own_and_the_field_order():
    d = Holder(since=3).to_dict()
    assert list(d) == ["piece", "pieces", "either", "pairs", "by", "from", "status"] and d["from"] == 3
    assert Holder.from_dict({"from": 4}).since == 4


def test_left_out_drops_fields_by_value_but_not_whole():
    assert Shaped(kind="plain", extra=2).to_dict() == {"kind": "plain"}
    assert Shaped(kind="rich", extra=2).to_dict() == {"kind": "rich", "extra": 2}
    assert dump_fields(Shaped(kind="plain", extra=2), whole=True) == {"kind": "plain", "extra": 2}


# ---------------------------------------------------------------------------- load
def test_load_reads_by_the_annotation():
    assert load(Status, "flaky") is Status.FLAKY and load(Status, Status.OOM) is Status.OOM
    assert load(tuple, [1, [2, [3]]]) == (1, (2, (3,))) and load(Status | None, None) is None
    assert load(list[Piece], [{"a": 1}, None]) == [Piece(a=1), None]
    assert load(dict[Status, float], {"passed": 1.0}) == {Status.PASSED: 1.0}
    assert load(dict[str, int], {"a": 1}) == {"a": 1} and load(int, 5) == 5


def test_load_fields_types_nested_values_and_freezes_tuples():
    h = Holder.from_dict({"piece": {"a": 1}, "pieces": [{"a": 2, "note": "x"}], "either": {"b": 3},
                          "pairs": [["M", 4], ["N", 8]], "by": {"oom": 0.5}, "status": "broken"})
    assert h.piece == Piece(a=1) and h.pieces == [Piece(a=2, note="x")] and h.either == Other(b=3)
    assert h.pairs == (("M", 4), ("N", 8)) and h.by == {Status.OOM: 0.5} and h.status is Status.BROKEN
    assert Holder.from_dict(json.loads(json.dumps(h.to_dict(), allow_nan=False))) == h


def test_a_facts_class_refuses_a_key_it_lacks_and_another_dataclass_ignores_it():
    with pytest.raises(TypeError):
        Piece.from_dict({"a": 1, "z": 2})
    assert Record.from_dict({"status": "passed", "z": 2}) == Record(Status.PASSED)


def test_a_null_takes_the_default_where_the_field_cannot_be_none():
    r = Record.from_dict({"status": "passed", "hashes": None, "maybe": None, "seconds": None})
    assert r.hashes == {} and r.maybe is None and r.seconds == 0.0
    with pytest.raises(TypeError):
        Record.from_dict(None)                                    # no status: a required field stays required


def test_a_facts_class_types_a_nested_dict_given_to_its_constructor():
    h = Holder(piece={"a": 1}, pieces=[{"a": 2}], either={"b": 5})
    assert h.piece == Piece(a=1) and h.pieces == [Piece(a=2)] and type(h.either) is Other
    with pytest.raises(TypeError, match="Holder.either: .* hold the tags of 2"):
        Holder(either={"a": 1, "b": 2})


# ---------------------------------------------------------------------------- tags and the registry
def test_a_unions_tags_must_be_distinct_and_not_another_members_field():
    @dataclass(frozen=True, kw_only=True)
    class SameTag(Facts, part=True, tag="a"):
        x: int = 0

    @dataclass(frozen=True, kw_only=True)
    class HasOthersTag(Facts, part=True, tag="c"):
        b: int = 0
    with pytest.raises(TypeError, match="declare one tag, 'a'"):
        base._tags((Piece, SameTag))
    with pytest.raises(TypeError, match="has the field 'b', the tag of Other"):
        base._tags((Other, HasOthersTag))
    assert base._tags((Piece, Other)) == {"a": Piece, "b": Other}


def test_registered_refuses_what_is_no_member():
    with pytest.raises(KeyError, match="no facts class is registered for 'hang'"):
        registered("hang")                                    # the value, not the Check member
    assert registered(Check.HANG).kind_of is Check.HANG and registered(NoteKind.GPU_POINT).kind_of is NoteKind.GPU_POINT


def test_a_part_class_takes_no_kind():
    assert Piece.kind_of is None and Piece.tag == "a" and Holder.tag is None
    assert Piece not in base._BY_KIND[Check].values()


# ---------------------------------------------------------------------------- round trip, as a property
_pieces = st.builds(lambda a, n: Piece(a=a, note=n), st.integers(-2**63, 2**63 - 1), st.none() | st.text(max_size=5))
_holders = st.builds(
    lambda p, ps, e, pairs, by, since, s: Holder(piece=p, pieces=ps, either=e, pairs=pairs, by=by, since=since, status=s),
    st.none() | _pieces, st.lists(_pieces, max_size=3),
    st.none() | _pieces | st.builds(lambda b: Other(b=b), st.integers()),
    st.lists(st.tuples(st.text(max_size=3), st.integers()), max_size=3).map(tuple),
    st.dictionaries(st.sampled_from(list(Status)), st.floats(allow_nan=False, allow_infinity=False), max_size=3),
    st.integers(), st.none() | st.sampled_from(list(Status)))


@settings(max_examples=30, deadline=None)
@given(_holders)
def test_every_holder_goes_through_strict_json_and_back(h):
    d = json.loads(json.dumps(h.to_dict(), allow_nan=False))
    back = Holder.from_dict(d)
    assert back == h and back.to_dict() == d
