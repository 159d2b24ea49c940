"""What a climb's lanes wait for, and for how long: the fork server's start, a worker's start,
the device (a CUDA context refused while others hold its memory), the points in flight (to run
one alone), a point that runs alone. The pool and the climb's runner mark each wait as it
begins and ends (`Waits.on`); the progress line shows the waits in progress (`Waits.now`), the
report each rung's totals (`Waits.of_rung`: outcome.Waited, words in report/words/notes.py).

A wait counts for the rung of the point its lane is about to run (`Waits.point`, set by the
runner on the lane's thread). Waits under MIN_S are not kept: a wait that did not happen."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from ..core.outcome import Wait, Waited

MIN_S = 0.1


@dataclass
class Waiting:
    """A wait in progress: what for, since when (time.monotonic), for which point (its id)."""
    wait: Wait
    since: float
    point: str = ""


class Waits:
    def __init__(self):
        self._lock = threading.Lock()
        self._local = threading.local()
        self._totals: dict[tuple[int, Wait], list] = {}       # (rung, wait) -> [seconds, times]
        self._now: list[Waiting] = []

    @contextmanager
    def point(self, point):
        """The lane's thread works for `point` inside the block: its waits count for its rung."""
        was = getattr(self._local, "point", None)
        self._local.point = point
        try:
            yield
        finally:
            self._local.point = was

    @contextmanager
    def on(self, wait: Wait):
        """The block is a wait for `wait`; yields the Waiting, whose `wait` the block may change
        (a worker's start that turns out to wait for the device)."""
        point = getattr(self._local, "point", None)
        w = Waiting(wait, time.monotonic(), point.id if point is not None else "")
        with self._lock:
            self._now.append(w)
        try:
            yield w
        finally:
            seconds = time.monotonic() - w.since
            with self._lock:
                self._now = [x for x in self._now if x is not w]
                if seconds >= MIN_S:
                    key = (point.rung if point is not None else 0, w.wait)
                    total = self._totals.setdefault(key, [0.0, 0])
                    total[0] += seconds
                    total[1] += 1

    def now(self) -> list[tuple[Wait, float, str]]:
        """The waits in progress: (what for, seconds so far, the point's id), longest first."""
        t = time.monotonic()
        with self._lock:
            waiting = [(w.wait, t - w.since, w.point) for w in self._now]
        return sorted(waiting, key=lambda x: -x[1])

    def of_rung(self, rung: int) -> list[Waited]:
        """What the lanes working for `rung`'s points waited for, in all (Wait's order)."""
        with self._lock:
            found = {w: v for (r, w), v in self._totals.items() if r == rung}
        return [Waited(w, round(found[w][0], 3), found[w][1]) for w in Wait if w in found]


@contextmanager
def waiting(waits: Waits | None, wait: Wait):
    """`waits.on(wait)`, or nothing where no one records waits (a repro, the pytest plugin)."""
    if waits is None:
        yield None
        return
    with waits.on(wait) as w:
        yield w
