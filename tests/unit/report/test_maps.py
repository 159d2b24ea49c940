"""report/maps.py: the error map's cells (fold, each pattern kind, what is left undrawn), its
ticks, the size cliffs' marks, the density's fit, and a user's title drawn literally. The PNG
drawing itself (matplotlib) is tests/test_html.py's; nothing here draws."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.report.maps import (
    MAX_COLS,
    MAX_ROWS,
    OK,
    SOME,
    WRONG,
    _flat_row,
    _plain,
    _row_ranges,
    _ticks,
    cliff_marks,
    density,
    error_map,
    grid,
    rate_curve,
)


def _wrong(cells) -> set[tuple[int, int]]:
    return {(r, c) for r, row in enumerate(cells) for c, v in enumerate(row) if v == WRONG}


# ---------------------------------------------------------------------------- rows and indices
def test_row_ranges_of_each_form():
    assert _row_ranges(None, 5) == [(0, 4)]
    assert _row_ranges(["every"], 5) == [(0, 4)]
    assert _row_ranges(["one", 3], 5) == [(3, 3)]
    assert _row_ranges(["from", 2, 4], 5) == [(2, 4)]
    assert _row_ranges(["range", 1, 2], 5) == [(1, 2)]
    assert _row_ranges(["runs", [[0, 1], [3, 3]]], 5) == [(0, 1), (3, 3)]
    assert _row_ranges(["unknown"], 5) == []


def test_flat_row_flattens_every_dim_but_the_last():
    assert _flat_row([2, 5], [4, 7]) == 2
    assert _flat_row([1, 2, 5], [3, 4, 7]) == 1 * 4 + 2
    assert _flat_row([6], [7]) == 0
    with pytest.raises(ValueError):
        _flat_row([1, 2, 3], [4, 7])                  # an index of another rank is refused, not misplaced


# ---------------------------------------------------------------------------- grid
def test_grid_of_a_small_output_is_not_folded():
    cells, fold, n_rows, n_cols, unlocated = grid({"kind": "every"}, [3, 4])
    assert fold == (1, 1) and (n_rows, n_cols) == (3, 4) and unlocated == {}
    assert cells == [[WRONG] * 4] * 3


def test_grid_folds_exactly_at_the_limits():
    _, fold, *_ = grid({"kind": "single"}, [MAX_ROWS, MAX_COLS])
    assert fold == (1, 1)
    cells, fold, *_ = grid({"kind": "single"}, [MAX_ROWS + 1, MAX_COLS + 1])
    assert fold == (2, 2) and len(cells) == (MAX_ROWS + 2) // 2 and len(cells[0]) == (MAX_COLS + 2) // 2


def test_grid_of_a_vector_and_of_a_scalar():
    cells, fold, n_rows, n_cols, _ = grid({"kind": "elements", "cols": {"first": 5, "last": 6, "n": 7}}, [7])
    assert (n_rows, n_cols, fold) == (1, 7, (1, 1)) and cells == [[OK] * 5 + [WRONG] * 2]
    cells, _, n_rows, n_cols, _ = grid({"kind": "every"}, [])
    assert (n_rows, n_cols) == (1, 1) and cells == [[WRONG]]


def test_grid_of_an_empty_output_draws_one_cell_and_does_not_divide_by_zero():
    cells, fold, n_rows, n_cols, _ = grid({"kind": "every"}, [0, 7])
    assert (n_rows, n_cols) == (1, 7) and fold == (1, 1) and len(cells) == 1


def test_grid_of_a_block_marks_its_columns_in_its_rows():
    where = {"kind": "block", "rows": ["range", 1, 2], "cols": {"first": 6, "last": 6, "n": 7}}
    cells, *_ = grid(where, [4, 7])
    assert _wrong(cells) == {(1, 6), (2, 6)}
    whole = {"kind": "block", "rows": ["one", 3]}              # no cols: whole rows
    cells, *_ = grid(whole, [4, 7])
    assert _wrong(cells) == {(3, c) for c in range(7)}


def test_grid_of_runs_marks_rows_partly_and_the_sample_wholly():
    where = {"kind": "runs", "rows": ["runs", [[0, 1]]], "sample": [[1, 3], [9, 9, 9]]}   # a sample of another rank is dropped
    cells, *_ = grid(where, [3, 5])
    assert cells == [[SOME] * 5, [SOME, SOME, SOME, WRONG, SOME], [OK] * 5]


def test_grid_of_whole_rows_counts_the_rows_it_cannot_place():
    where = {"kind": "whole_rows", "ids": [0], "n_bad": 4, "sample": [[2, 0]]}
    cells, *_, unlocated = grid(where, [4, 3])
    assert _wrong(cells) == {(0, c) for c in range(3)} | {(2, c) for c in range(3)}
    assert unlocated == {"rows_not_located": 2}


def test_grid_of_scattered_draws_the_first_and_the_sample_and_says_how_many_are_left():
    where = {"kind": "scattered", "n_bad": 10, "first": [0, 1], "sample": [[0, 1], [3, 4]]}
    cells, *_, unlocated = grid(where, [4, 5])
    assert _wrong(cells) == {(0, 1), (3, 4)}
    assert unlocated == {"elements_not_located": 8, "elements_drawn": 2}
    few = {"kind": "scattered", "n_bad": 1, "first": [0, 1], "sample": [[0, 1], [3, 4]]}
    assert grid(few, [4, 5])[4]["elements_not_located"] == 0          # never negative


def test_grid_marks_a_folded_cell_wrong_when_any_of_its_elements_is():
    where = {"kind": "elements", "cols": {"first": 1000, "last": 1000, "n": 1001}}
    cells, (fr, fc), *_ = grid(where, [1001])
    assert fc == 4 and _wrong(cells) == {(0, 1000 // 4)}


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 2000), cols=st.integers(1, 5000))
def test_grid_never_exceeds_the_limits_and_covers_the_output(rows, cols):
    cells, (fr, fc), n_rows, n_cols, _ = grid({"kind": "every"}, [rows, cols])
    assert len(cells) <= MAX_ROWS and len(cells[0]) <= MAX_COLS
    assert len(cells) * fr >= n_rows > (len(cells) - 1) * fr
    assert len(cells[0]) * fc >= n_cols > (len(cells[0]) - 1) * fc
    assert all(v == WRONG for row in cells for v in row)


# ---------------------------------------------------------------------------- ticks
def test_ticks_of_small_and_large_axes():
    assert _ticks(1) == [0]
    assert _ticks(8) == list(range(8))
    assert _ticks(9) == [0, 2, 4, 6, 8]
    assert _ticks(100) == [0, 20, 40, 60, 80]
    assert _ticks(4096) == [0, 1000, 2000, 3000, 4000]


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 10**9))
def test_ticks_are_few_even_and_inside_the_axis(n):
    t = _ticks(n)
    assert t[0] == 0 and t[-1] < n and 1 <= len(t) <= 8
    if len(t) > 1:
        step = t[1] - t[0]
        assert all(b - a == step for a, b in zip(t, t[1:], strict=False))
        assert str(step)[0] in "125" and set(str(step)[1:]) <= {"0"}     # 1, 2 or 5 times a power of ten


# ---------------------------------------------------------------------------- cliffs
def test_cliff_marks_the_first_row_at_or_past_the_cliff():
    assert cliff_marks([[31, "bytes", 100]], 10, 30) == [{"axis": "row", "at": 4, "labels": ["2^31 bytes"]}]
    assert cliff_marks([[31, "bytes", 90]], 10, 30) == [{"axis": "row", "at": 3, "labels": ["2^31 bytes"]}]


def test_cliffs_in_one_row_are_marked_once_and_bad_entries_skipped():
    marks = cliff_marks([[31, "bytes", 61], [32, "elements", 80], "junk", [31, "bytes"], [31, "bytes", 1.5]], 10, 30)
    assert marks == [{"axis": "row", "at": 3, "labels": ["2^31 bytes", "2^32 elements"]}]
    assert cliff_marks(None, 10, 30) == [] and cliff_marks([], 1, 30) == []


# ---------------------------------------------------------------------------- density
def test_density_fits_the_output_or_is_none():
    where = {"density": [2, 3, [[10, 0, 5], [100, 1, 0]]]}
    assert density(where, [4, 7]) == ([[10, 0, 5], [100, 1, 0]], (2, 3))
    assert density(where, [5, 7]) is None                              # 3 rows of cells needed
    assert density(where, [4, 10]) is None                             # 4 columns of cells needed
    assert density({"density": []}, [4, 7]) is None
    assert density({"density": [2, 3, []]}, [4, 7]) is None
    assert density({}, [4, 7]) is None


# ---------------------------------------------------------------------------- drawing refused, titles literal
def test_error_map_draws_nothing_without_a_pattern_or_a_shape():
    assert error_map(None, [4, 7], None, "t") is None
    assert error_map({"kind": "every"}, None, None, "t") is None
    assert error_map({"kind": "every"}, [], None, "t") is None
    assert error_map({"kind": "every"}, [4, "7"], None, "t") is None
    assert error_map({"kind": "every"}, (4, 7), None, "t") is None


def test_rate_curve_draws_nothing_without_a_whole_point():
    assert rate_curve([], "t") is None
    assert rate_curve(None, "t") is None
    assert rate_curve([[1, 0.5, 0.1], [2, "x", 0, 1], "junk"], "t") is None


def test_plain_keeps_a_users_text_from_mathtext_and_control_characters():
    assert _plain("r1-M=$x$-N=7") == "r1-M=\\$x\\$-N=7"
    assert _plain("a\x1b[31mb\x07\x7f") == "a\\x1b[31mb\\x07\\x7f"
    assert _plain("plain text, (1, 2)") == "plain text, (1, 2)"
