"""report/words/__init__.py: a finding's message and one-line pattern, a group's points and
shape, a replay's reason, the rows a big point checked."""
from __future__ import annotations

import pytest

from kladder.core import facts as F
from kladder.core.facts import CHECK_FACTS, NOTE_FACTS
from kladder.core.outcome import (
    Cause,
    Check,
    Finding,
    Note,
    NoteKind,
    Outcome,
    Pattern,
    Replay,
    RowsChecked,
    Span,
    Status,
)
from kladder.core.point import Point
from kladder.report import words
from kladder.report.words import (
    MESSAGES,
    NOTES,
    message,
    pattern_label,
    pattern_shape_text,
    points_text,
    reason,
    replay_text,
    rows_text,
)


def _point(dims=(("M", 4), ("N", 7)), dtypes=(), config=()) -> Point:
    return Point(spec="s", rung=1, dims=dims, dtypes=dtypes, config=config)


def _tail(n: int, tile: int = 8) -> Pattern:
    rem = n % tile
    return Pattern(kind="block", cols=Span(n - rem, n - 1, n, ("N", tile, rem)), rows=("every",))


def test_every_check_and_note_has_its_words():
    """The tables every family fills: no Check or NoteKind without a message (a new kind without
    words would raise KeyError only when a report shows it)."""
    assert set(CHECK_FACTS.values()) <= set(MESSAGES)
    assert set(NOTE_FACTS.values()) <= set(NOTES)


def test_message_dispatches_on_the_facts_class():
    f = Finding(Check.INVARIANT, output="y", facts=F.InvariantFacts(name="rows sum to 1"))
    assert message(f) == "the invariant 'rows sum to 1' does not hold"


# ---------------------------------------------------------------------------- pattern_label
def test_pattern_label_prefers_the_pattern():
    f = Finding(Check.VALUES, output="y", pattern=Pattern(kind="every"), facts=F.ValuesFacts())
    assert pattern_label(f) == "every element"


@pytest.mark.parametrize("check, facts, label", [
    (Check.RAISED, F.RaisedFacts(error="E", text="t"), "raised"),
    (Check.HANG, F.HangFacts(timeout_s=3.0), "hang"),
    (Check.UNCAPTURED, F.UncapturedFacts(), "not capturable (graphs not claimed)"),
    (Check.NONFINITE, F.NonfiniteFacts(), "accepted NaN/Inf"),
    (Check.GUARD, F.GuardFacts(itemsize=4, n_after=3, n_before=1), "a write past the end"),
    (Check.GUARD, F.GuardFacts(itemsize=4, n_after=0, n_before=1), "a write before the start"),
    (Check.CRASHED, F.CrashedFacts(signal="SIGSEGV"), "crash (SIGSEGV)"),
    (Check.CRASHED, F.CrashedFacts(exit_status=3), "crash (exit status 3)"),
    (Check.NOT_BITWISE, F.NotBitwiseFacts(cause=Cause.ABA.value), "A after B differs from A"),
    (Check.NOT_BITWISE, F.NotBitwiseFacts(cause=Cause.CACHEKEY.value), "B on A's cache differs from B on an empty one"),
    (Check.NOT_BITWISE, F.NotBitwiseFacts(cause=Cause.RUN_TO_RUN.value), "A twice differs (deterministic=True)"),
    (Check.NOT_BITWISE, F.NotBitwiseFacts(cause=Cause.JITCACHE.value), "warm cache differs from cold"),
    (Check.RANKS_HUNG, F.RanksHungFacts(watchdog_s=1, waited_s=1, queued=1, dim="N", lag=0, ranks=[]), "hang (watchdog)"),
    (Check.SANITIZER, F.SanitizerFacts(tool="memcheck", kind="unread", count=1200),
     "memcheck: 1,200 errors in a report kladder could not read"),
    (Check.PADDING, F.PaddingFacts(arg="x", fill="0xFF", valid=3), ""),
])
def test_pattern_label_without_a_pattern(check, facts, label):
    assert pattern_label(Finding(check, output="y", facts=facts)) == label


def test_pattern_label_of_the_model_by_its_metric():
    nll = F.ModelFacts(where="slot", baseline=0.9, kernel=0.9, metric="nll", allowed=0.05, rise=0.1234)
    score = F.ModelFacts(where="model", baseline=0.91234, kernel=0.5, metric="score", allowed=0.01)
    assert pattern_label(Finding(Check.MODEL, facts=nll)) == "NLL +12.3%"
    assert pattern_label(Finding(Check.MODEL, facts=score)) == "score 0.912 -> 0.500"


def test_pattern_label_of_a_collective_counts_calls():
    x = F.CollectiveFacts(ranks={}, sizes_wrong=[], sizes=[], dim="N", world=2, lag=0, queued=4, kinds=[])
    assert pattern_label(Finding(Check.COLLECTIVE, mismatched=1234, total=5000, facts=x)) == "1,234 of 5,000 calls wrong"


def _repeats(bitwise: bool, **kw) -> F.RepeatsFacts:
    base = dict(calls=1001, compared=1000, firsts=1, differ=7, wrong=2, deterministic=True, launch="eager",
                inputs="same", load=False, seconds=1.0, stopped="calls", bitwise=bitwise)
    return F.RepeatsFacts(**{**base, **kw})


def test_pattern_label_of_repeats_counts_differ_or_wrong_by_bitwise():
    assert pattern_label(Finding(Check.REPEATS, facts=_repeats(True))) == "7 of 1,000 calls not bit for bit the first call"
    worst = Finding(Check.REPEATS, pattern=Pattern(kind="every"), facts=_repeats(False))
    assert pattern_label(worst) == "2 of 1,000 calls wrong; the worst: every element"


def test_pattern_label_of_a_stream():
    x = F.StreamFacts(calls=3000, judged=2999, wrong=12, sets=1500, pattern="AB", fresh=True, count=3000,
                      declared=True, seconds=2.0, stopped="calls", batched=False, first_wrong=1024)
    assert pattern_label(Finding(Check.STREAM, facts=x)) == ("12 of 2,999 calls of the stream wrong, the first call "
                                                             "1,024")
    f = Finding(Check.STREAM, pattern=Pattern(kind="single"), facts=x)
    assert pattern_label(f).endswith("; call 1,024: the single element")


# ---------------------------------------------------------------------------- a group's shape and points
def test_pattern_shape_text_of_a_tile_tail():
    assert pattern_shape_text(Finding(Check.VALUES, pattern=_tail(15), facts=F.ValuesFacts())) == \
        "the last N % 8 columns of every row"
    one_d = Pattern(kind="elements", cols=Span(8, 14, 15, ("N", 8, 7)))
    assert pattern_shape_text(Finding(Check.VALUES, pattern=one_d, facts=F.ValuesFacts())) == "the last N % 8 elements"


def test_pattern_shape_text_is_none_where_the_pattern_says_it_best():
    no_note = Pattern(kind="block", cols=Span(8, 14, 15), rows=("every",))
    not_at_end = Pattern(kind="block", cols=Span(0, 6, 15, ("N", 8, 7)), rows=("every",))
    for p in (None, Pattern(kind="every"), no_note, not_at_end):
        assert pattern_shape_text(Finding(Check.VALUES, pattern=p, facts=F.ValuesFacts())) is None


def _failed(m: int, n: int, dtypes=(), config=()) -> Outcome:
    f = Finding(Check.VALUES, output="y", pattern=_tail(n), facts=F.ValuesFacts())
    return Outcome(_point((("M", m), ("N", n)), dtypes, config), Status.FAILED, [f])


def test_points_text_of_a_group_names_ranges_tile_notes_dtypes_and_configs():
    group = [_failed(1, 7, (("x", "float16"),), (("BLOCK", 8),)), _failed(4096, 16383, (("x", "bfloat16"),)),
             _failed(64, 15, (("x", "float16"),))]
    assert points_text(group) == "3 points: M = 1..4096, N = 7..16383 (N % 8 != 0); bfloat16, float16; 2 configs"


def test_points_text_of_a_dim_that_does_not_move_has_no_range_and_no_tile_note():
    """A tile note is said only of a dim that moves; one dtype and one config are not said."""
    group = [_failed(4, 7, (("x", "float16"),)), _failed(4, 7, (("x", "float16"),)), _failed(9, 7, (("x", "float16"),))]
    assert points_text(group) == "3 points: M = 4..9, N = 7"


# ---------------------------------------------------------------------------- replays and reasons
def test_replay_text_of_each_replay():
    o = Outcome(_point(), Status.FAILED, replay=Replay.FAILED_AGAIN)
    assert replay_text(o) == "replayed: failed again"
    o = Outcome(_point(), Status.FLAKY, replay=Replay.FLAKY, replay_status=Status.PASSED)
    assert replay_text(o) == "failed 1 of 2 runs (the replay passed): a race or uninitialised state, not rounding"
    o = Outcome(_point(), Status.FAILED, replay=Replay.ALONE_PASSES)
    assert replay_text(o).startswith("passes when run alone in a fresh process")


def test_reason_is_the_replay_else_the_note_else_nothing():
    note = Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph")
    assert reason(Outcome(_point(), Status.SKIPPED, note=note)) == \
        "the graph mode needs CUDA; on the CPU it is skipped, never passed"
    assert reason(Outcome(_point(), Status.FAILED, note=note, replay=Replay.FAILED_AGAIN)) == "replayed: failed again"
    assert reason(Outcome(_point(), Status.PASSED)) == ""


def test_rows_text():
    r = RowsChecked(checked=1234, rows=1_048_576, dim="M", sampled=16)
    assert rows_text(r) == ("1,234 of 1,048,576 rows of M: the first and last tiles, the tiles at each 2^31 / 2^32 "
                            "byte boundary, and 16 sampled")


def test_the_package_exports_what_it_lists():
    missing = [name for name in words.__all__ if not hasattr(words, name)]
    assert missing == []
