"""The small languages (notation.py) and the closed sets: each parses what it formats, refuses
what it cannot read with a ValueError that names it, and a point holding them prints, dumps and
reads back exactly as it did when they were bare strings."""
import json

import pytest

from kladder.core.notation import (
    DtypeFactor, ImportName, Inputs, Launch, Layout, Mode, Needs, Nonfinite, Padding, PointKind, SpecRef, ValueKind, Values,
    input_kind,
)
from kladder.core.point import Point
from kladder.run.modes.base import PostGraph


@pytest.mark.parametrize("text", ["peaked/10", "peaked/3", "ties", "normal", "nonfinite", "lengths"])
def test_value_kind_round_trip(text):
    assert ValueKind.parse(text).format() == text
    assert input_kind(text) == ValueKind.parse(text)


def test_value_kind_fields():
    assert ValueKind.parse("peaked/30") == ValueKind(Values.PEAKED, "30")
    assert ValueKind.parse("ties") == ValueKind("ties") and ValueKind("ties").arg == ""


@pytest.mark.parametrize("text, says", [("bogus", "'bogus'"), ("peaked/", "nothing after '/'"), ("peaked/1/2", "'1/2'"),
                                        ("", "''"), (3, "give a string")])
def test_value_kind_refuses(text, says):
    with pytest.raises(ValueError, match="value kind") as e:
        ValueKind.parse(text)
    assert says in str(e.value)


@pytest.mark.parametrize("text", ["pad:0xFF", "pad:0x00", "pad:0x7F", "pad:0x80", "pad:bytes", "pad:random"])
def test_padding_round_trip(text):
    assert Padding.parse(text).format() == text
    assert input_kind(text) == Padding.parse(text)


def test_padding_byte_value():
    assert Padding.parse("pad:0xFF").value == 255 and Padding("0x80").value == 128
    assert Padding("bytes").value is None and Padding("random").value is None


@pytest.mark.parametrize("text", ["pad:0x1FF", "pad:FF", "pad:0xZZ", "pad:", "pad:zeros", "0xFF", "peaked/10"])
def test_padding_refuses(text):
    with pytest.raises(ValueError, match="padd"):
        Padding.parse(text)


def test_dtype_factor_round_trip_and_refusal():
    assert DtypeFactor.parse("dtype:x").tensor == "x" and DtypeFactor("x").format() == "dtype:x"
    assert DtypeFactor.is_one("dtype:scale") and not DtypeFactor.is_one("M")
    for bad in ("M", "dtype:"):
        with pytest.raises(ValueError, match="dtype factor"):
            DtypeFactor.parse(bad)


def test_import_name_round_trip_and_refusal():
    for text in ("pkg.mod:name", "pkg.mod:Class.method", "m:f"):
        assert ImportName.parse(text).format() == text
    assert ImportName.parse("a.b:C.d") == ImportName("a.b", "C.d")
    for bad in ("pkg.mod", ":name", "pkg.mod:", "pkg mod:x", "pkg.mod:1x"):
        with pytest.raises(ValueError, match="pkg.mod:name"):
            ImportName.parse(bad)


def test_spec_ref_round_trip():
    for text in ("path/to/spec.py", "path/spec.py::rmsnorm", "kladder.zoo.nan_blind::fixed"):
        assert SpecRef.parse(text).format() == text
    assert SpecRef.parse("a.py::") == SpecRef("a.py", None)
    assert SpecRef.parse("a.py::x") == SpecRef("a.py", "x")


@pytest.mark.parametrize("text", ["", "captured", "RuntimeError: operation not permitted when stream is capturing"])
def test_post_graph_round_trip(text):
    assert PostGraph.parse(text).format() == text


def test_post_graph_states():
    assert not PostGraph().tried and PostGraph(tried=True).captured
    failed = PostGraph.failed("RuntimeError: no")
    assert failed.tried and not failed.captured and failed.error == "RuntimeError: no"
    with pytest.raises(ValueError, match="tried"):
        PostGraph(error="RuntimeError: no")
    with pytest.raises(ValueError, match="not an error"):
        PostGraph(True, "captured")


def test_words_are_their_values_in_text_json_and_repr():
    assert json.dumps({"m": Mode.GRAPH, "k": [PointKind.EDGE]}) == '{"m": "graph", "k": ["edge"]}'
    assert repr({"m": Mode.GRAPH}) == "{'m': 'graph'}" and f"{Launch.EAGER}" == "eager" and str(Inputs.FRESH) == "fresh"
    assert Mode.GRAPH == "graph" and hash(Mode.GRAPH) == hash("graph") and {"graph": 1}[Mode.GRAPH] == 1
    assert not Needs.NOTHING and Needs.CUDA == "cuda"


def test_word_of_names_the_field_and_the_choices():
    with pytest.raises(ValueError, match=r"Point: mode is 'grpah'; give one of \[.*'graph'"):
        Mode.of("grpah", "Point: mode")


def test_point_holds_words_and_prints_as_before():
    p = Point("s", 5, (("N", 3),), mode="repeat", kind="repeat", needs="cuda",
              repeat=(("inputs", "fresh"), ("launch", "eager")), values=(("x", "peaked/10"),))
    assert type(p.mode) is Mode and type(p.kind) is PointKind and type(p.needs) is Needs
    assert dict(p.repeat)["inputs"] is Inputs.FRESH and dict(p.repeat)["launch"] is Launch.EAGER
    assert p.kinds == {"x": ValueKind("peaked", "10")} and p.padding is None
    assert p.id == "r5-N=3-repeat-x:peaked/10-fresh-eager"
    text = repr(p)
    assert "'mode': 'repeat'" in text and "<" not in text
    assert Point.parse(text) == p and Point.parse(p.to_json()) == p
    assert json.loads(p.to_json())["repeat"] == [["inputs", "fresh"], ["launch", "eager"]]


def test_point_padding_view():
    p = Point("s", 3, (("N", 3),), kind="padding", mode="padding", values=(("scale", "pad:0x7F"),))
    assert p.padding == ("scale", Padding("0x7F"))


@pytest.mark.parametrize("field, value, says", [
    ("mode", "grpah", "Point: mode is 'grpah'"), ("kind", "edges", "Point: kind is 'edges'"),
    ("needs", "gpu", "Point: needs is 'gpu'")])
def test_a_hand_edited_point_with_an_unknown_word_is_refused(field, value, says):
    d = Point("s", 1, (("N", 3),)).to_dict()
    d[field] = value
    with pytest.raises(ValueError, match=says):
        Point.from_dict(d)


def test_a_point_with_a_value_kind_that_does_not_parse_is_refused():
    with pytest.raises(ValueError, match="value kind"):
        Point("s", 2, (("N", 3),), values=(("x", "peaked/"),))
    with pytest.raises(ValueError, match="Point: repeat's launch"):
        Point("s", 5, (("N", 3),), repeat=(("launch", "graphs"),))


# ---- the spec's closed sets: a member once valid, the value as given (and one SpecError) when not
def _spec(**over):
    import kladder as kl
    d = dict(kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32", values=["peaked", "ties"])},
             returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
    d.update(over)
    return kl.Spec("t", **d)


def test_spec_words_are_members():
    import kladder as kl
    s = _spec(nonfinite="raise")
    assert s.nonfinite is Nonfinite.RAISE and s.args["x"].values == (Values.PEAKED, Values.TIES)
    assert all(type(v) is Values for v in s.args["x"].values)
    assert kl.Collective(needs="cuda").needs is Needs.CUDA and kl.Collective().needs is Needs.NOTHING
    assert _spec().nonfinite is None
    t = kl.Tensor("M N", dtype="float32", layouts="sliced")
    assert t.layouts == (Layout.SLICED,) and type(t.layouts[0]) is Layout and t.layout_list() == ("sliced",)


@pytest.mark.parametrize("over, where, fix", [
    ({"nonfinite": "propogate"}, "Spec('t').nonfinite", "did you mean 'propagate'?"),
    ({"nonfinite": 3}, "Spec('t').nonfinite", "use one of ('propagate', 'ignore', 'raise')"),
])
def test_spec_word_outside_its_set_is_one_spec_error(over, where, fix):
    import kladder as kl
    with pytest.raises(kl.SpecError) as e:
        _spec(**over)
    assert e.value.where == where and fix in e.value.fix and repr(over["nonfinite"]) in str(e.value)


def test_value_kind_outside_its_set_is_one_spec_error():
    import kladder as kl
    with pytest.raises(kl.SpecError) as e:
        _spec(args={"x": kl.Tensor("N", dtype="float32", values=["peakd", "ties"])})
    assert e.value.where == "Spec('t').args['x'].values" and "did you mean 'peaked'?" in e.value.fix
    assert "('normal', 'peaked'," in e.value.fix              # the choices print as the words, not as enum reprs


def test_collective_needs_outside_its_set_is_one_spec_error():
    import kladder as kl
    with pytest.raises(kl.SpecError) as e:
        kl.Spec("ar", kernel=lambda c, x: x, reference=None, args={"x": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)}, collective=kl.Collective(needs="gpu"))
    assert e.value.where == "Spec('ar').collective.needs" and "'cuda'" in e.value.fix


def test_word_has():
    assert Values.has("peaked") and Values.has(Values.TIES) and not Values.has("peakd")
    assert not Values.has(None) and not Values.has(3) and Needs.has("")
