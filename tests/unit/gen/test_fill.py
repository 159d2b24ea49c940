"""gen/fill.py: the rung-2 value kinds written into a tensor, a declared range's problems,
the layouts' (size, stride, offset, storage length) and the padding bytes."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from kladder.core.notation import Padding, ValueKind
from kladder.gen import fill
from kladder.gen.fill import (contiguous_strides, fill_kind, fill_normal, filled, huge_value, layout_plan, pad_bytes,
                              range_problem, tiny_values)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def kind(t, k, dtype="float32", rng=None, chunks=(), seed=0):
    fill_kind(t, k, dtype, gen(seed), rng, chunks)
    return t


# ---------------------------------------------------------------------------- kl.filled
def test_filled_is_seeded_the_same_without_a_generator_and_differs_with_another_seed():
    a, b = filled((3, 5), "normal"), filled((3, 5), "normal")
    assert torch.equal(a, b) and a.dtype == torch.float32 and a.shape == (3, 5)
    c = filled((3, 5), "normal", generator=gen(1))
    assert not torch.equal(a, c)


def test_filled_writes_a_non_contiguous_tensor_in_place_with_the_contiguous_values():
    base = torch.zeros(5, 3)
    view = base.t()                                   # (3, 5), not contiguous
    got = filled(view, "identical", generator=gen(2))
    assert got is view
    dense = filled((3, 5), "identical", generator=gen(2))
    assert torch.equal(view, dense)
    assert torch.equal(view[0], view[2])              # identical rows survived the copy


def test_filled_takes_a_torch_dtype_and_a_name_alike():
    assert filled((2, 2), "ones", dtype=torch.bfloat16).dtype == torch.bfloat16
    assert filled((2, 2), "ones", dtype="float16").dtype == torch.float16


@pytest.mark.parametrize("target", [(2, -1), (2.0, 3), "3x4", 7])
def test_filled_refuses_a_target_that_is_no_shape_and_names_it(target):
    with pytest.raises(ValueError, match=r"kl.filled: target .*give a shape"):
        filled(target)


@pytest.mark.parametrize("rng,dtype,says", [
    ((0.5, 3.7), "int32", r"range \(0.5, 3.7\) for int32: .*whole numbers, inclusive: \(1, 3\)"),
    ((3, 1), "float32", r"range \(3, 1\): the low bound is above the high one"),
    (("a", 2), "float32", r"range \('a', 2\): give \(lo, hi\), two numbers"),
    ((1,), "int64", r"range \(1,\): give \(lo, hi\)"),
])
def test_filled_refuses_a_range_that_cannot_be_kept_and_names_it(rng, dtype, says):
    with pytest.raises(ValueError, match=rf"kl.filled: {says}"):
        filled((4,), "normal", dtype=dtype, range=rng)


def test_filled_keeps_a_whole_integer_range_and_a_float_one():
    assert set(filled((256,), "normal", dtype="int32", range=(1.0, 3)).tolist()) <= {1, 2, 3}
    x = filled((256,), "normal", dtype="float32", range=(0.25, 0.5))
    assert float(x.min()) >= 0.25 and float(x.max()) <= 0.5


def test_filled_refuses_an_unknown_dtype_and_names_it():
    with pytest.raises(ValueError, match=r"dtype 'float33'.*give a dtype name"):
        filled((2,), dtype="float33")


@pytest.mark.parametrize("k", ["sparse", "scaled"])
def test_filled_refuses_the_upstream_only_kinds(k):
    with pytest.raises(ValueError, match=rf"value kind '{k}' is not one of .*peaked"):
        filled((2, 2), k)


def test_filled_refuses_an_unknown_kind_with_the_parser_s_words():
    with pytest.raises(ValueError, match=r"^kl.filled: "):
        filled((2, 2), "peaky")


def test_filled_an_empty_shape_is_fine():
    assert filled((0, 4), "ties").shape == (0, 4)


# ---------------------------------------------------------------------------- fill_kind, kind by kind
def test_peaked_is_the_same_normal_draw_times_its_temperature():
    plain = torch.empty(4, 8)
    fill_normal(plain, "float32", gen(5))
    assert torch.equal(kind(torch.empty(4, 8), "peaked/30", seed=5), plain * 30)
    assert torch.equal(kind(torch.empty(4, 8), "peaked", seed=5), plain * 10)      # the default temperature


@pytest.mark.parametrize("dtype,ints", [("float32", torch.int32), ("float16", torch.int16), ("bfloat16", torch.int16)])
def test_ties_are_within_three_ulps_of_one_base_per_row_and_never_zero(dtype, ints):
    t = kind(torch.empty(6, 32, dtype=getattr(torch, dtype)), "ties", dtype)
    bits = t.view(ints).long()
    spread = bits.max(1).values - bits.min(1).values
    assert (spread <= 3).all() and (spread >= 1).all()      # 32 draws of 0..3: every row has two values
    assert (t != 0).all()


def test_identical_rows_are_one_row_repeated():
    t = kind(torch.empty(2, 3, 4), "identical")
    rows = t.reshape(-1, 4)
    assert torch.equal(rows, rows[:1].expand_as(rows)) and rows[0].unique().numel() == 4


def test_distinct_runs_one_to_four_with_alternating_signs_along_the_row():
    t = kind(torch.empty(2, 5), "distinct")
    assert t[0].tolist() == [1.0, -1.75, 2.5, -3.25, 4.0] and torch.equal(t[0], t[1])
    assert kind(torch.empty(3, 1), "distinct").flatten().tolist() == [1.0, 1.0, 1.0]   # one column: no division by 0


def test_tiny_values_of_float32_are_the_subnormals_the_smallest_normal_and_signed_zeros():
    vals = tiny_values("float32")
    assert vals[0] == 2.0 ** -149 and vals[3] == 2.0 ** -126 and vals[5] == 0.0
    assert math.copysign(1, vals[6]) == -1.0
    t = kind(torch.empty(64, 64), "tiny")
    hit = torch.isin(t, torch.tensor(vals, dtype=torch.float32))
    assert 0.15 < hit.float().mean() < 0.35                      # about a quarter


def test_huge_values_are_a_quarter_of_the_elements_at_the_row_s_limit():
    t = kind(torch.empty(64, 128), "huge")
    big = huge_value("float32", 128, None)
    assert big == pytest.approx(math.sqrt(torch.finfo(torch.float32).max / 128) / 2)
    assert t.abs().max() == pytest.approx(big, rel=1e-6)
    share = (t.abs() >= 0.6 * big).float().mean()
    assert 0.15 < share < 0.35
    assert torch.isfinite((t.double() ** 2).sum(1).float()).all()      # squares summed still fit float32


def test_huge_value_is_capped_by_the_dtype_and_by_the_range():
    assert huge_value("float16", 4, None) == 65504 / 2
    assert huge_value("float32", 4, (-3, 8)) == 4.0


def test_nonfinite_puts_nan_inf_minus_inf_in_every_fourth_row_in_turn():
    t = kind(torch.empty(12, 5), "nonfinite")
    bad = ~torch.isfinite(t)
    assert bad.sum(1).tolist() == [1, 0, 0, 0] * 3
    assert torch.isnan(t[0]).any() and (t[4] == math.inf).any() and (t[8] == -math.inf).any()


def test_masked_rows_are_minus_inf_for_floats_and_zero_for_ints():
    t = kind(torch.empty(6, 3), "masked")
    assert (t[0] == -math.inf).all() and (t[4] == -math.inf).all() and torch.isfinite(t[1:4]).all()
    i = kind(torch.empty(5, 3, dtype=torch.int32), "masked", "int32")
    assert (i[0] == 0).all() and (i[4] == 0).all()


def test_ones_and_an_empty_tensor():
    assert (kind(torch.empty(3, 3), "ones") == 1).all()
    kind(torch.empty(0, 3), "ties")                     # nothing to write, nothing raised


def test_an_integer_input_without_ids_gets_small_signed_ints_bools_bits_and_uint8_bytes():
    i = kind(torch.empty(4096, dtype=torch.int32), "peaked/10", "int32")
    assert i.min() == -64 and i.max() == 63
    b = kind(torch.empty(256, dtype=torch.bool), "normal", "bool")
    assert set(b.tolist()) == {False, True}
    u = kind(torch.empty(4096, dtype=torch.uint8), "ties", "uint8")
    assert u.min() == 0 and u.max() == 255


def test_lengths_hold_every_edge_first_and_only_edges():
    t = kind(torch.empty(64, dtype=torch.int64), "lengths", "int64", rng=(1, 64), chunks=(16,))
    edges = [1, 2, 15, 16, 17, 63, 64]
    assert t[:7].tolist() == edges and set(t.tolist()) == set(edges)


def test_lengths_keep_inside_a_narrow_range_and_drop_chunk_edges_outside_it():
    t = kind(torch.empty(10, dtype=torch.int32), "lengths", "int32", rng=(4, 5), chunks=(16,))
    assert set(t.tolist()) == {4, 5}
    short = kind(torch.empty(2, dtype=torch.int32), "lengths", "int32", rng=(1, 64))
    assert short.tolist() == [1, 2]                     # fewer elements than edges: the first edges


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError):
        kind(torch.empty(2, 2), "peaky")


def test_the_same_generator_seed_gives_the_same_values_for_every_kind():
    for k in ("ties", "tiny", "huge", "nonfinite", "peaked/3"):
        a, b = kind(torch.empty(8, 8), k, seed=3), kind(torch.empty(8, 8), k, seed=3)
        assert torch.equal(a.nan_to_num(), b.nan_to_num()), k


# ---------------------------------------------------------------------------- a declared range
def test_range_problem_names_each_impossible_kind():
    assert range_problem("tiny", "float32", None) is None            # nothing constrains it
    assert range_problem("tiny", "int32", (1, 2)) is None            # not a float
    assert range_problem("normal", "float32", (3, 2)) == "no_value"
    assert range_problem("normal", "float16", (1.0001, 1.0002)) == "no_value"   # no float16 between them
    assert range_problem("tiny", "float32", (1, 2)) == "no_tiny"
    assert range_problem("tiny", "float32", (-1, 1)) is None
    assert range_problem("ones", "float32", (2, 3)) == "no_one"
    assert range_problem(ValueKind("ones"), "float32", (0, 1)) is None
    assert range_problem("nonfinite", "float32", (3, 2)) is None       # the NaN policy's, not the range's


@settings(max_examples=50, deadline=None)
@given(lo=st.floats(-1e4, 1e4), width=st.floats(1e-2, 1e4),
       k=st.sampled_from(["normal", "peaked/10", "ties", "identical", "distinct", "huge", "ones"]))
def test_every_kind_drawn_in_a_range_stays_in_it(lo, width, k):
    hi = lo + width
    if k == "ones" and not lo <= 1 <= hi:
        return
    t = kind(torch.empty(3, 17), k, rng=(lo, hi))
    assert t.min() >= lo and t.max() <= hi and torch.isfinite(t).all()


def test_in_a_range_peaked_leans_to_lo_and_distinct_spans_it():
    t = kind(torch.empty(64, 64), "peaked/30", rng=(0, 100))
    assert t.median() < 1 and t.max() > 50
    d = kind(torch.empty(1, 5), "distinct", rng=(0, 8))
    assert d[0].tolist() == [5.0, 2.25, 6.5, 0.75, 8.0]                # 1..4, signs alternating, mapped onto [0, 8]


def test_in_a_range_tiny_uses_only_the_tiny_values_inside_it():
    t = kind(torch.empty(64, 64), "tiny", rng=(0, 1))
    small = t[t < 1e-30]
    assert small.numel() > 0 and (small >= 0).all()        # -0.0 compares equal to 0; no negative subnormal
    assert not (t == -tiny_values("float32")[0]).any()


def test_a_range_without_a_value_of_the_dtype_raises():
    with pytest.raises(ValueError, match="no float16 value lies in the range"):
        kind(torch.empty(2, 2, dtype=torch.float16), "peaked/10", "float16", rng=(1.0001, 1.0002))
    with pytest.raises(ValueError, match="no float16 value lies in the range"):
        fill_normal(torch.empty(2, dtype=torch.float16), "float16", gen(), (1.0001, 1.0002))


def test_an_integer_range_is_inclusive_at_both_ends():
    t = torch.empty(2000, dtype=torch.int64)
    fill_normal(t, "int64", gen(), (3, 5))
    assert set(t.tolist()) == {3, 4, 5}


# ---------------------------------------------------------------------------- layouts
def test_contiguous_strides_count_a_zero_dim_as_one():
    assert contiguous_strides((2, 3, 4)) == [12, 4, 1]
    assert contiguous_strides((2, 0, 4)) == [4, 4, 1]
    assert contiguous_strides(()) == []


@pytest.mark.parametrize("layout,stride,offset,length", [
    ("contiguous", (12, 4, 1), 0, 24),
    ("", (12, 4, 1), 0, 24),
    ("sliced", (60, 20, 1), 0, 104),                      # a row of 4 + SLICE_PAD 16
    ("every_other", (24, 8, 2), 0, 47),
    ("transposed", (12, 1, 3), 0, 24),
    ("offset", (12, 4, 1), 64, 88),
    ("shifted", (12, 4, 1), 1, 25),
    ("broadcast", (0, 4, 1), 0, 12),
])
def test_layout_plan_of_a_2x3x4_tensor(layout, stride, offset, length):
    size, got_stride, got_offset, got_length = layout_plan((2, 3, 4), layout)
    assert (size, got_stride, got_offset, got_length) == ((2, 3, 4), stride, offset, length)
    view = torch.as_strided(torch.arange(length), size, got_stride, got_offset)   # reaches the storage's last element
    assert int(view.max()) == length - 1 or layout == "broadcast"


def test_channels_last_plan_matches_torch_s_own():
    x = torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)
    assert layout_plan((2, 3, 4, 5), "channels_last")[1] == x.stride()


def test_an_empty_tensor_s_storage_is_its_offset_alone():
    assert layout_plan((0, 4), "offset")[3] == fill.OFFSET
    assert layout_plan((3, 0), "contiguous")[3] == 0


def test_an_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="unknown layout 'diagonal'"):
        layout_plan((2, 2), "diagonal")


@settings(max_examples=50, deadline=None)
@given(shape=st.lists(st.integers(1, 6), min_size=2, max_size=3),
       layout=st.sampled_from(["contiguous", "sliced", "every_other", "transposed", "offset", "shifted"]))
def test_every_element_of_a_planned_view_is_its_own_storage_element_inside_the_length(shape, layout):
    size, stride, offset, length = layout_plan(tuple(shape), layout)
    view = torch.as_strided(torch.arange(length), size, stride, offset)
    assert view.unique().numel() == view.numel() and int(view.max()) == length - 1


# ---------------------------------------------------------------------------- padding
def test_pad_bytes_one_byte_a_pattern_and_random():
    assert pad_bytes(4, Padding("0xFF"), gen(), "cpu").tolist() == [255] * 4
    assert pad_bytes(3, Padding("0x80"), gen(), "cpu").tolist() == [128] * 3
    pattern = pad_bytes(300, Padding("bytes"), gen(), "cpu")
    assert pattern[250] == 250 and pattern[251] == 0 and pattern.dtype == torch.uint8
    r = pad_bytes(4096, Padding("random"), gen(), "cpu")
    assert r.unique().numel() > 200 and torch.equal(r, pad_bytes(4096, Padding("random"), gen(), "cpu"))
