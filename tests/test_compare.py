"""Comparison: contract first, NaN-aware values, scaled tolerances, located patterns."""
import torch

from kladder.compare import Where, check_contract, check_guards, compare_values, describe_pattern
from kladder.spec import DEFAULT_TOLERANCES, Tolerance

BF16 = DEFAULT_TOLERANCES["bfloat16"]


def ref_and_out(shape=(4, 37), dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(0)
    r = torch.randn(shape, generator=g, dtype=torch.float64)
    return r, r.to(dtype)


def test_rounding_to_the_output_dtype_passes():
    r, o = ref_and_out()
    assert compare_values("y", o, r, BF16, Where(("M", "N")), "bf16") is None


def test_small_reference_elements_are_held_to_the_row_scale():
    # an element near zero with an absolute error at the row's rounding noise is fine
    r, o = ref_and_out()
    r[0, 3] = 1e-9
    o = r.to(torch.bfloat16).clone()
    o[0, 3] = 2e-3
    assert compare_values("y", o, r, BF16, Where(("M", "N")), "bf16") is None


def test_nan_fails_whatever_the_tolerance():
    r, o = ref_and_out()
    o[1, 2] = float("nan")
    f = compare_values("y", o, r, Tolerance(1e9, 1e9), Where(("M", "N")), "bf16")
    assert f is not None and f.mismatched == 1 and f.extra["nonfinite"] == 1
    assert f.index == (1, 2)
    assert "Mismatched elements: 1 / 148" in f.message


def test_infinities_of_different_sign_fail_and_equal_ones_pass():
    r = torch.tensor([float("inf"), float("-inf"), 1.0], dtype=torch.float64)
    assert compare_values("y", r.clone(), r, BF16, Where(("N",)), "") is None
    o = r.clone()
    o[0] = float("-inf")
    assert compare_values("y", o, r, BF16, Where(("N",)), "").mismatched == 1


def test_nan_in_both_is_a_match():
    r = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
    assert compare_values("y", r.clone(), r, BF16, Where(("N",)), "") is None


def test_integer_outputs_are_exact():
    r = torch.arange(10)
    o = r.clone()
    o[9] = 0
    f = compare_values("idx", o, r, Tolerance(1, 1), Where(("N",)), "")
    assert f.mismatched == 1 and "the last element" in f.pattern


def test_pattern_last_columns_names_the_tile_tail():
    bad = torch.zeros(6, 2881, dtype=torch.bool)
    bad[:, -1] = True
    assert describe_pattern(bad, Where(("M", "N"), {"N": (8,)})) == "the last column (N % 8 = 1) of every row"
    bad = torch.zeros(6, 4095, dtype=torch.bool)
    bad[:, -7:] = True
    assert describe_pattern(bad, Where(("M", "N"), {"N": (8,)})) == "the last 7 columns (N % 8 = 7) of every row"


def test_pattern_rows_and_scattered():
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[0:202] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "rows 0..201 (whole rows)"
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[100:] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "every row from 100 on (rows 100..299) (whole rows)"
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[5, 3] = bad[200, 9] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "scattered, 2 of 4,800 elements (first at (5, 3))"
    bad = torch.zeros(4, 128, dtype=torch.bool)
    bad[:, 64:] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "the last 64 columns of every row"
    assert describe_pattern(torch.ones(3, 3, dtype=torch.bool), Where()) == "every element"


def test_pattern_uses_original_row_ids_when_rows_were_sampled():
    bad = torch.zeros(5, 8, dtype=torch.bool)
    bad[2:] = True
    where = Where(("M", "N"), {}, {0: [0, 1, 14130, 14131, 14133]})
    assert describe_pattern(bad, where) == "rows 14130..14133 (whole rows)"


def test_contract_checks_dtype_shape_device_before_values():
    o = torch.zeros(4, 8, dtype=torch.float32)
    f = check_contract("y", o, (4, 8), "bfloat16", "cpu")
    assert f.check == "contract" and "dtype float32 where bfloat16 was expected" in f.message
    f = check_contract("y", o, (4, 9), "float32", "cpu")
    assert "shape (4, 8) where (4, 9)" in f.message
    assert check_contract("y", o, (4, 8), "float32", "cpu") is None
    assert "not a tensor" in check_contract("y", None, (4, 8), "float32", "cpu").message


def test_guard_finding_locates_the_overrun_in_elements():
    f = check_guards("out", [], [0, 1, 2, 3, 4, 5, 6, 7], 4)
    assert f.check == "guard" and "elements 0..1 past the last" in f.message
    assert check_guards("out", [], [], 4) is None
    assert "before the start" in check_guards("out", [3], [], 4).message
