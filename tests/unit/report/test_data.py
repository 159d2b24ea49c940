"""report/data.py: the grouping keys of the terminal and the HTML, from the facts' data."""
from __future__ import annotations

from kladder.core.facts import (
    BiasFacts,
    ContractFacts,
    GuardFacts,
    NondeterministicFacts,
    RaisedFacts,
    ValuesFacts,
)
from kladder.core.outcome import Check, Finding, Note, NoteKind, Outcome, Pattern, Replay, Span, Status
from kladder.core.point import Point
from kladder.report.data import (
    bias_group,
    failure_groups,
    failure_key,
    note_group,
    note_key,
    pattern_shape,
    reason_group,
)


def _point(m: int = 4, n: int = 7, rung: int = 1, mode: str = "eager") -> Point:
    return Point(spec="s", rung=rung, dims=(("M", m), ("N", n)), mode=mode)


def _cols(first: int, last: int, n: int, tile_note=None) -> Pattern:
    return Pattern(kind="block", cols=Span(first, last, n, tile_note), rows=("every",))


def _values(pattern: Pattern | None, output: str = "y") -> Finding:
    return Finding(Check.VALUES, output=output, pattern=pattern, facts=ValuesFacts())


# ---------------------------------------------------------------------------- pattern_shape
def test_pattern_shape_leaves_the_numbers_out_of_a_tail_of_columns():
    """The last 1 of 7 columns and the last 7 of 15 are one shape: the tail of a tile of 8."""
    a = _values(_cols(6, 6, 7, ("N", 8, 7)))
    b = _values(_cols(8, 14, 15, ("N", 8, 7)))
    assert pattern_shape(a) == pattern_shape(b) == ("block", ("last", ("N", 8)), "every", False)


def test_pattern_shape_tells_first_last_and_inner_columns_apart():
    last, first, inner = (pattern_shape(_values(_cols(a, b, 16))) for a, b in ((10, 15), (0, 3), (4, 9)))
    assert [s[1][0] for s in (last, first, inner)] == ["last", "first", "range"]
    assert last[1][1] is None                    # no tile note: None, not an empty slice


def test_pattern_shape_of_a_pattern_without_columns_or_rows():
    assert pattern_shape(_values(Pattern(kind="every"))) == ("every", None, None, False)
    assert pattern_shape(_values(Pattern(kind="runs", rows=("one", 3), most=True))) == ("runs", None, "one", True)


def test_pattern_shape_of_a_guard_is_which_side_was_written():
    after = Finding(Check.GUARD, output="y", facts=GuardFacts(itemsize=4, n_after=8, n_before=0))
    before = Finding(Check.GUARD, output="y", facts=GuardFacts(itemsize=4, n_after=0, n_before=3))
    both = Finding(Check.GUARD, output="y", facts=GuardFacts(itemsize=4, n_after=1, n_before=1))
    assert (pattern_shape(after), pattern_shape(before), pattern_shape(both)) == ((True, False), (False, True), (True, True))


def test_pattern_shape_of_a_contract_is_its_given_keys_and_problem_names():
    f = Finding(Check.CONTRACT, output="y", facts=ContractFacts(problems=[["dtype", "float32", "float16"],
                                                                          ["shape", [2], [3]]]))
    assert pattern_shape(f) == ("dtype", "shape")         # opt() fields left out while None; 'problems' dropped
    g = Finding(Check.CONTRACT, output="y", facts=ContractFacts(not_tensor="list"))
    assert pattern_shape(g) == ("not_tensor",)


def test_pattern_shape_of_a_raised_finding_is_its_error_and_text():
    f = Finding(Check.RAISED, facts=RaisedFacts(error="ValueError", text="bad N"))
    assert pattern_shape(f) == ("ValueError", "bad N")
    assert pattern_shape(Finding(Check.NONFINITE)) == ()   # a check with no shape fields


# ---------------------------------------------------------------------------- failure_key / groups
def test_failure_groups_join_points_that_differ_only_in_their_dims():
    tail = ("N", 8, 7)
    a = Outcome(_point(4, 7), Status.FAILED, [_values(_cols(6, 6, 7, tail))])
    b = Outcome(_point(64, 15), Status.FAILED, [_values(_cols(8, 14, 15, tail))])
    other_output = Outcome(_point(8, 7), Status.FAILED, [_values(_cols(6, 6, 7, tail), output="z")])
    flaky = Outcome(_point(2, 7), Status.FLAKY, [_values(_cols(6, 6, 7, tail))])
    other_rung = Outcome(_point(4, 7, rung=2), Status.FAILED, [_values(_cols(6, 6, 7, tail))])
    groups = failure_groups([a, other_output, b, flaky, other_rung])
    assert [[o.point.id for o in g] for g in groups] == [[a.point.id, b.point.id], [other_output.point.id],
                                                         [flaky.point.id], [other_rung.point.id]]


def test_failures_without_findings_are_never_grouped():
    a, b = Outcome(_point(4, 7), Status.FAILED), Outcome(_point(4, 7), Status.FAILED)
    assert failure_key(a) != failure_key(b)
    assert len(failure_groups([a, b])) == 2


def test_failure_key_holds_the_mode_and_the_call():
    f = _values(Pattern(kind="every"))
    eager = Outcome(_point(), Status.FAILED, [f])
    graph = Outcome(_point(mode="graph"), Status.FAILED, [f])
    assert failure_key(eager) != failure_key(graph)
    g = Finding(Check.VALUES, output="y", call="replay 2 of 3", pattern=Pattern(kind="every"), facts=ValuesFacts())
    assert failure_key(Outcome(_point(), Status.FAILED, [g])) != failure_key(eager)


def test_failure_groups_of_nothing():
    assert failure_groups([]) == []


# ---------------------------------------------------------------------------- notes
def test_note_key_is_the_kind_and_the_facts_as_sorted_strings():
    n = Note.of(NoteKind.GPU_POINT, need_bytes=1024, budget="1 GiB")
    assert note_key(n) == (NoteKind.GPU_POINT, (("budget", "1 GiB"), ("need_bytes", "1024")))
    assert note_key(None) == ()


def test_note_group_joins_gpu_points_of_other_sizes_but_not_other_budgets():
    a = Note.of(NoteKind.GPU_POINT, need_bytes=1 << 30, budget="256 MiB")
    b = Note.of(NoteKind.GPU_POINT, need_bytes=1 << 33, budget="256 MiB")
    c = Note.of(NoteKind.GPU_POINT, need_bytes=1 << 30, budget="1 GiB")
    assert note_group(a) == note_group(b) != note_group(c)
    assert note_key(a) != note_key(b)                    # the key itself keeps the size


def test_note_group_of_another_kind_is_its_key():
    n = Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph")
    assert note_group(n) == note_key(n)


def test_reason_group_uses_the_replay_before_the_note():
    note = Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph")
    plain = Outcome(_point(), Status.SKIPPED, note=note)
    assert reason_group(plain) == (Status.SKIPPED, None, None, note_key(note))
    replayed = Outcome(_point(), Status.FAILED, note=note, replay=Replay.FLAKY, replay_status=Status.PASSED)
    assert reason_group(replayed) == (Status.FAILED, Replay.FLAKY, Status.PASSED, ())


# ---------------------------------------------------------------------------- bias
def _bias(output="y", up=9, down=1, lean="offset", dtype="bfloat16", p=1e-3) -> Finding:
    return Finding(Check.BIAS, output=output, facts=BiasFacts(lean=lean, up=up, down=down, p=p, mean_ulps=0.4,
                                                              rel=1e-3, peer=False, dtype=dtype))


def test_bias_group_ignores_the_numbers_but_not_the_side():
    assert bias_group(_bias(up=9, down=1, p=1e-3)) == bias_group(_bias(up=90, down=3, p=1e-9))
    assert bias_group(_bias(up=9, down=1)) != bias_group(_bias(up=1, down=9))
    assert bias_group(_bias(lean="offset")) != bias_group(_bias(lean="scale"))
    assert bias_group(_bias(output="y")) != bias_group(_bias(output="z"))
    assert bias_group(_bias()) == ("y", "offset", True, "bfloat16")


def _nondet(differ: int) -> Finding:
    x = NondeterministicFacts(calls=100, compared=99, firsts=1, differ=differ, wrong=0, deterministic=False,
                              launch="eager", inputs="same", load=False, seconds=1.0, stopped="calls", rate=differ / 99)
    return Finding(Check.NONDETERMINISTIC, output="y", facts=x)


def test_bias_group_of_nondeterminism_is_one_line_an_output_whatever_its_rate():
    assert bias_group(_nondet(3)) == bias_group(_nondet(40))
    assert bias_group(_nondet(3))[:2] == ("nondeterministic", "y")


def test_bias_group_of_other_facts_is_every_fact():
    a = Finding(Check.RAISED, facts=RaisedFacts(error="E", text="a"))
    b = Finding(Check.RAISED, facts=RaisedFacts(error="E", text="b"))
    assert bias_group(a) != bias_group(b)
    assert bias_group(a) == bias_group(Finding(Check.RAISED, facts=RaisedFacts(error="E", text="a")))
