"""The re-run rules in one table (run/rerun.py): each rule's trigger fires on what it names and
on nothing else, its settle reports what it says, and the climb's Runner and a lane run points
again as the table says (a rule switched off there is not applied)."""
import dataclasses
import types

import pytest

import kladder as kl
from kladder.climbing.ladder import Runner
from kladder.core.outcome import Check, KernelError, Load, Outcome, Replay, Status
from kladder.core.point import Point
from kladder.run import faults, rerun
from kladder.run.rerun import FIRST_FAILURE, HEAP_CHECK, REPLAY, RULES, SERVER_LOST, UNDER_LOAD, Seen

SPEC = kl.Spec("copy", kernel=lambda x: x.clone(), reference=lambda x: x.clone(),
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 64)})
PT = Point("copy", 1, (("N", 8),))
ABA = Point("copy", 4, (("N", 8),), mode="aba", partner=(("dims", (("N", 4),)),))
RANKS = Point("copy", 6, (("N", 8),), mode="collective")


def _raised(point=PT) -> Outcome:
    """A failure that is replayed: the kernel raised."""
    return faults.kernel_error(SPEC, point, KernelError(RuntimeError("index out of range"), "call")).outcome


def _passed(point=PT) -> Outcome:
    return Outcome(point, Status.PASSED, seconds=0.1)


def test_the_table_names_five_rules_each_with_its_trigger_and_what_it_does():
    assert [r.name for r in RULES] == ["replay", "under_load", "first_failure", "heap_check", "server_lost"]
    assert all(r.trigger and r.does and callable(r.when) and callable(r.settle) for r in RULES)
    assert [(r.fresh, r.alone) for r in RULES] == [(False, False), (True, True), (True, False), (True, False), (True, False)]
    for r in RULES:                                      # the module's own table says each one
        assert r.name in rerun.__doc__


def test_replay_fires_on_a_failure_it_can_sample_again_and_nothing_else():
    assert REPLAY.when(Seen(PT, _raised()))
    assert not REPLAY.when(Seen(PT, _passed()))
    assert not REPLAY.when(Seen(PT, faults.hang(PT, 1.0)))              # a hang costs its whole timeout again
    assert not REPLAY.when(Seen(PT, faults.died(PT, -11, "")))          # a crash, a new worker
    assert all(c in rerun.NOT_REPLAYED for c in (Check.HANG, Check.CRASHED, Check.DEVICE_FAULT, Check.SANITIZER))


def test_replay_settles_failed_again_or_flaky():
    o = _raised()
    assert REPLAY.settle(Seen(PT, o), _raised()) is o and o.status == Status.FAILED and o.replay == Replay.FAILED_AGAIN
    o = _raised()
    REPLAY.settle(Seen(PT, o), _passed())
    assert o.status == Status.FLAKY and o.replay == Replay.FLAKY and o.replay_status == Status.PASSED


def test_under_load_fires_on_a_hang_crash_or_oom_beside_other_work_only():
    busy, idle = Load(lanes=1), Load(seconds=10.0)
    assert UNDER_LOAD.when(Seen(PT, faults.hang(PT, 1.0), busy))
    assert UNDER_LOAD.when(Seen(PT, faults.died(PT, -11, ""), Load(host_cpu_s=5.0, seconds=10.0)))   # half a core of others
    assert not UNDER_LOAD.when(Seen(PT, faults.hang(PT, 1.0), idle))    # nothing else ran: the hang is the kernel's
    assert not UNDER_LOAD.when(Seen(PT, _raised(), busy))               # not a load-sensitive failure
    assert not UNDER_LOAD.when(Seen(RANKS, faults.hang(RANKS, 1.0), busy))   # a collective's ranks: own processes
    assert not UNDER_LOAD.when(Seen(PT, faults.hang(PT, 1.0)))          # no load measured


def test_under_load_settles_as_faults_under_load_says():
    out = UNDER_LOAD.settle(Seen(PT, faults.hang(PT, 1.0), Load(lanes=2)), faults.hang(PT, 1.0))
    assert out.status == Status.FAILED and out.headline.check == Check.HANG and out.load.alone == Status.FAILED
    out = UNDER_LOAD.settle(Seen(PT, faults.died(PT, -11, ""), Load(lanes=1)), _passed())
    assert out.status == Status.FLAKY and out.load.alone == Status.PASSED


def _failed_again(point=PT) -> Outcome:
    o = _raised(point)
    o.replay = Replay.FAILED_AGAIN
    return o


def test_first_failure_fires_on_the_rungs_first_failure_seen_twice_only():
    assert FIRST_FAILURE.when(Seen(PT, _failed_again()))
    assert not FIRST_FAILURE.when(Seen(PT, _failed_again(), rung_failed=True))    # not the rung's first
    assert not FIRST_FAILURE.when(Seen(PT, _raised()))                            # not replayed (or flaky)
    assert not FIRST_FAILURE.when(Seen(ABA, _failed_again(ABA)))                  # it started fresh already
    assert not FIRST_FAILURE.when(Seen(RANKS, _failed_again(RANKS)))              # its own processes


def test_first_failure_settles_alone_passes_only_when_it_passes_alone():
    o = _failed_again()
    assert FIRST_FAILURE.settle(Seen(PT, o), _passed()) is o and o.replay == Replay.ALONE_PASSES
    o = _failed_again()
    FIRST_FAILURE.settle(Seen(PT, o), _raised())
    assert o.replay == Replay.FAILED_AGAIN and o.status == Status.FAILED


@pytest.mark.parametrize(("code", "fires"), [(-11, True), (-6, True), (-7, True), (-9, False), (3, False)])
def test_heap_check_fires_on_a_dead_worker_whose_signal_heap_damage_raises(code, fires):
    assert HEAP_CHECK.when(Seen(PT, faults.died(PT, code, ""), alive=False)) is fires
    assert not HEAP_CHECK.when(Seen(PT, faults.died(PT, code, ""), alive=True))   # the worker lived: no crash of its


def test_heap_check_settles_as_faults_after_heap_check():
    out = HEAP_CHECK.settle(Seen(PT, faults.died(PT, -11, ""), alive=False, earlier=3), _passed())
    assert out.status == Status.PASSED and out.warnings[0].check == Check.CRASHED_NOT_ALONE
    assert out.warnings[0].facts.earlier == 3
    out = HEAP_CHECK.settle(Seen(PT, faults.died(PT, -11, ""), alive=False), faults.died(PT, -6, ""))
    assert out.status == Status.FAILED and out.headline.facts.heap_checked


def test_server_lost_fires_on_a_lost_server_and_reports_the_rerun():
    again = _passed()
    assert SERVER_LOST.when(Seen(PT, lost=True)) and not SERVER_LOST.when(Seen(PT, _raised()))
    assert SERVER_LOST.settle(Seen(PT, lost=True), again) is again


# ---------------------------------------------------------------------------- the Runner reads the table
def _runner(monkeypatch, results):
    """A Runner whose lane runs answer `results` in turn; each run's (fresh, alone) is kept."""
    runner = Runner("copy.py::SPEC", SPEC, "cpu", pool=types.SimpleNamespace())
    runs = []

    def on_lane(point, timeout, fresh, alone=False, wait_memory=False):
        runs.append((fresh, alone))
        return results.pop(0)
    monkeypatch.setattr(runner, "_on_lane", on_lane)
    return runner, runs


def test_the_runner_replays_and_reruns_the_rungs_first_failure_as_the_table_says(monkeypatch):
    runner, runs = _runner(monkeypatch, [(_raised(), Load()), (_raised(), Load()), (_raised(), Load())])
    o = runner.run(PT)
    assert runs == [(False, False), (False, False), (True, False)]      # first, replay, first failure in a new worker
    assert o.status == Status.FAILED and o.replay == Replay.FAILED_AGAIN
    runner, runs = _runner(monkeypatch, [(_raised(), Load()), (_raised(), Load()), (_passed(), Load())])
    assert runner.run(PT).replay == Replay.ALONE_PASSES


def test_a_rule_switched_off_in_the_table_is_not_applied(monkeypatch):
    monkeypatch.setattr(rerun, "REPLAY", dataclasses.replace(REPLAY, when=lambda seen: False))
    monkeypatch.setattr(rerun, "FIRST_FAILURE", dataclasses.replace(FIRST_FAILURE, when=lambda seen: False))
    runner, runs = _runner(monkeypatch, [(_raised(), Load())])
    o = runner.run(PT)
    assert runs == [(False, False)] and o.status == Status.FAILED and o.replay is None


def test_the_runner_reruns_a_hang_under_load_alone_in_a_fresh_worker(monkeypatch):
    runner, runs = _runner(monkeypatch, [(faults.hang(PT, 1.0), Load(lanes=1)), (_passed(), Load())])
    o = runner.run(PT)
    assert runs == [(False, False), (True, True)]
    assert o.status == Status.PASSED and o.load.alone == Status.PASSED


# ---------------------------------------------------------------------------- replays settle per rung and check
def _pts(n, rung=1):
    return [Point("copy", rung, (("N", 8 + k),)) for k in range(n)]


def test_a_rungs_failures_of_a_check_settle_after_the_first_ones_each_failed_again(monkeypatch):
    from kladder.core.outcome import REPLAYS_TO_SETTLE
    from kladder.report import words
    pts = _pts(REPLAYS_TO_SETTLE + 2)
    answers = []
    for k, p in enumerate(pts):
        answers += [(_raised(p), Load())] * (3 if k == 0 else 2 if k < REPLAYS_TO_SETTLE else 1)
    runner, runs = _runner(monkeypatch, answers)
    out = [runner.run(p) for p in pts]
    # the first: run, replayed, run alone (first failure); the next two: run and replayed; the rest: run once
    assert len(runs) == 3 + 2 * (REPLAYS_TO_SETTLE - 1) + 2 and not answers
    assert [o.replay for o in out] == [Replay.FAILED_AGAIN] * REPLAYS_TO_SETTLE + [Replay.NOT_REPLAYED] * 2
    assert all(o.status == Status.FAILED for o in out)
    assert words.reason(out[-1]) == (f"not replayed: its rung's first {REPLAYS_TO_SETTLE} failures of this check "
                                     "were replayed and each failed again")


def test_one_flaky_replay_keeps_every_later_failure_of_its_check_replayed():
    from kladder.core.outcome import REPLAYS_TO_SETTLE
    tally = rerun.Replays()
    flaky = _raised()
    flaky.status, flaky.replay = Status.FLAKY, Replay.FLAKY
    tally.note(flaky)
    for p in _pts(REPLAYS_TO_SETTLE + 3):
        o = _raised(p)
        o.replay = Replay.FAILED_AGAIN
        tally.note(o)
    assert not tally.settled(_raised())


def test_settling_is_per_rung_and_per_check_and_never_for_what_passed():
    from kladder.core.outcome import REPLAYS_TO_SETTLE
    tally = rerun.Replays()
    for p in _pts(REPLAYS_TO_SETTLE):
        o = _raised(p)
        o.replay = Replay.FAILED_AGAIN
        tally.note(o)
    assert tally.settled(_raised(Point("copy", 1, (("N", 99),))))
    assert not tally.settled(_raised(Point("copy", 2, (("N", 99),))))          # another rung
    assert not tally.settled(_passed())
    hang = faults.hang(PT, 1.0)                                                 # another check (never replayed)
    assert hang.headline.check != _raised().headline.check and not tally.settled(hang)
    # one short of the count: not settled
    tally = rerun.Replays()
    for p in _pts(REPLAYS_TO_SETTLE - 1):
        o = _raised(p)
        o.replay = Replay.FAILED_AGAIN
        tally.note(o)
    assert not tally.settled(_raised())
