"""Progress while a climb runs (a terminal only): per rung, points done of the total, failed so
far, the point running, the time spent and an estimate; one line per finished rung. Every
string that comes from a spec (point ids) is shown literally, never as markup."""
from __future__ import annotations

import time

from ..core.outcome import Outcome, Status
from ..core.results import RungReport


class Progress:
    def __init__(self, console):
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.progress import Progress as RichProgress
        self.console = console
        self.waits = None                    # run/waits.Waits of the climb's runner (watch), read as the line redraws
        self.bar = RichProgress(TextColumn("{task.fields[rung]}", markup=False), BarColumn(bar_width=24),
                                MofNCompleteColumn(), TextColumn("{task.fields[failed]}", markup=False),
                                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                                TextColumn("{task.fields[running]}", markup=False), _waiting_column(self),
                                console=console, transient=True, auto_refresh=True, refresh_per_second=4)
        self.task = None
        self.failed = 0
        self.started = False

    def watch(self, waits) -> None:
        """Show the lanes' waits in progress (run/waits.Waits) on the line."""
        self.waits = waits

    def waiting_line(self) -> str:
        """The longest wait in progress, in words ('' when no lane waits), and how many more."""
        now = self.waits.now() if self.waits is not None else []
        if not now:
            return ""
        from .words import waiting_text
        more = f" (+{len(now) - 1} more)" if len(now) > 1 else ""
        return waiting_text(*now[0]) + more

    def rung_started(self, rr: RungReport, total: int) -> None:
        if not self.started:
            self.bar.start()
            self.started = True
        self.failed = 0
        self.task = self.bar.add_task("", total=total, rung=f"rung {rr.rung} {rr.title}", failed="", running="")
        self.t0 = time.perf_counter()

    def point_started(self, point) -> None:
        if self.task is not None:
            self.bar.update(self.task, running=point.id)

    def point_done(self, o: Outcome) -> None:
        if o.status in (Status.FAILED, Status.FLAKY):
            self.failed += 1
        if self.task is not None:
            self.bar.update(self.task, advance=1, failed=f"{self.failed} failed" if self.failed else "")

    def rung_done(self, rr: RungReport) -> None:
        from rich.text import Text
        if self.task is not None:
            self.bar.remove_task(self.task)
            self.task = None
        c = rr.counts
        line = (f"rung {rr.rung} {rr.title}: {len(rr.outcomes)} points, {c['passed']} passed, "
                f"{c['failed'] + c['flaky']} failed, {c['skipped']} skipped  {rr.verdict}  [{rr.seconds:.1f} s]")
        self.bar.console.print(Text(line))

    def stage(self, what: str) -> None:
        """A step of kladder's after the rungs (shrinking the failures): one line, literal."""
        from rich.text import Text
        self.bar.console.print(Text(what))

    def stop(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False


def _waiting_column(progress: Progress):
    """A column that asks `progress` for its waiting line each time the bar redraws."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Waiting(ProgressColumn):
        def render(self, task):
            return Text(progress.waiting_line(), style="yellow")
    return Waiting()
