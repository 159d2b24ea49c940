"""The history's row of a point reads the point's typed facts (a rung-5 REPEATS finding's
RepeatsFacts): on the H200 a failing repeat point ended the climb with AttributeError
('RepeatsFacts' object has no attribute 'get') in history/record.py, where the CPU's tests
never had a failing repetition with the history on (docs/results/2026-12-02-h200-session7)."""
from kladder.core.facts import RepeatsFacts
from kladder.history.record import nondeterministic, point_row
from kladder.core.outcome import Check, Finding, Outcome, Status
from kladder.core.point import Point


def repeats(bitwise: bool) -> Outcome:
    facts = RepeatsFacts(calls=10, compared=9, firsts=1, differ=3, wrong=0 if bitwise else 3, deterministic=False,
                         launch="eager", inputs="same", load=False, seconds=0.1, stopped="calls", bitwise=bitwise,
                         rate=0.33, lo=0.1, hi=0.7, conf=0.95, calls_50=3, calls_95=8)
    return Outcome(Point("s", 5, (("N", 8),)), Status.FAILED, [Finding(Check.REPEATS, output="out", facts=facts)])


def test_a_bitwise_repeat_finding_marks_the_point_nondeterministic():
    assert nondeterministic(repeats(bitwise=True))
    assert not nondeterministic(repeats(bitwise=False))


def test_a_failing_repeat_point_gets_its_history_row():
    row = point_row(repeats(bitwise=False))
    assert row["status"] == "failed" and row["nondeterministic"] is False and row["rung"] == 5
