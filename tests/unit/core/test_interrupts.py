"""kladder.core.interrupts: the climb's signal handler as a state machine (the handler called
directly: no signal is sent), and the handlers it installs and puts back."""
import signal
import threading

import pytest

from kladder.core import interrupts
from kladder.core.interrupts import INTERRUPTED, Interrupted, Interrupts


@pytest.fixture(autouse=True)
def handlers_kept():
    """Every test leaves SIGINT's and SIGTERM's handlers as it found them."""
    was = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    yield
    for s, h in was.items():
        signal.signal(s, h)


def test_the_first_signal_raises_and_every_later_one_only_marks():
    h = Interrupts()
    with pytest.raises(Interrupted):
        h(signal.SIGINT, None)
    assert h.seen and h.deferring
    h(signal.SIGTERM, None)                 # a second Ctrl-C never tears the clean-up
    assert h.seen


def test_interrupted_is_caught_as_a_keyboard_interrupt_but_is_not_one_itself():
    assert issubclass(Interrupted, KeyboardInterrupt) and Interrupted is not KeyboardInterrupt


def test_check_raises_a_swallowed_signal_again_until_the_climb_closes():
    h = Interrupts()
    h.check()                               # nothing seen: nothing raised
    with pytest.raises(Interrupted):
        h(signal.SIGINT, None)              # ... and some library swallowed it
    with pytest.raises(Interrupted):
        h.check()
    with pytest.raises(Interrupted):
        h.check()                           # every step after it, until the climb closes
    h.defer()
    h.check()                               # closing: a signal only marks the report
    assert h.closing and h.seen


def test_after_defer_a_signal_only_marks():
    h = Interrupts()
    h.defer()
    h(signal.SIGINT, None)
    assert h.seen
    h.check()


def test_held_waits_for_the_steps_end_then_raises():
    h = Interrupts()
    steps = []
    with pytest.raises(Interrupted), h.held():
        h(signal.SIGINT, None)          # inside: deferred
        steps.append("finished")
    assert steps == ["finished"] and h.deferring


def test_a_nested_held_leaves_the_raise_to_the_outer_one():
    h = Interrupts()
    steps = []
    with pytest.raises(Interrupted), h.held():
        with h.held():
            h(signal.SIGINT, None)
        steps.append("inner closed")
    assert steps == ["inner closed"]


def test_held_without_a_signal_restores_the_state_and_raises_nothing():
    h = Interrupts()
    with h.held():
        assert h.deferring
    assert not h.deferring and not h.seen
    with pytest.raises(Interrupted):        # the handler raises again afterwards
        h(signal.SIGINT, None)


def test_held_inside_a_deferred_climb_never_raises():
    h = Interrupts()
    h.defer()
    with h.held():
        h(signal.SIGINT, None)
    assert h.seen and h.deferring


def test_signalled_is_whether_the_installed_climb_handler_saw_a_signal():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    assert not interrupts.signalled()                 # no climb's handler
    h = Interrupts().install()
    assert not interrupts.signalled()
    with pytest.raises(Interrupted):
        h(signal.SIGTERM, None)
    assert interrupts.signalled()
    h.seen = False
    assert not interrupts.signalled()


def test_a_signal_raised_in_a_finalizer_prints_nothing_and_check_raises_it_again(capsys, monkeypatch):
    import gc
    import sys
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    h = Interrupts().install()

    class Finalized:
        def __init__(self, raise_):
            self.raise_ = raise_

        def __del__(self):
            self.raise_()

    Finalized(lambda: h(signal.SIGTERM, None))   # the signal lands in a finalizer: Python cannot raise it there
    gc.collect()
    assert capsys.readouterr().err == "" and h.seen
    with pytest.raises(Interrupted):
        h.check()                                 # not lost: the climb stops at its next step
    Finalized(lambda: 1 / 0)                      # anyone else's unraisable error is printed as before
    gc.collect()
    assert "ZeroDivisionError" in capsys.readouterr().err
    Interrupts().install()
    assert not isinstance(sys.unraisablehook.previous, interrupts._Unraisable)   # wrapped once


def test_install_and_restore_put_back_the_callers_handlers():
    def mine(s, f):
        pass
    signal.signal(signal.SIGINT, mine)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    h = Interrupts().install()
    assert signal.getsignal(signal.SIGINT) is h and signal.getsignal(signal.SIGTERM) is h
    h.restore()
    assert signal.getsignal(signal.SIGINT) is mine and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    h.restore()                             # twice: nothing more
    assert signal.getsignal(signal.SIGINT) is mine


def test_install_of_sigint_alone_leaves_sigterm_to_the_caller():
    before = signal.getsignal(signal.SIGTERM)
    h = Interrupts().install((signal.SIGINT,))
    assert signal.getsignal(signal.SIGINT) is h and signal.getsignal(signal.SIGTERM) == before
    h.restore()


def test_after_a_signal_restore_keeps_the_handler_so_a_second_one_stays_deferred():
    h = Interrupts().install()
    with pytest.raises(Interrupted):
        h(signal.SIGINT, None)
    h.restore()
    assert signal.getsignal(signal.SIGINT) is h and signal.getsignal(signal.SIGTERM) is h


def test_current_takes_the_callers_handler_or_installs_one_the_caller_owns():
    h = Interrupts().install()
    assert Interrupts.current() == (h, False)
    h.restore()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    new, owned = Interrupts.current()
    assert owned and new is not h and signal.getsignal(signal.SIGINT) is new
    assert signal.getsignal(signal.SIGTERM) is not new          # a caller's program keeps its SIGTERM
    new.restore()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_check_current_checks_the_installed_handler_only():
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.check_current()              # no climb handler: nothing
    h = Interrupts().install()
    interrupts.check_current()
    h.seen = True
    with pytest.raises(Interrupted):
        interrupts.check_current()


def test_off_the_main_thread_nothing_is_installed_and_nothing_checked():
    seen = {}

    def run():
        h = Interrupts().install()
        seen["installed"] = h._installed
        got, owned = Interrupts.current()
        seen["owned"] = owned and not got._installed
        interrupts.check_current()
        interrupts.python_defaults()
        interrupts.install_early()
        got.ignore()
    before = signal.getsignal(signal.SIGINT)
    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == {"installed": False, "owned": True}
    assert signal.getsignal(signal.SIGINT) is before


def test_ignore_leaves_both_signals_ignored():
    Interrupts().ignore()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN == signal.getsignal(signal.SIGTERM)


def test_early_ends_the_process_as_interrupted_and_ignores_the_signals_after(capsys, monkeypatch):
    class Ended(BaseException):
        pass

    def exit_(code):
        raise Ended(code)
    monkeypatch.setattr(interrupts, "_exit", exit_)          # os._exit: at once, nothing raised to be caught
    interrupts.install_early()
    assert signal.getsignal(signal.SIGINT) is interrupts.early is signal.getsignal(signal.SIGTERM)
    with pytest.raises(Ended) as e:
        interrupts.early(signal.SIGTERM, None)
    assert e.value.args == (INTERRUPTED,) and INTERRUPTED == 130
    assert capsys.readouterr().err == "kladder: interrupted\n"
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN == signal.getsignal(signal.SIGTERM)


def test_python_defaults_are_pythons_own_handlers():
    interrupts.install_early()
    interrupts.python_defaults()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
