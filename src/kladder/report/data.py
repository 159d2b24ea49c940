"""The climb as data: rungs, each with its outcomes, counted and timed."""
from __future__ import annotations

import dataclasses
import os
import secrets
import time
from collections import Counter
from collections import defaultdict
from dataclasses import dataclass, field

from ..budgets import BudgetSummary
from ..facts import BiasFacts, ContractFacts, GoldenFacts, GpuPointFacts, GuardFacts, NondeterministicFacts, ReuseFacts
from ..outcome import STATUSES, Check, Finding, Note, Outcome, Status, Waited

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
    fingerprint: dict = field(default_factory=dict)     # the environment (kladder.fingerprint)
    run_id: str = field(default_factory=new_run_id)      # in the log's name and in every record
    start_error: dict | None = None      # why the climb (or a worker it needed) could not start: facts, see below
    kladder_error: dict | None = None    # kladder's own error that ended the climb early: error, text, trace (exit 1)
    shrunk: list[dict] = field(default_factory=list)     # kladder.shrink's facts per rung's first failure (--shrink-s)
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


# ---------------------------------------------------------------------------- grouping keys (from the facts' data)
_SHAPE_FIELDS = {Check.RAISED: ("error", "text"), Check.DEVICE_FAULT: ("error", "text"), Check.CAPTURE: ("error", "text"),
                 Check.UNCAPTURED: ("error", "text"), Check.INPUT_CHANGED: ("how",),
                 Check.CRASHED: ("signal", "exit_status"), Check.NOT_BITWISE: ("cause",), Check.INVARIANT: ("name",),
                 Check.MODEL: ("metric",), Check.INVALID_REFERENCE: ("functions", "gpu_kernels")}


def pattern_shape(f: Finding) -> tuple:
    """What a finding's pattern looks like, its numbers left out: failures with one shape
    are one bug seen at several points (the terminal groups them)."""
    p, x = f.pattern, f.facts
    if p is not None:
        cols = None
        if p.cols is not None:
            at = "last" if p.cols.last == p.cols.n - 1 else "first" if p.cols.first == 0 else "range"
            cols = (at, p.cols.tile_note[:2] if p.cols.tile_note else None)
        return (p.kind, cols, p.rows[0] if p.rows else None, p.most)
    if isinstance(x, GuardFacts):
        return (bool(x.n_after), bool(x.n_before))
    if isinstance(x, ContractFacts):
        given = x.to_dict()
        return tuple(sorted(k for k in given if k != "problems")) + tuple(p[0] for p in x.problems or [])
    return tuple(str(getattr(x, k, None)) for k in _SHAPE_FIELDS.get(f.check, ()))


def failure_key(o: Outcome) -> tuple:
    """Failures with one key are one bug seen at several points: the same status, rung and mode,
    and the headline's check, output, call and pattern shape. The terminal and the HTML group by it."""
    head = o.headline
    return (o.status, o.point.rung, o.point.mode) + (
        (head.check, head.output, head.call, pattern_shape(head)) if head else (id(o),))


def failure_groups(failures: list[Outcome]) -> list[list[Outcome]]:
    """Failures grouped by failure_key, in order of their first member."""
    groups: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in failures:
        groups[failure_key(o)].append(o)
    return list(groups.values())


def note_key(n: Note | None) -> tuple:
    """A note as data: notes with one key say the same."""
    if n is None:
        return ()
    return (n.kind, tuple(sorted((k, str(v)) for k, v in n.facts.to_dict().items())))


def note_group(n: Note) -> tuple:
    """Skips whose notes differ only in a point's size are one group."""
    if isinstance(n.facts, GpuPointFacts):
        return note_key(Note(n.kind, dataclasses.replace(n.facts, need_bytes=0)))
    return note_key(n)


def reason_group(o: Outcome) -> tuple:
    """Points that could not be judged for one reason (a replay's, else the note's) are one group."""
    return (o.status, o.replay, o.replay_status, () if o.replay is not None else note_key(o.note))


def bias_group(w: Finding) -> tuple:
    """Warnings that differ only in their numbers are shown once, with the points that showed them."""
    x = w.facts
    if isinstance(x, NondeterministicFacts):      # a rate differs point by point: one line per output
        return (str(w.check), w.output, getattr(x, "tool", ""), getattr(x, "kind", ""))
    if not isinstance(x, BiasFacts):
        return (str(w.check), tuple(sorted((k, str(v)) for k, v in x.to_dict().items())))
    return (w.output, x.lean, x.up > x.down, x.dtype)
