"""run/waits.py on a fake clock: a wait counts for the rung of the point its thread works for,
waits under MIN_S are dropped, `now` lists the waits in progress longest first, `of_rung` sums
them in Wait's order, and a block may change what it waited for."""
import threading

import pytest

from kladder.core.outcome import Wait, Waited
from kladder.core.point import Point
from kladder.run import waits as waits_mod
from kladder.run.waits import Waits, waiting

R4 = Point("s", 4, (("N", 4),))
R5 = Point("s", 5, (("N", 8),))


class Tick:
    def __init__(self):
        self.t = 50.0

    def __call__(self):
        return self.t


@pytest.fixture
def tick(monkeypatch):
    t = Tick()
    monkeypatch.setattr(waits_mod.time, "monotonic", t)
    return t


def test_waits_count_for_their_points_rung_summed_and_counted(tick):
    w = Waits()
    with w.point(R4):
        for s in (1.0, 0.5):
            with w.on(Wait.WORKER):
                tick.t += s
        with w.on(Wait.FORK_SERVER):
            tick.t += 2.0
    with w.point(R5), w.on(Wait.WORKER):
        tick.t += 7.0
    assert w.of_rung(4) == [Waited(Wait.FORK_SERVER, 2.0, 1), Waited(Wait.WORKER, 1.5, 2)]   # Wait's order
    assert w.of_rung(5) == [Waited(Wait.WORKER, 7.0, 1)]
    assert w.of_rung(6) == []


def test_a_wait_under_min_s_did_not_happen_and_one_at_it_did(tick):
    w = Waits()
    with w.point(R4):
        with w.on(Wait.DEVICE):
            tick.t += waits_mod.MIN_S * 0.99
        assert w.of_rung(4) == []
        with w.on(Wait.DEVICE):
            tick.t += 0.125
    assert w.of_rung(4) == [Waited(Wait.DEVICE, 0.125, 1)]


def test_a_wait_outside_a_point_counts_for_rung_0_and_names_no_point(tick):
    w = Waits()
    with w.on(Wait.HELD):
        assert w.now() == [(Wait.HELD, 0.0, "")]
        tick.t += 1.0
    assert w.of_rung(0) == [Waited(Wait.HELD, 1.0, 1)] and w.now() == []


def test_now_lists_waits_in_progress_longest_first_with_their_points(tick):
    w = Waits()
    with w.point(R4), w.on(Wait.IN_FLIGHT):
        tick.t += 3.0
        with w.point(R5), w.on(Wait.WORKER):
            tick.t += 1.0
            assert w.now() == [(Wait.IN_FLIGHT, 4.0, R4.id), (Wait.WORKER, 1.0, R5.id)]
        assert [x[0] for x in w.now()] == [Wait.IN_FLIGHT]


def test_the_block_may_say_it_waited_for_something_else_and_counts_there(tick):
    w = Waits()
    with w.point(R4), w.on(Wait.WORKER) as x:
        tick.t += 3.0
        x.wait = Wait.DEVICE
    assert w.of_rung(4) == [Waited(Wait.DEVICE, 3.0, 1)]


def test_a_wait_that_raises_still_counts_and_leaves_now(tick):
    w = Waits()
    with pytest.raises(RuntimeError), w.point(R5), w.on(Wait.WORKER):
        tick.t += 0.5
        raise RuntimeError("x")
    assert w.now() == [] and w.of_rung(5) == [Waited(Wait.WORKER, 0.5, 1)]


def test_the_point_is_the_threads_own(tick):
    w = Waits()
    done = threading.Event()

    def other():
        with w.on(Wait.WORKER):
            tick.t += 1.0
        done.set()
    with w.point(R5):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert done.is_set() and w.of_rung(0) == [Waited(Wait.WORKER, 1.0, 1)] and w.of_rung(5) == []


def test_waiting_without_a_recorder_yields_none_and_with_one_records(tick):
    with waiting(None, Wait.WORKER) as x:
        assert x is None
    w = Waits()
    with waiting(w, Wait.WORKER) as x:
        assert x.wait == Wait.WORKER
        tick.t += 1.0
    assert w.of_rung(0) == [Waited(Wait.WORKER, 1.0, 1)]
