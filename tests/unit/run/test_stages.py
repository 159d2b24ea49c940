"""run/stages.py on a fake clock: a boundary gives the time since the last one to the stage that
ended, the sink hears each change once, only the owning thread moves the clock, `timed` resumes
the stage that ran before, `driven` alternates the kernel's and the checks' stages."""
import threading

import pytest
from hypothesis import given, settings, strategies as st

from kladder.core.outcome import Stage
from kladder.run import stages
from kladder.run.stages import Clock


class Tick:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


@pytest.fixture
def tick(monkeypatch):
    t = Tick()
    monkeypatch.setattr(stages.time, "perf_counter", t)
    return t


@pytest.fixture
def clock(monkeypatch, tick):
    c = Clock()
    monkeypatch.setattr(stages, "CLOCK", c)
    return c


def test_each_stage_gets_the_time_until_the_next_boundary_summed_over_its_visits(clock, tick):
    heard = []
    clock.sink = heard.append
    assert clock.enter(Stage.INPUTS) is None
    tick.t += 2.0
    assert clock.enter(Stage.KERNEL) is Stage.INPUTS
    tick.t += 0.5
    clock.enter(Stage.INPUTS)
    tick.t += 1.0
    assert clock.stop() == {Stage.INPUTS: 3.0, Stage.KERNEL: 0.5}
    assert heard == [Stage.INPUTS, Stage.KERNEL, Stage.INPUTS]       # the end (None) is not sent


def test_entering_the_running_stage_again_is_no_boundary_and_sends_nothing(clock, tick):
    heard = []
    clock.sink = heard.append
    clock.enter(Stage.KERNEL)
    for _ in range(1000):                      # a mode calling the kernel in a row
        tick.t += 0.001
        clock.enter(Stage.KERNEL)
    assert heard == [Stage.KERNEL]
    assert clock.stop() == {Stage.KERNEL: pytest.approx(1.0)}


def test_another_thread_does_not_move_the_points_clock(clock, tick):
    clock.enter(Stage.CHECKS)
    seen = []
    t = threading.Thread(target=lambda: seen.append(clock.enter(Stage.KERNEL)))
    t.start()
    t.join()
    assert seen == [Stage.CHECKS] and clock.current is Stage.CHECKS


def test_reset_forgets_the_last_point(clock, tick):
    clock.enter(Stage.INPUTS)
    tick.t += 5
    clock.reset()
    tick.t += 1
    clock.enter(Stage.CHECKS)
    tick.t += 1
    assert clock.stop() == {Stage.CHECKS: 1.0}
    assert clock.stop() == {Stage.CHECKS: 1.0} and clock.current is None


def test_timed_runs_its_stage_and_resumes_the_one_before_even_when_it_raises(clock, tick):
    @stages.timed(Stage.REFERENCE)
    def reference(fail):
        tick.t += 3.0
        if fail:
            raise ValueError("x")
        return "ref"

    clock.enter(Stage.CHECKS)
    assert reference(False) == "ref" and clock.current is Stage.CHECKS
    with pytest.raises(ValueError):
        reference(True)
    assert clock.current is Stage.CHECKS
    assert clock.stop() == {Stage.CHECKS: 0.0, Stage.REFERENCE: 6.0}   # no time passed in the checks
    assert reference.__name__ == "reference"


def test_timed_outside_any_stage_leaves_its_own_running(clock, tick):
    @stages.timed(Stage.INPUTS)
    def prepare():
        return 1
    prepare()
    assert clock.current is Stage.INPUTS                 # nothing ran before it to resume


def test_driven_times_making_an_observation_as_the_kernels_and_judging_it_as_the_checks(clock, tick):
    def observe():
        tick.t += 1.0                  # the mode's calls
        yield "a"
        tick.t += 2.0
        yield "b"
        tick.t += 0.25                 # its work after the last one
    for seen in stages.driven(observe()):
        assert clock.current is Stage.CHECKS
        tick.t += 10.0 if seen == "a" else 20.0
    assert clock.stop() == {Stage.KERNEL: 3.25, Stage.CHECKS: 30.0}


def test_driven_over_nothing_yields_nothing_and_leaves_the_kernels_stage(clock, tick):
    assert list(stages.driven([])) == []
    assert clock.current is Stage.KERNEL


STEPS = st.lists(st.tuples(st.sampled_from([*Stage, None]), st.integers(0, 1000)), max_size=30)


@settings(max_examples=50, deadline=None)
@given(steps=STEPS)
def test_every_tick_goes_to_the_stage_running_then_and_the_sink_hears_each_change_once(steps):
    tick = Tick()
    clock = Clock()
    was = stages.time.perf_counter
    stages.time.perf_counter = tick
    try:
        clock.reset()
        heard, running, want, changes = [], None, {}, []
        clock.sink = heard.append
        for stage, dt in steps:
            if stage is not running and stage is not None:
                changes.append(stage)
            clock.enter(stage)
            running = stage
            tick.t += dt / 1000
            if running is not None:
                want[running] = want.get(running, 0) + dt / 1000
        got = clock.stop()
    finally:
        stages.time.perf_counter = was
    assert heard == changes
    assert set(got) <= set(want) and all(got[s] == pytest.approx(want[s]) for s in got)
    assert all(want[s] == 0 for s in set(want) - set(got))
