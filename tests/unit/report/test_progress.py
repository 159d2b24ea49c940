"""report/progress.py: the progress line's decisions (failures counted, the longest wait and how
many more, one line per finished rung) and a spec's strings shown literally, never as markup.
A rich Console writes into a string; nothing sleeps and no terminal is needed."""
from __future__ import annotations

import io

from rich.console import Console

from kladder.core.outcome import Outcome, Status, Wait
from kladder.core.point import Point
from kladder.core.results import RungReport
from kladder.report.progress import Progress


class FakeWaits:
    """run/waits.Waits as the progress line reads it: the waits in progress, longest first."""

    def __init__(self, now):
        self._now = now

    def now(self):
        return self._now


def _progress():
    buf = io.StringIO()
    return Progress(Console(file=buf, force_terminal=False, width=200)), buf


def _point(rung=1, m=4) -> Point:
    return Point(spec="s", rung=rung, dims=(("M", m),))


def test_waiting_line_shows_the_longest_wait_and_counts_the_others():
    p, _ = _progress()
    assert p.waiting_line() == ""                                     # nothing watched
    p.watch(FakeWaits([]))
    assert p.waiting_line() == ""
    p.watch(FakeWaits([(Wait.DEVICE, 12.4, "r1-M=4")]))
    assert p.waiting_line() == "waiting 12 s for the device (r1-M=4)"
    p.watch(FakeWaits([(Wait.FORK_SERVER, 3.0, ""), (Wait.WORKER, 1.0, "a"), (Wait.WORKER, 0.5, "b")]))
    assert p.waiting_line() == "waiting 3 s for the fork server to start (+2 more)"


def test_failed_and_flaky_points_are_counted_and_the_count_restarts_each_rung():
    p, _ = _progress()
    rr = RungReport(1, "shapes")
    p.rung_started(rr, total=4)
    for status in (Status.FAILED, Status.PASSED, Status.FLAKY, Status.SKIPPED, Status.BROKEN):
        p.point_done(Outcome(_point(), status))
    assert p.failed == 2
    assert p.bar.tasks[0].completed == 5 and p.bar.tasks[0].fields["failed"] == "2 failed"
    p.rung_done(rr)
    p.rung_started(RungReport(2, "values"), total=1)
    assert p.failed == 0
    p.stop()


def test_the_running_point_is_shown_on_the_line():
    p, _ = _progress()
    p.point_started(_point())                 # before any rung: nothing to update, nothing raised
    p.rung_started(RungReport(1, "shapes"), total=1)
    p.point_started(_point(m=9))
    assert p.bar.tasks[0].fields["running"] == "r1-M=9"
    p.stop()


def test_rung_done_prints_one_literal_line_and_removes_its_task():
    p, buf = _progress()
    outcomes = [Outcome(_point(m=1), Status.PASSED), Outcome(_point(m=2), Status.FAILED),
                Outcome(_point(m=3), Status.FLAKY), Outcome(_point(m=4), Status.SKIPPED)]
    rr = RungReport(1, "[bold]shapes[/bold]", outcomes, seconds=1.25)
    p.rung_started(rr, total=4)
    p.rung_done(rr)
    p.stop()
    assert p.task is None and not p.started
    assert "rung 1 [bold]shapes[/bold]: 4 points, 1 passed, 2 failed, 1 skipped  failed  [1.2 s]" in buf.getvalue()


def test_stage_prints_its_words_literally():
    p, buf = _progress()
    p.stage("shrinking r1-[red]x[/red] $HOME")
    assert buf.getvalue() == "shrinking r1-[red]x[/red] $HOME\n"


def test_stop_without_start_and_twice_is_harmless():
    p, _ = _progress()
    p.stop()
    p.rung_started(RungReport(1, "shapes"), total=0)
    p.stop()
    p.stop()
    assert not p.started
