"""Ctrl-C (SIGINT) and SIGTERM during a climb, to the process alone or to its group: the first
stops the climb where it is (a KeyboardInterrupt in the main thread); every later one, and any
once the climb is closing its workers and writing its report, only marks the climb interrupted.
So a report is written whatever moment the signal comes: before the first point, between
points, while workers close, while the report is written. SIGTERM is treated as SIGINT (a CI
runner's cancel, `timeout`, a batch scheduler): the report so far, exit status 130.

Why defer and not ignore: a signal while the workers close must still mark the report
interrupted (the user asked to stop), and it must not tear the close or the write (a
KeyboardInterrupt in `proc.wait` left no report at all).

Why `check`: a KeyboardInterrupt raised in the main thread can be lost on the way: a library's
`except BaseException`, a finalizer or `__del__` running when the signal arrived (Python prints
"Exception ignored" and goes on), an import that catches and retries. The handler's `seen` is the
truth: the climb calls `check()` between its steps, which raises again where it was swallowed,
so no signal is ever lost (one was: a climb SIGINTed 3 s after its start ran all 17 points).

Before the climb's handler exists (the interpreter's start, kladder's own imports) the CLI's
`early` handler ends the process at once with status 130 and nothing written; the climb replaces
it with its own as its first step."""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)
INTERRUPTED = 130           # results.INTERRUPTED: as a shell reports a process ended by SIGINT


class Interrupted(KeyboardInterrupt):
    """The climb's signal, raised in the main thread (every `except KeyboardInterrupt` takes it).
    A subclass, not KeyboardInterrupt itself: CPython marks a KeyboardInterrupt (that very type)
    passing through code an extension runs with PyRun_String as unhandled, and a process so
    marked kills itself with SIGINT at its exit whatever status it chose: 1 in 4 climbs SIGTERMed
    during their imports exited -2 instead of 130 (measured) with a report that said 130."""


class Interrupts:
    """The SIGINT and SIGTERM handler of one climb (install() makes it the process's handler)."""

    def __init__(self):
        self.seen = False          # a signal arrived, raised or deferred
        self.deferring = False     # from now on a signal only sets `seen`
        self.closing = False       # the climb is closing (defer()): `check` no longer raises
        self._previous: dict = {}
        self._installed = False

    def __call__(self, signum, frame) -> None:
        self.seen = True
        if not self.deferring:
            self.deferring = True  # set before raising: a second Ctrl-C can never tear the clean-up
            raise Interrupted

    def check(self) -> None:
        """Between the climb's steps: a signal whose KeyboardInterrupt was swallowed on its way
        (see the module's note) stops the climb now."""
        if self.seen and not self.closing:
            self.deferring = True
            raise Interrupted

    @classmethod
    def current(cls) -> tuple["Interrupts", bool]:
        """(handler, owned): the one a caller (the CLI) installed, or a new one installed now,
        which the caller restores; signals reach only the main thread, so elsewhere a handler
        that is never called."""
        h = installed()
        return (h, False) if h is not None else (cls().install((signal.SIGINT,)), True)

    def install(self, signals: tuple = SIGNALS) -> "Interrupts":
        """This handler for `signals`: SIGINT and SIGTERM for the CLI, which owns its process;
        SIGINT alone where a caller's program climbs (kl.climb), whose SIGTERM stays its own."""
        if _main_thread():
            for sig in signals:
                self._previous[sig] = signal.signal(sig, self)
            self._installed = True
            _quiet_unraisable()
        return self

    def defer(self) -> None:
        self.deferring = True
        self.closing = True

    @contextmanager
    def held(self):
        """A step that must not be torn (a file made and its first record written): a signal
        meanwhile waits for the step's end, then raises."""
        was = self.deferring
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = was
        if self.seen and not was:
            self.deferring = True
            raise Interrupted

    def restore(self) -> None:
        """Back to the caller's handlers: only when no signal came (after one, a second stays
        deferred until the caller has written the report and exits)."""
        if self._installed and not self.seen:
            for sig, previous in self._previous.items():
                signal.signal(sig, previous if previous is not None else signal.default_int_handler
                              if sig == signal.SIGINT else signal.SIG_DFL)
            self._installed = False

    def ignore(self) -> None:
        """The report is written: from here on a signal ends nothing half-way (Python's shutdown
        would put back the default handler, ending the process with the report saying otherwise)."""
        if _main_thread():
            for sig in SIGNALS:
                signal.signal(sig, signal.SIG_IGN)


class _Unraisable:
    """sys.unraisablehook that passes over the climb's own Interrupted: raised where Python cannot
    propagate it (a finalizer, a weakref callback: importlib's module-lock `cb` while a module
    imports), it printed "Exception ignored in: ... Traceback ... Interrupted" on stderr (once in a
    whole suite's 40 signalled climbs under load); the handler's `seen` stays set and `check()`
    raises it again, so it is not lost. Every other unraisable exception goes to the hook before."""

    def __init__(self, previous):
        self.previous = previous

    def __call__(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, Interrupted):
            return
        self.previous(unraisable)


def _quiet_unraisable() -> None:
    if not isinstance(sys.unraisablehook, _Unraisable):
        sys.unraisablehook = _Unraisable(sys.unraisablehook)


def early(signum, frame) -> None:
    """The CLI's handler until a climb installs its own (its imports, its options): nothing is
    written yet, so the process ends at once, without a traceback, as interrupted. At once, not
    by raising SystemExit: raised where the signal lands, it can be wrapped (a dataclass field's
    __set_name__ while a module imports: "RuntimeError: Error calling __set_name__", a traceback
    and exit status 1, 1 in 20 climbs SIGINTed at their start under load on 2026-12-07) or
    swallowed on its way (an `except BaseException`, a finalizer), and the process ran on with the
    signals ignored."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is sys.stderr:
                stream.write("kladder: interrupted\n")
            stream.flush()
        except (OSError, ValueError, AttributeError):     # closed, or None (no console)
            pass
    _exit(INTERRUPTED)


_exit = os._exit            # (the unit tests replace it)


def install_early() -> None:
    if _main_thread():
        for sig in SIGNALS:
            signal.signal(sig, early)


def python_defaults() -> None:
    """Python's own handlers back (a KeyboardInterrupt on SIGINT; SIGTERM ends the process), for
    a command that is not one climb: bisect and the zoo's every-case climb catch Ctrl-C themselves."""
    if _main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def installed() -> Interrupts | None:
    """The climb's handler this process has installed for SIGINT, seen from the main thread
    (signals reach only it); None elsewhere or where none is."""
    h = signal.getsignal(signal.SIGINT) if _main_thread() else None
    return h if isinstance(h, Interrupts) else None


def check_current() -> None:
    """`check()` of the climb's handler where one is installed (the Runner's waits, which hold no
    handle on it); nothing elsewhere."""
    h = installed()
    if h is not None:
        h.check()


def signalled() -> bool:
    """A signal reached the climb's handler, where one is installed: an exception raised since is the
    signal's (on Python 3.11 one raised inside a class's __set_name__ while a module imports comes
    out as "RuntimeError: Error calling __set_name__"), to be reported as an interruption."""
    h = installed()
    return h is not None and h.seen
