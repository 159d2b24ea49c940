"""report/words/base.py: the words of a pattern, of the load beside a point, and the small phrases."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core.facts import LoadFacts
from kladder.core.outcome import Pattern, Span, Status
from kladder.report.words.base import (
    MESSAGES,
    NOTES,
    cap,
    during,
    ints,
    load_text,
    notes,
    pattern_text,
    rows_words,
    says,
    span_text,
    status_word,
)


# ---------------------------------------------------------------------------- spans
def test_span_text_at_the_end_with_its_tile_note():
    assert span_text("columns", Span(8, 14, 15, ("N", 8, 7))) == "the last 7 columns (N % 8 = 7)"
    assert span_text("columns", Span(8, 14, 15)) == "the last 7 columns"


def test_span_text_of_one_position_is_singular():
    assert span_text("columns", Span(14, 14, 15)) == "the last column"
    assert span_text("elements", Span(0, 0, 15)) == "the first element"


def test_span_text_at_the_start_and_inside():
    assert span_text("columns", Span(0, 3, 15)) == "the first 4 columns"
    assert span_text("columns", Span(2, 5, 15)) == "columns 2..5"


def test_a_span_of_every_position_is_said_as_the_last_not_the_first():
    """first == 0 and last == n - 1: the tail branch wins (a whole row read as its end)."""
    assert span_text("columns", Span(0, 9, 10)) == "the last 10 columns"


@settings(max_examples=50, deadline=None)
@given(n=st.integers(2, 10_000), data=st.data())
def test_span_text_counts_the_positions_of_a_tail(n, data):
    first = data.draw(st.integers(1, n - 1))
    k = n - first
    text = span_text("columns", Span(first, n - 1, n))
    assert text == (f"the last {k} columns" if k > 1 else "the last column")


# ---------------------------------------------------------------------------- rows
@pytest.mark.parametrize("rows, words", [
    (("every",), "every row"),
    (("one", 3), "row 3"),
    (("from", 5, 9), "every row from 5 on (rows 5..9)"),
    (("range", 2, 4), "rows 2..4"),
    (("runs", ((0, 1), (4, 4), (7, 9))), "rows 0..1, 4, 7..9"),
])
def test_rows_words(rows, words):
    assert rows_words(rows) == words


# ---------------------------------------------------------------------------- patterns
def test_pattern_text_of_each_kind():
    assert pattern_text(Pattern(kind="single")) == "the single element"
    assert pattern_text(Pattern(kind="every")) == "every element"
    assert pattern_text(Pattern(kind="elements", cols=Span(0, 2, 9))) == "the first 3 elements"
    assert (pattern_text(Pattern(kind="block", cols=Span(6, 6, 7, ("N", 8, 7)), rows=("every",)))
            == "the last column (N % 8 = 7) of every row")
    assert pattern_text(Pattern(kind="block", rows=("range", 0, 201))) == "rows 0..201 (whole rows)"
    assert pattern_text(Pattern(kind="block", rows=("every",))) == "every element"


def test_pattern_text_of_whole_rows_says_when_more_are_wrong_than_listed():
    p = Pattern(kind="whole_rows", n_bad=1200, n_rows=4096, ids=(0, 1, 2, 3, 4), checked=True)
    assert pattern_text(p) == "1,200 whole rows of 4,096 checked (rows 0, 1, 2, 3, 4, ...)"
    q = Pattern(kind="whole_rows", n_bad=2, n_rows=8, ids=(3, 5))
    assert pattern_text(q) == "2 whole rows of 8 (rows 3, 5)"


def test_pattern_text_of_runs_and_scattered():
    most = Pattern(kind="runs", rows=("one", 2), most=True, n_bad=60, n_total=64)
    assert pattern_text(most) == "most elements of row 2 (60 of 64)"
    some = Pattern(kind="runs", rows=("every",), n_bad=3, n_total=1_000_000)
    assert pattern_text(some) == "scattered elements of every row (3 of 1,000,000)"
    sc = Pattern(kind="scattered", n_bad=5, n_total=4096, first=[1, 7])
    assert pattern_text(sc) == "scattered, 5 of 4,096 elements (first at (1, 7))"


# ---------------------------------------------------------------------------- small phrases
def test_small_phrases():
    class F:
        call = "replay 2 of 3"
    assert during(F()) == " (replay 2 of 3)"
    F.call = ""
    assert during(F()) == ""
    assert cap("the kernel") == "The kernel" and cap("") == ""
    assert ints([1, 1000, 2_000_000]) == "1, 1,000, 2,000,000" and ints([]) == ""
    assert status_word(Status.NOT_JUDGED) == "not judged" and status_word(Status.OOM) == "oom"


# ---------------------------------------------------------------------------- load
def test_load_text_with_nothing_measured():
    assert load_text(LoadFacts()) == "other work on the host"


def test_load_text_names_each_measure_with_its_plural():
    x = LoadFacts(processes=1, lanes=2, device_used_bytes=3 << 30, device_total_bytes=80 << 30, host_cpu_s=12.34,
                  seconds=5.0, host_used_bytes=1 << 30, host_total_bytes=4 << 30, oom_kills=2, waited_s=7.4)
    assert load_text(x) == ("1 other process on the device, 3.00 GiB of 80.00 GiB in use by others, "
                            "2 other lanes of this climb running, other processes used 12.3 s of CPU in its 5.0 s, "
                            "1.00 GiB of the host's 4.00 GiB memory in use, "
                            "the out-of-memory killer killed 2 processes, the run alone waited 7 s for memory to free")


def test_load_text_needs_both_host_numbers_and_tolerates_no_device_total():
    x = LoadFacts(processes=3, lanes=1, device_used_bytes=1 << 20, host_used_bytes=1 << 30, oom_kills=1)
    assert load_text(x) == ("3 other processes on the device, 1.00 MiB in use by others, "
                            "1 other lane of this climb running, the out-of-memory killer killed 1 process")


# ---------------------------------------------------------------------------- the tables
def test_says_and_notes_register_the_words_of_each_class():
    class A:
        pass

    class B:
        pass

    try:
        fn = says(A, B)(lambda f, x: "said")
        assert MESSAGES[A] is MESSAGES[B] is fn
        gn = notes(A)(lambda x, sized=True: "noted")
        assert NOTES[A] is gn and gn(None) == "noted"
    finally:
        for table in (MESSAGES, NOTES):
            table.pop(A, None)
            table.pop(B, None)
