"""The facts of `kladder diff` (history/diff.py; words: report/history_text.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .base import Facts, Json


@dataclass(frozen=True, kw_only=True)
class DiffClimbFacts(Facts, part=True):
    """One of the two climbs a diff compares, as the history holds it."""
    id: int                                     # its number (#N in `kladder history`)
    run_id: str | None
    spec: str
    started: str | None
    ended: str | None                           # None: unfinished (killed, or still running)
    verdict: str | None
    git_commit: str | None                      # the kernel's repository's commit, when there is one
    kladder_version: str | None
    toolchain: dict[str, Json]                  # history/store.toolchain


@dataclass(frozen=True, kw_only=True)
class DiffPointFacts(Facts, part=True):
    """A point both climbs ran, its status in each (and the headline check's name)."""
    id: str
    rung: int
    before: str
    after: str
    failure_before: str | None
    failure_after: str | None


@dataclass(frozen=True, kw_only=True)
class DiffBitsFacts(DiffPointFacts, part=True):
    """A point with the same status in both climbs and other output bits."""
    outputs: list[str]                          # the outputs whose hashes differ


@dataclass(frozen=True, kw_only=True)
class SlowerRungFacts(Facts, part=True):
    """A rung slower beyond noise: its points paired, the median ratio of their seconds (the
    kernel's stage where both climbs timed it), a one-sided Wilcoxon signed-rank test of the log
    ratios, and the spread each climb measured within itself: the median stretch of its points'
    times by waiting for a CPU (seconds / (seconds - the worker's run-queue wait)), which the ratio
    exceeds (history/diff.py)."""
    rung: int
    ratio: float                                # the median per-point ratio, later / earlier
    p: float
    pairs: int
    before_s: float                             # the paired points' seconds in all, in each climb
    after_s: float
    spread_a: float                             # each climb's own spread (1.0: its points never waited)
    spread_b: float
    kernel_stage: bool                          # the kernel's stage was timed (else the points' whole seconds)


@dataclass(frozen=True, kw_only=True)
class ClimbLoadFacts(Facts, part=True):
    """What else used the host and the device while one climb's points ran (outcome.Load of each
    point's run, as the history keeps it; history/diff.py sums them)."""
    points: int                                 # points whose load was recorded
    seconds: float                              # their wall time in all
    others_cores: float                         # other processes' CPU seconds a second: the cores they kept busy
    wait_share: float                           # the share of that time the points' workers waited for a CPU
    lanes: float                                # other lanes of the climb running meanwhile, on average (--jobs)
    device_processes: float                     # other processes on the device, on average (CUDA; 0 where not asked)


@dataclass(frozen=True, kw_only=True)
class TimingFacts(Facts, part=True):
    """Whether `kladder diff` compared the climbs' timings: only on the same device with comparable
    load (history/diff.py's limits); `why` names what stopped it: `device` (another device),
    `load` (other processes, waits, lanes or device processes differed past the limits),
    `not_recorded` (a climb from a kladder that did not record its points' load)."""
    compared: bool
    why: Literal["compared", "device", "load", "not_recorded"]
    device_a: str | None                        # the device each ran on (its name where known)
    device_b: str | None
    load_a: ClimbLoadFacts | None
    load_b: ClimbLoadFacts | None
    differed: list[str]                         # why `load`: the ClimbLoadFacts fields past their limits


@dataclass(frozen=True, kw_only=True)
class DiffFacts(Facts, part=True):
    """`kladder diff A B`: what changed from climb A to the later climb B of one spec."""
    a: DiffClimbFacts
    b: DiffClimbFacts
    newly_failing: list[DiffPointFacts]
    newly_passing: list[DiffPointFacts]
    bits_changed: list[DiffBitsFacts]
    nondeterministic: list[str]                 # not compared bit for bit: their outputs' bits are not stable
    only_a: list[str]                           # point ids only one climb ran
    only_b: list[str]
    slower_rungs: list[SlowerRungFacts]         # empty where the timing was not compared
    timing: TimingFacts
    toolchain: dict[str, list[Json]]            # what differs: name -> [A's, B's]
    fail_on: list[str]                          # what fails the gate besides a new failure: [] or ["slower"] (--fail-on)
    worse: bool                                 # a point newly fails, or (--fail-on slower) a rung got slower: exit 1
