"""The climb's results as data: rungs, each with its outcomes, counted and timed, and the climb's
exit status. Below the report (report/ renders them) and the store (history/ records them); the
climb (ladder.py) fills them."""
from __future__ import annotations

import os
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field

from .budgets import BudgetSummary
from .facts import GoldenFacts, ReuseFacts
from .outcome import STATUSES, Outcome, Status, Waited

NOTHING_RAN = 5     # as pytest's "no tests ran": every point skipped, or none generated
INTERRUPTED = 130   # as a shell reports a process ended by SIGINT
NOT_STARTED = 2     # as a usage error: the climb could not start (report.start_error says why)


def new_run_id() -> str:
    """One climb's id: its start time, its process and 4 random hex digits, so that two climbs
    started in the same second in one folder (a CI matrix) never share a log or a record."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(2)}"


@dataclass
class RungReport:
    rung: int
    title: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    climbed: bool = True
    note: str = ""                       # why a rung was not climbed
    interrupted: bool = False            # Ctrl-C arrived while it ran: its points so far are kept
    stopped: bool = False                # not climbed: -x stopped the climb at an earlier rung's failure (ClimbReport.stopped_at)
    planned: int | None = None           # the points it was to run (None: not known, a merged report's)
    waits: list[Waited] = field(default_factory=list)   # what the lanes working for its points waited for (run/waits.py)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(o.status for o in self.outcomes)
        return {str(s): c.get(s, 0) for s in STATUSES}

    @property
    def failed(self) -> bool:
        """A point failed here, whether or not the rung was climbed to its end."""
        c = self.counts
        return bool(c[Status.FAILED] or c[Status.FLAKY])

    @property
    def verdict(self) -> str:
        if not self.climbed:
            return "not climbed"
        if self.interrupted:
            return "interrupted"
        c = self.counts
        if self.planned is not None and len(self.outcomes) < self.planned and not (c[Status.FAILED] or c[Status.FLAKY]):
            return "incomplete"              # it stopped before its last point (kladder's own error): never "passed"
        if c[Status.FAILED] or c[Status.FLAKY]:
            return "failed"
        if any(c[s] for s in STATUSES if s not in (Status.PASSED, Status.SKIPPED)):
            return "incomplete"
        return "passed" if c[Status.PASSED] else "nothing ran"


@dataclass
class ClimbReport:
    spec: str
    ref: str
    device: str
    device_name: str = ""
    rungs: list[RungReport] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    log_path: str = ""
    started: str = ""
    kladder_version: str = ""
    fingerprint: dict = field(default_factory=dict)     # the environment (kladder.core.fingerprint)
    run_id: str = field(default_factory=new_run_id)      # in the log's name and in every record
    start_error: dict | None = None      # why the climb (or a worker it needed) could not start: facts, see below
    kladder_error: dict | None = None    # kladder's own error that ended the climb early: error, text, trace (exit 1)
    shrunk: list[dict] = field(default_factory=list)     # kladder.climbing.shrink's facts per rung's first failure (--shrink-s)
    shard: dict | None = None            # --shard I/N: which slice, the options, where each point stands (shard.py)
    golden: GoldenFacts | None = None    # --golden: the points' bits against the golden hashes (history/golden.py)
    reuse: ReuseFacts | None = None      # what the outcome store gave and what ran (history/outcomes.py); None: not used
    stopped_at: int | None = None        # -x: the rung whose failure stopped the climb (later rungs not climbed)
    budget: BudgetSummary | None = None  # the time budget that ran rung 5, what a longer one adds (budgets.py)

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for r in self.rungs for o in r.outcomes]

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in (Status.FAILED, Status.FLAKY)]

    @property
    def lowest_failing_rung(self) -> int | None:
        bad = [r.rung for r in self.rungs if r.climbed and r.failed]     # an interrupted rung's failures count
        return min(bad) if bad else None

    @property
    def nothing_ran(self) -> bool:
        """No point ran: every one was skipped, or the rungs climbed generated none."""
        return all(o.status == Status.SKIPPED for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        """0 when every point that ran passed (skips carry their reason) and at least one ran;
        NOTHING_RAN when none ran (a climb that tested nothing must not pass, aiter #5133);
        1 otherwise; 130 (as a shell reports SIGINT) when the climb was interrupted; 2 when it could
        not start (start_error: {"kind": "usage" | "device", "message": ..., and for "device" what
        failed, the device's free and total bytes and the processes holding it}). With
        --golden=strict, 1 where bits changed since the golden hashes (or none are kept) though
        every point passed (golden.fails)."""
        if self.start_error:
            return NOT_STARTED
        if self.kladder_error:
            return 1                        # could not be judged: kladder's fault, never a pass
        if self.interrupted:
            return INTERRUPTED
        ok = all(o.status in (Status.PASSED, Status.SKIPPED) for o in self.outcomes)
        if not ok or (self.golden is not None and self.golden.fails):
            return 1
        return NOTHING_RAN if self.nothing_ran else 0
