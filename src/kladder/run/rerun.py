"""When a point is run again before its result is reported: the rules, in one table.

Each rule names its trigger (what the first run saw) and what it does (where the point runs
again, and what the two results make). The code that runs points reads the table: the climb's
Runner (ladder.py: REPLAY, UNDER_LOAD, FIRST_FAILURE) and a lane (run/pool.py: HEAP_CHECK,
SERVER_LOST) ask a rule's `when` whether it applies and its `settle` what is reported; `fresh`
(a new worker) and `alone` (the climb's other lanes held back meanwhile) say where it runs.

  rule           trigger                                       again                         reported
  replay         a failure, but a hang, crash, device fault,   once more, as its first run   failing again: failed again;
                 failed capture, model, hung ranks,            ran (a fresh worker for a     else flaky, with the
                 repetition, stream or sanitizer one (each     point that starts fresh)      replay's status; not run
                 costs its whole time again, or samples its                                  again (settled): not_replayed
                 own rate already), until its rung's failures
                 of its check are settled (Replays: the first
                 REPLAYS_TO_SETTLE each failed again, none flaky)
  under_load     a hang, crash, device fault or out of         alone in a fresh worker,      faults.under_load: failing
                 memory while other work used the device or    the other lanes held back     alone too, the first stands;
                 the host (sampling.busy), but not a mode      (after others' memory frees,  else a warning, flaky or not
                 whose calls all run in processes of their     when it ended for memory)     judged, as the cause says
                 own (a collective's ranks)
  first_failure  its rung's first failure, failed again when   alone in a fresh worker, as   passing there: marked
                 replayed, not a point that starts fresh or    its repro runs it             alone_passes (it depends on
                 runs in processes of its own                                                earlier points' state)
  heap_check     the worker died of SIGABRT, SIGSEGV or        in a new worker with glibc's  faults.after_heap_check:
                 SIGBUS (heap damage), not a rank's            malloc checks on              crashed again, the kernel's;
                                                                                             else the re-run's verdict and
                                                                                             the crash as a warning
  server_lost    the fork server died before a forked          in a worker started afresh,   the re-run's outcome
                 worker's exit status was known                never forked
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from ..core.outcome import REPLAYS_TO_SETTLE, Check, Load, Outcome, Replay, Status
from ..core.point import Point
from . import faults, modes, sampling


@dataclass
class Seen:
    """What the first run saw, as the triggers read it."""
    point: Point
    outcome: Outcome | None = None
    load: Load | None = None              # what else used the device or the host meanwhile
    alive: bool = True                    # the worker lived through the point
    earlier: int = 0                      # points the worker ran before this one
    rung_failed: bool = False             # an earlier point of its rung failed already
    lost: bool = False                    # the fork server died under the worker (forkclient.ServerLost)
    settled: bool = False                 # its rung's failures of its check are settled (Replays.settled)


@dataclass(frozen=True)
class Rule:
    name: str
    trigger: str                          # when it applies, in words
    does: str                             # where the point runs again and what is reported, in words
    fresh: bool                           # again in a new worker (else as the first run ran)
    alone: bool                           # the climb's other lanes held back meanwhile
    when: Callable[[Seen], bool]          # the trigger
    settle: Callable[..., Outcome]        # (seen, again, again_load=None) -> the outcome reported


# A hang costs its whole timeout again, a crash or a device fault a new worker, a model point
# the whole model again (a minute under the interpreter; the model's forward is seeded and
# deterministic, and repeating a kernel is rung 5's work), hung ranks a collective's watchdog
# again, a rung-5 repetition its own rate over many calls (a replay would only sample it again),
# a sanitizer run a minute of tool time: reported as seen. Every other failure is replayed once.
NOT_REPLAYED = (Check.HANG, Check.CRASHED, Check.DEVICE_FAULT, Check.CAPTURE, Check.MODEL, Check.RANKS_HUNG,
                Check.REPEATS, Check.STREAM, Check.SANITIZER)


def _failed(seen: Seen) -> bool:
    return seen.outcome is not None and seen.outcome.status == Status.FAILED


def _kind_replayed(seen: Seen) -> bool:
    return _failed(seen) and seen.outcome.headline.check not in NOT_REPLAYED


def _replayable(seen: Seen) -> bool:
    return _kind_replayed(seen) and not seen.settled


def not_replayed(seen: Seen) -> Outcome | None:
    """The outcome, marked so, of a failure REPLAY would replay but for its rung's failures of its
    check being settled already; else the outcome as it was."""
    if _kind_replayed(seen) and seen.settled:
        seen.outcome.replay = Replay.NOT_REPLAYED
    return seen.outcome


class Replays:
    """Per rung and check, what the replays of its failures showed: once REPLAYS_TO_SETTLE of them
    each failed again and none was flaky, the rung's further failures of that check are settled
    (not replayed). One flaky replay and every later failure of that check is replayed. Lanes
    share it: a point whose replay was decided before the count was reached is still replayed."""

    def __init__(self):
        self._lock = threading.Lock()
        self._tally: dict[tuple[int, str], list] = {}      # (rung, check) -> [failed again, flaky seen]

    @staticmethod
    def _key(outcome: Outcome) -> tuple[int, str]:
        return outcome.point.rung, str(outcome.headline.check)

    def settled(self, outcome: Outcome | None) -> bool:
        if outcome is None or outcome.status != Status.FAILED or outcome.headline is None:
            return False
        with self._lock:
            again, flaky = self._tally.get(self._key(outcome), (0, False))
        return again >= REPLAYS_TO_SETTLE and not flaky

    def note(self, outcome: Outcome) -> None:
        """A replayed failure's settled outcome (failed again, or flaky)."""
        if outcome.replay not in (Replay.FAILED_AGAIN, Replay.FLAKY) or outcome.headline is None:
            return
        with self._lock:
            t = self._tally.setdefault(self._key(outcome), [0, False])
            t[0] += outcome.replay == Replay.FAILED_AGAIN
            t[1] = t[1] or outcome.replay == Replay.FLAKY


def _replayed(seen: Seen, again: Outcome, again_load: Load | None = None) -> Outcome:
    """A failure that does not recur is flaky, reported with its observed rate."""
    first = seen.outcome
    if again.status == Status.FAILED:
        first.replay = Replay.FAILED_AGAIN
    else:
        first.status, first.replay, first.replay_status = Status.FLAKY, Replay.FLAKY, again.status
    return first


def _own_processes(point: Point) -> bool:
    return modes.traits(point.mode).own_processes


def _under_load(seen: Seen) -> bool:
    return (seen.outcome is not None and seen.load is not None and faults.load_sensitive(seen.outcome)
            and sampling.busy(seen.load) and not _own_processes(seen.point))


def _settled_under_load(seen: Seen, again: Outcome, again_load: Load | None = None) -> Outcome:
    return faults.under_load(seen.outcome, again, seen.load, again_load)


def _first_failure(seen: Seen) -> bool:
    return (_failed(seen) and seen.outcome.replay == Replay.FAILED_AGAIN and not seen.rung_failed
            and not modes.traits(seen.point.mode).starts_fresh(seen.point) and not _own_processes(seen.point))


def _alone(seen: Seen, again: Outcome, again_load: Load | None = None) -> Outcome:
    """The rung's first failure re-run alone in a new worker, as its repro command runs it. If
    it passes there, the failure depends on state left by earlier points in the worker: real (a
    server is a long-lived process) but rung 4's gap, and the repro will pass."""
    if again.status == Status.PASSED:
        seen.outcome.replay = Replay.ALONE_PASSES
    return seen.outcome


def _heap_damage(seen: Seen) -> bool:
    return seen.outcome is not None and not seen.alive and faults.looks_like_heap_damage(seen.outcome)


def _heap_checked(seen: Seen, again: Outcome, again_load: Load | None = None) -> Outcome:
    return faults.after_heap_check(seen.outcome, again, seen.earlier)


def _again(seen: Seen, again: Outcome, again_load: Load | None = None) -> Outcome:
    return again


REPLAY = Rule(
    "replay", trigger="a failure other than a hang, crash, device fault, failed capture, model, hung ranks, "
                      "repetition, stream or sanitizer one, while its rung's failures of its check are not settled "
                      f"({REPLAYS_TO_SETTLE} replayed and failed again, none flaky)",
    does="run once more as its first run ran; failing again it is marked failed again, else it is flaky; a "
         "settled one is not run again and is marked not replayed",
    fresh=False, alone=False, when=_replayable, settle=_replayed)
UNDER_LOAD = Rule(
    "under_load", trigger="a hang, crash, device fault or out of memory while other work used the device or the "
                          "host, in a mode whose calls do not all run in processes of their own",
    does="run again alone in a fresh worker, the other lanes held back (after others' memory frees when it ended "
         "for memory); faults.under_load says what the two runs make",
    fresh=True, alone=True, when=_under_load, settle=_settled_under_load)
FIRST_FAILURE = Rule(
    "first_failure", trigger="its rung's first failure, failed again when replayed, in a point that neither starts "
                             "fresh nor runs in processes of its own",
    does="run again in a fresh worker, as its repro runs it; passing there it is marked alone_passes",
    fresh=True, alone=False, when=_first_failure, settle=_alone)
HEAP_CHECK = Rule(
    "heap_check", trigger="the worker died of SIGABRT, SIGSEGV or SIGBUS (heap damage), not a rank",
    does="run again in a new worker with glibc's malloc checks on; crashed again it is the kernel's crash, else "
         "the re-run's verdict stands with the crash as a warning (faults.after_heap_check)",
    fresh=True, alone=False, when=_heap_damage, settle=_heap_checked)
SERVER_LOST = Rule(
    "server_lost", trigger="the fork server died before a forked worker's exit status was known",
    does="run again in a worker started afresh, never forked; its outcome is reported",
    fresh=True, alone=False, when=lambda seen: seen.lost, settle=_again)

RULES = (REPLAY, UNDER_LOAD, FIRST_FAILURE, HEAP_CHECK, SERVER_LOST)
