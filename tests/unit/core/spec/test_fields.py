"""core/spec/fields.py, directly: dtype names, shape symbols and their sizes, the converters each
field is normalised with, Dim's sizes (allows, snap), Tensor's value kinds and layouts by rank,
kl.Config (a dict with a tolerance, its repr and pickling), a declared write's condition at a
point, and the names of derived outputs."""
from __future__ import annotations

import pickle

import pytest
import torch
from hypothesis import given, settings, strategies as st

import kladder as kl
from kladder.core.notation import Layout, Nonfinite, Values
from kladder.core.point import Point
from kladder.core.spec import fields as f


def test_dtype_name_takes_a_torch_dtype_and_leaves_anything_else():
    assert f.dtype_name(torch.bfloat16) == "bfloat16" and f.dtype_name(torch.int8) == "int8"
    assert f.dtype_name("float32") == "float32" and f.dtype_name(5) == 5 and f.dtype_name(None) is None


@pytest.mark.parametrize("v,ok", [(0, True), (-3, True), (1 << 40, True), (True, False), (1.0, False), ("1", False)])
def test_is_int_refuses_bools_and_floats(v, ok):
    assert f.is_int(v) is ok


@pytest.mark.parametrize("sym,dims,size", [("N", ("N",), 7), ("64", (), 64), ("G*K", ("G", "K"), 12), ("2*N", ("N",), 14),
                                           ("G*4*K", ("G", "K"), 48), ("0", (), 0)])
def test_a_symbols_dims_and_size(sym, dims, size):
    assert f.symbol_dims(sym) == dims
    assert f.symbol_size(sym, {"N": 7, "G": 3, "K": 4}) == size


def test_a_symbol_of_an_unknown_dim_has_no_size():
    with pytest.raises(KeyError):
        f.symbol_size("Q", {"N": 1})


@pytest.mark.parametrize("v,want", [("a", ("a",)), (["a", "b"], ("a", "b")), (("a",), ("a",)), (None, None), (3, 3),
                                    ({"a": 1}, {"a": 1})])
def test_as_tuple(v, want):
    assert f.as_tuple(v) == want


def test_as_tuple_of_another_single_type_and_as_seq():
    assert f.as_tuple(8, int) == (8,) and f.as_tuple("8", int) == "8"
    assert f.as_seq([1, 2]) == (1, 2) and f.as_seq((1,)) == (1,) and f.as_seq("ab") == "ab" and f.as_seq(None) is None


def test_as_word_and_as_words_make_members_and_leave_the_rest_as_given():
    word = f.as_word(Nonfinite)
    assert word("ignore") is Nonfinite.IGNORE and word("nan") == "nan" and word(None) is None
    words = f.as_words(Layout)
    assert words("sliced") == (Layout.SLICED,) and type(words(["sliced", "offset"])[1]) is Layout
    assert words(["sliced", "strided"]) == ("sliced", "strided")              # one outside: all as given, for the validator
    assert words(3) == 3


def test_convert_sets_frozen_fields_in_place():
    t = kl.Tensor("N", dtype="float32")
    f.convert(t, shape=str.lower)
    assert t.shape == "n"


# ---------------------------------------------------------------------------- Dim
def test_dim_sizes_are_sorted_deduplicated_and_set_min_and_max():
    d = kl.Dim(sizes=[64, 8, 16, 8])
    assert (d.sizes, d.min, d.max, d._range) == ((8, 16, 64), 8, 64, (1, 1 << 16))
    bad = kl.Dim(sizes=[0, 8])
    assert bad.sizes == (0, 8) and (bad.min, bad.max) == (1, 1 << 16)          # left as given for the validator
    assert kl.Dim(1, 8, tile=None).tile == () and kl.Dim(1, 8, tile=[16, 32]).tiles == (16, 32)


@pytest.mark.parametrize("v,ok", [(0, False), (1, True), (8, True), (9, False)])
def test_dim_allows_its_range(v, ok):
    assert kl.Dim(1, 8).allows(v) is ok


@pytest.mark.parametrize("v,ok", [(7, False), (8, True), (12, False), (16, True), (64, True), (65, False)])
def test_dim_allows_only_its_sizes(v, ok):
    assert kl.Dim(sizes=[8, 16, 64]).allows(v) is ok


@pytest.mark.parametrize("v,want", [(0, 8), (7, 8), (8, 8), (15, 8), (16, 16), (63, 16), (64, 64), (1000, 64)])
def test_dim_snap_to_its_sizes(v, want):
    assert kl.Dim(sizes=[8, 16, 64]).snap(v) == want


def test_dim_snap_to_its_range():
    d = kl.Dim(4, 100)
    assert (d.snap(-5), d.snap(4), d.snap(50), d.snap(101)) == (4, 4, 50, 100)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=6), st.integers(-10, 400))
def test_dim_snap_is_a_size_it_takes_never_above_the_target_unless_none_is(sizes, target):
    d = kl.Dim(sizes=sizes)
    s = d.snap(target)
    assert d.allows(s)
    below = [x for x in sizes if x <= target]
    assert s == (max(below) if below else min(sizes))


# ---------------------------------------------------------------------------- Tensor
def test_tensor_normalises_dtype_values_layouts_and_range():
    t = kl.Tensor("M N", dtype=[torch.float16, "float32"], values="ties", layouts=["sliced"], range=[0, 1])
    assert (t.dtype, t.values, t.layouts, t.range) == (("float16", "float32"), ("ties",), ("sliced",), (0, 1))
    assert type(t.values[0]) is Values and t.symbols == ("M", "N") and kl.Tensor("").symbols == ()
    assert kl.Tensor("N").dtypes == () and kl.Tensor("N", dtype=torch.bool).dtypes == ("bool",)


def test_value_kinds_by_declaration_dtype_and_range():
    assert kl.Tensor("N", values=[]).value_kinds("float32", None) == ()
    assert kl.Tensor("N", values=["ones"]).value_kinds("float32", "ignore") == ("ones",)
    assert kl.Tensor("N").value_kinds("bfloat16", None) == f.DEFAULT_FLOAT_VALUES
    assert kl.Tensor("N").value_kinds("float32", "propagate") == f.DEFAULT_FLOAT_VALUES + (Values.NONFINITE,)
    assert kl.Tensor("N", range=(0, 9)).value_kinds("int32", None) == (Values.LENGTHS, Values.IDS)
    assert kl.Tensor("N", range=(0, 1)).value_kinds("bool", None) == ()
    assert kl.Tensor("N").value_kinds("int64", "raise") == ()


@pytest.mark.parametrize("shape,want", [
    ("", ()),
    ("N", ("every_other", "offset", "shifted")),
    ("M N", ("sliced", "every_other", "transposed", "offset", "shifted", "broadcast")),
    ("A B C", ("sliced", "every_other", "transposed", "offset", "shifted", "broadcast")),
    ("A B C D", tuple(Layout)),
    ("A B C D E", tuple(x for x in Layout if x != "channels_last")),
])
def test_layouts_by_rank(shape, want):
    assert kl.Tensor(shape).layout_list() == want


def test_declared_layouts_are_kept_where_the_rank_allows():
    assert kl.Tensor("N", layouts=["transposed", "offset"]).layout_list() == ("offset",)
    assert kl.Tensor("M N", layouts=[]).layout_list() == ()


def test_value_kinds_leave_out_the_upstream_only_kinds():
    assert "sparse" not in f.VALUE_KINDS and "scaled" not in f.VALUE_KINDS and "ones" in f.VALUE_KINDS


# ---------------------------------------------------------------------------- Config
def test_config_is_its_dict_with_a_tolerance():
    c = kl.Config({"precise": False}, tolerance={"float32": (1e-3, 1e-5)})
    assert c == {"precise": False} and dict(c) == {"precise": False} and c.tolerance == {"float32": (1e-3, 1e-5)}
    assert repr(c) == "kl.Config({'precise': False}, tolerance={'float32': (0.001, 1e-05)})"
    assert repr(kl.Config(values={"a": 1})) == "kl.Config({'a': 1})"
    back = pickle.loads(pickle.dumps(c))
    assert type(back) is kl.Config and back == c and back.tolerance == c.tolerance


def test_config_keeps_a_values_that_is_not_a_dict_for_the_validator():
    c = kl.Config([1, 2])
    assert c == {} and c._given == [1, 2] and c.tolerance is None


@pytest.mark.parametrize("call,where,words", [
    (lambda: kl.Config(), "kl.Config.values", "needs values"),
    (lambda: kl.Config({}, tolerance=None, extra=1), "kl.Config.extra", "has no field 'extra'"),
    (lambda: kl.Config({}, None, 3), "kl.Config", "at most 2 positional"),
    (lambda: kl.Config({}, tolerence=(1, 1)), "kl.Config.tolerence", "did you mean 'tolerance'?"),
])
def test_config_refuses_its_arguments_as_every_class_does(call, where, words):
    with pytest.raises(kl.SpecError) as e:
        call()
    assert e.value.where == where and words in e.value.fix, str(e.value)


# ---------------------------------------------------------------------------- a declared write at a point
def _point(**config):
    return Point("t", 1, (("N", 4),), config=tuple(config.items()))


@pytest.mark.parametrize("cond,config,want", [
    (True, {}, True), (False, {}, False), ("backward", {}, "backward"), ("gradient", {}, "gradient"),
    ({"in_place": True}, {"in_place": True}, True), ({"in_place": True}, {}, False),
    ({"in_place": True}, {"in_place": False}, False), ({"a": 1, "b": 2}, {"a": 1}, False),
    ({"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}, True),
    (lambda p: "backward", {}, "backward"), (lambda p: "gradient", {}, "gradient"), (lambda p: "yes", {}, True),
    (lambda p: 0, {}, False), (lambda p: None, {}, False), (lambda p: p.kwargs.get("k", False), {"k": 1}, True),
])
def test_declared_at(cond, config, want):
    got = f.declared_at(cond, _point(**config))
    assert got == want and type(got) is type(want)


def test_derived_names():
    assert f.grad_name("w") == "grad of w" and f.upstream_name("y") == "upstream y"


def test_default_tolerances_cover_every_float_dtype_and_nothing_else():
    assert set(f.DEFAULT_TOLERANCES) == set(f.FLOAT_DTYPES)
    assert tuple(d for d in f.DTYPES if d.startswith(("float", "bfloat"))) == f.FLOAT_DTYPES
