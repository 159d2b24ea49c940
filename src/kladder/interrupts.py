"""Ctrl-C during a climb: the first SIGINT stops the climb where it is (a KeyboardInterrupt in
the main thread); every later one, and any SIGINT once the climb is closing its workers and
writing its report, only marks the climb interrupted. So a report is written whatever moment
the signal comes: before the first point, between points, while workers close, while the
report is written.

Why defer and not ignore: a SIGINT while the workers close must still mark the report
interrupted (the user asked to stop), and it must not tear the close or the write (a
KeyboardInterrupt in `proc.wait` left no report at all)."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


class Interrupts:
    """The SIGINT handler of one climb (install() makes it the process's handler)."""

    def __init__(self):
        self.seen = False          # a SIGINT arrived, raised or deferred
        self.deferring = False     # from now on a SIGINT only sets `seen`
        self._previous = None
        self._installed = False

    def __call__(self, signum, frame) -> None:
        self.seen = True
        if not self.deferring:
            self.deferring = True  # set before raising: a second Ctrl-C can never tear the clean-up
            raise KeyboardInterrupt

    @classmethod
    def current(cls) -> tuple["Interrupts", bool]:
        """(handler, owned): the one a caller (the CLI) installed, or a new one installed now,
        which the caller restores; signals reach only the main thread, so elsewhere a handler
        that is never called."""
        h = signal.getsignal(signal.SIGINT) if _main_thread() else None
        return (h, False) if isinstance(h, Interrupts) else (cls().install(), True)

    def install(self) -> "Interrupts":
        if _main_thread():
            self._previous = signal.signal(signal.SIGINT, self)
            self._installed = True
        return self

    def defer(self) -> None:
        self.deferring = True

    @contextmanager
    def held(self):
        """A step that must not be torn (a file made and its first record written): a SIGINT
        meanwhile waits for the step's end, then raises."""
        was = self.deferring
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = was
        if self.seen and not was:
            self.deferring = True
            raise KeyboardInterrupt

    def restore(self) -> None:
        """Back to the caller's handler: only when no SIGINT came (after one, a second Ctrl-C
        stays deferred until the caller has written the report and exits)."""
        if self._installed and not self.seen:
            signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)
            self._installed = False


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
