"""gen/gaps/common.py: the dtype rows, the base shapes under a budget, configs as calls."""
from hypothesis import given, settings, strategies as st

import kladder as kl
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET, Budget, fits, moderate
from kladder.gen.gaps import common


def kernel(x, w, BLOCK=64, precise=True):
    return x


def reference(x, w):
    return x


def spec(configs=(), n=None, m=None, **over):
    return kl.Spec("rms", kernel, reference,
                   args={"x": kl.Tensor("M N", dtype=["float32", "float16", "bfloat16"]), "w": kl.Tensor("N", dtype=["float32", "float16"])},
                   returns=kl.Tensor("M N", like="x"),
                   dims={"M": m or kl.Dim(1, 4096), "N": n or kl.Dim(1, 8192, tile=64, widths=[4096])},
                   configs=list(configs), **over)


# ---------------------------------------------------------------------------- dtypes
def test_dtype_factors_name_each_tensor_with_a_choice_and_skip_a_like_one():
    assert common.dtype_factors(spec()) == [("dtype:x", ["float32", "float16", "bfloat16"]), ("dtype:w", ["float32", "float16"])]


def test_dtype_rows_take_each_choice_once_cycling_the_shorter_lists():
    assert common.dtype_rows(spec()) == [{"x": "float32", "w": "float32"}, {"x": "float16", "w": "float16"},
                                         {"x": "bfloat16", "w": "float32"}]


def test_one_dtype_everywhere_is_one_empty_row():
    s = kl.Spec("one", kernel, reference, args={"x": kl.Tensor("N", dtype="float32"), "w": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
    assert common.dtype_rows(s) == [{}] and common.chosen_dtypes(s, {}) == ()


def test_chosen_dtypes_fill_the_unchosen_with_their_first():
    assert common.chosen_dtypes(spec(), {"w": "float16"}) == (("x", "float32"), ("w", "float16"))


# ---------------------------------------------------------------------------- base shapes
def test_base_shapes_are_two_tiles_plus_a_tail_then_two_whole_tiles():
    assert common.base_shapes(spec(), moderate(CPU_BUDGET)) == [{"M": 17, "N": 129}, {"M": 16, "N": 128}]


def test_chunks_count_as_tiles_and_the_largest_unit_wins():
    s = spec(n=kl.Dim(1, 8192, tile=[32, 64], chunks=[256]))
    assert common.base_shapes(s, moderate(CPU_BUDGET))[0]["N"] == 513


def test_the_untiled_dims_shrink_first_when_the_shape_does_not_fit():
    got = common.base_shapes(spec(), Budget(129 * 4, 4096, "cpu"))
    assert got == [{"M": 1, "N": 129}, {"M": 1, "N": 128}]


def test_then_the_tiled_dims_shrink_to_one_tile_and_its_tail():
    assert common.base_shapes(spec(), Budget(70, 4096, "cpu")) == [{"M": 1, "N": 65}, {"M": 1, "N": 64}]


def test_the_output_rows_count_against_the_budget_too():
    assert common.base_shapes(spec(), Budget(1 << 20, 4, "cpu"))[0] == {"M": 1, "N": 129}


def test_when_nothing_fits_each_dim_is_at_its_least():
    s = spec(m=kl.Dim(3, 64))
    assert common.base_shapes(s, Budget(10, 4096, "cpu")) == [{"M": 3, "N": 1}]


def test_a_dim_with_declared_sizes_is_snapped_down_to_one_of_them():
    s = spec(m=kl.Dim(sizes=[8, 16, 64]))
    assert common.base_shapes(s, moderate(CPU_BUDGET)) == [{"M": 16, "N": 129}, {"M": 16, "N": 128}]    # 17 snaps to 16


def test_a_dim_s_range_caps_the_tail():
    s = spec(n=kl.Dim(1, 100, tile=64))
    assert common.base_shapes(s, moderate(CPU_BUDGET)) == [{"M": 17, "N": 100}, {"M": 16, "N": 100}]


# ---------------------------------------------------------------------------- configs
def test_config_text_and_sizes_text():
    assert common.config_text((("BLOCK", 64), ("num_warps", 4))) == "config BLOCK=64, num_warps=4"
    assert common.config_text(()) == common.OWN_CONFIG and common.config_text((), "none") == "none"
    assert common.sizes_text({"M": 1, "N": 2}) == "M=1, N=2"


def test_resolved_puts_the_config_over_the_launcher_defaults_of_the_config_keys_only():
    s = spec(configs=[{"BLOCK": 128}])
    defaults = {"BLOCK": 64, "precise": True}
    assert common.resolved(s, (), defaults) == (("BLOCK", "64"),)
    assert common.resolved(s, (("BLOCK", 128),), defaults) == (("BLOCK", "128"),)
    assert common.resolved(s, (("BLOCK", 64),), defaults) == common.resolved(s, (), defaults)
    assert common.resolved(s, (("other", 1),), {}) == (("other", "1"),)      # a key without a default stays out of ()


def _values_point(name, kind_, config=(), mode="eager"):
    return Point("rms", 2, (("M", 17), ("N", 129)), (), f"{name} {kind_}", kind="values", mode=mode,
                 values=((name, kind_),), config=config)


def test_each_config_copies_each_input_s_first_point_for_every_config_that_is_another_call():
    s = spec(configs=[{"BLOCK": 64}, {"BLOCK": 128}, {"BLOCK": 128, "precise": True}, {"precise": False}])
    pts = [_values_point("x", "ties"), _values_point("x", "tiny"), _values_point("w", "ties"),
           _values_point("w", "huge", mode="reused")]
    got = list(common.each_config(s, pts, "values"))
    # BLOCK=64 is the launcher's own call; BLOCK=128 and BLOCK=128+precise=True (the default) are one call
    assert [(p.values, p.config) for p in got] == [
        ((("x", "ties"),), (("BLOCK", 128),)), ((("w", "ties"),), (("BLOCK", 128),)),
        ((("x", "ties"),), (("precise", False),)), ((("w", "ties"),), (("precise", False),))]
    assert got[0].why == "x ties; config BLOCK=128"


def test_each_config_skips_points_of_another_kind_another_mode_or_with_a_config():
    s = spec(configs=[{"BLOCK": 128}])
    pts = [_values_point("x", "ties", mode="reused"), _values_point("x", "ties", config=(("BLOCK", 32),)),
           Point("rms", 2, (("M", 1), ("N", 1)), (), "chunk", kind="chunk", values=(("x", "lengths"),))]
    assert list(common.each_config(s, pts, "values")) == []


@settings(max_examples=50, deadline=None)
@given(elements=st.integers(1, 1 << 16), rows=st.integers(1, 64), tile=st.sampled_from([None, 16, 64, 128]),
       lo=st.integers(1, 4))
def test_every_base_shape_fits_its_budget_unless_none_can(elements, rows, tile, lo):
    s = spec(m=kl.Dim(lo, 4096), n=kl.Dim(1, 8192, tile=tile))
    b = Budget(elements, rows, "cpu")
    shapes = common.base_shapes(s, b)
    assert 1 <= len(shapes) <= 2 and len({tuple(sh.items()) for sh in shapes}) == len(shapes)
    if shapes == [{"M": lo, "N": 1}]:
        return                                           # the last resort: each dim at its least
    assert all(fits(s, sh, b) for sh in shapes)
    unit = tile or 8
    if shapes[0]["N"] not in (2 * unit + 1, unit + 1, 1):   # a tail in N where it has room; else
        # no tail fits even with M at its least (Hypothesis found elements=48, M >= 3, tile 16:
        # 3 x 17 > 48): the full-tile shape stands alone
        assert shapes == [{"M": lo, "N": unit}] and not fits(s, {"M": lo, "N": unit + 1}, b), shapes
