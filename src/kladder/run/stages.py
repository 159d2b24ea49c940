"""The stages of a point, timed one by one (Outcome.stages) and named to the parent as they
begin, so that the parent's watchdog (isolation.Worker.run) times the kernel, not kladder: the
kernel's stage gets the hang timeout, kladder's own stages (inputs, reference, peers, checks)
a budget of their own (isolation.KLADDER_STAGE_FACTOR).

A boundary is `CLOCK.enter(stage)`: the time since the last boundary goes to the stage that
ended, and in a worker one JSON line ({"stage": "reference"}) goes to the parent, only when
the stage changes (a mode that calls the kernel thousands of times in a row sends nothing
between its calls). Harness methods are marked with the `timed` decorator; the mode itself
runs under `driven`: the kernel's stage while the mode works, the checks' while its
observations are judged."""
from __future__ import annotations

import functools
import sys
import threading
import time
from typing import Callable, Iterator

from ..core.outcome import Stage


class Clock:
    def __init__(self) -> None:
        self.sink: Callable[[Stage], None] | None = None    # the worker's protocol pipe
        self.owner = threading.get_ident()                  # boundaries are the point's thread's only
        self.reset()

    def reset(self) -> None:
        """A new point: no stage yet, nothing timed."""
        self.current: Stage | None = None
        self.since = time.perf_counter()
        self.totals: dict[Stage, float] = {}
        self.owner = threading.get_ident()

    def enter(self, stage: Stage | None) -> Stage | None:
        """`stage` begins (None: the point ended); returns the stage that was running."""
        prev = self.current
        if stage is prev or threading.get_ident() != self.owner:
            return prev
        now = time.perf_counter()
        if prev is not None:
            self.totals[prev] = self.totals.get(prev, 0.0) + now - self.since
        self.current, self.since = stage, now
        if stage is not None and self.sink is not None:
            self.sink(stage)
        return prev

    def stop(self) -> dict[Stage, float]:
        """The point ended: each stage's seconds."""
        self.enter(None)
        return dict(self.totals)


CLOCK = Clock()


def timed(stage: Stage):
    """A method whose whole call is `stage`; the stage that ran before resumes after it."""
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            prev = CLOCK.enter(stage)
            try:
                return fn(*args, **kwargs)
            finally:
                if prev is not None:
                    CLOCK.enter(prev)
        return inner
    return wrap


def driven(observations) -> Iterator:
    """A mode's observations: the kernel's stage while the mode makes the next one (its calls,
    and its own work between them), the checks' while the caller judges it."""
    it = iter(observations)
    while True:
        CLOCK.enter(Stage.KERNEL)
        try:
            seen = next(it)
        except StopIteration:
            return
        _synchronize()
        CLOCK.enter(Stage.CHECKS)
        yield seen


def _synchronize() -> None:
    """The kernel's work done before its observation is judged: a kernel still running on the
    device would otherwise make the checks' first read wait, and be timed as kladder's."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
