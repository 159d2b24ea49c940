"""The ground floor every layer shares: what happened at a point, as typed data.

A Finding is one failed check, an Outcome one point's result. Both hold facts (which check,
where, how many elements, how far off, what was allowed, which call, which mode), never
sentences: the renderers in report/ turn them into words, so that a renderer never has to
read English back and a new check only adds a kind and its facts.

The three outcomes kept apart: the kernel is wrong (FAILED, FLAKY), kladder or the
spec is broken (BROKEN), the point could not run (SKIPPED, OOM). Exceptions that carry those
answers between layers live here too (Skip, KernelError, SpecBroken), so that a module that
calls kernels and a module that judges them import the same ground floor and not each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .facts import Check as Check            # the kinds live with their facts (facts/kinds.py); re-exported here
from .facts import Facts, LoadFacts, Plain, ReusedFacts, Words, registered
from .facts import NoteKind as NoteKind
from .point import Point


class Status(Words):
    PASSED = "passed"
    FAILED = "failed"      # the kernel is wrong: a mismatch, a guard, a contract; it raised, crashed, hung or faulted
    FLAKY = "flaky"        # failed, then passed when replayed: reported with its rate, never dropped
    SKIPPED = "skipped"    # the point does not apply here (a GPU point on the CPU, a mode without CUDA, a kernel
                           # that touched a defect of Triton's interpreter: not judged on the CPU), with why
    OOM = "oom"            # the point could not run for memory
    BROKEN = "broken"      # kladder or the spec's reference failed: never blamed on the kernel
    NOT_JUDGED = "not_judged"  # kladder's own stage overran its budget, or the device was full of others' memory:
                               # could not be judged (exit 1, as BROKEN), never the kernel's failure


STATUSES = tuple(Status)


class Stage(Words):
    """The stages of a point, timed one by one (run/stages.py) and named to the parent's watchdog
    as they begin (run/timeouts.py): the kernel's stage gets the hang timeout, kladder's the
    budget timeouts.KLADDER_STAGE_FACTOR gives them."""
    INPUTS = "inputs"          # Harness.prepare: seeded inputs in guarded buffers, the reference's copies
    KERNEL = "kernel"          # the mode driving the kernel: its calls (each synchronized) and the mode's own work
                               # between them (rung 5's device comparisons, the child processes of jitcache & co)
    REFERENCE = "reference"    # Harness.expected: the float64 reference
    PEERS = "peers"            # Harness.peers: the honest peer and its spread draws
    CHECKS = "checks"          # the Judge: guards, contract, comparison, pattern, invariants


KLADDER_STAGES = tuple(s for s in Stage if s != Stage.KERNEL)


class Cause(Words):
    """Why two results were expected to be equal bit for bit."""
    ABA = "aba"                  # A again, after B, in one process
    JITCACHE = "jitcache"        # A on a warm cache against A on a cold one
    PADDING = "padding"          # the same valid data with other padding bytes
    CACHEKEY = "cachekey"        # B on the cache A left against B on an empty cache (variant: what B changed)
    RUN_TO_RUN = "run_to_run"    # A twice on the same inputs, before B (kl.Repetition(deterministic=True) says they agree)


class Wait(Words):
    """What a lane of a climb waited for before its point could run (run/waits.py records it,
    per rung, in the report: RungReport.waits)."""
    FORK_SERVER = "fork_server"      # the fork server to import torch and Triton (new processes fork from it)
    WORKER = "worker"                # a worker to start (its imports, the spec's, a CUDA context)
    DEVICE = "device"                # the device to take a worker's CUDA context (others hold its memory)
    IN_FLIGHT = "in_flight"          # the other lanes' points to end, to run a point alone (a re-run alone, a big point)
    HELD = "held"                    # a point that runs alone: the other lanes are held back meanwhile


@dataclass(frozen=True)
class Waited(Plain):
    """A rung's lanes waited `seconds` in all (to the millisecond), `times` times, for `wait` (its
    JSON key: "for")."""
    wait: Wait = field(metadata={"key": "for"})
    seconds: float
    times: int = 1

    def __post_init__(self):
        object.__setattr__(self, "seconds", round(float(self.seconds), 3))


class Replay(Words):
    """What re-running a failed point showed."""
    FAILED_AGAIN = "failed_again"
    FLAKY = "flaky"                  # the replay's status in Outcome.replay_status
    ALONE_PASSES = "alone_passes"    # fails after earlier points in the worker, passes alone in a fresh one
    NOT_REPLAYED = "not_replayed"    # its rung's first REPLAYS_TO_SETTLE failures of its check each failed again


# A rung's failures of one check are replayed until this many have each failed again (and none
# was flaky): the rest of that rung's failures of that check are reported as seen, not replayed
# (run/rerun.py's REPLAY). A broken kernel fails hundreds of points the same way; replaying each
# doubles its climb and says nothing the first few did not.
REPLAYS_TO_SETTLE = 3


@dataclass(frozen=True)
class Largest(Plain):
    """The greatest difference: where, the two values, and what was allowed there."""
    index: tuple
    kernel: float
    reference: float
    allowed: float


@dataclass(frozen=True)
class Span(Plain):
    """A run of positions along one axis: a..b (inclusive) out of n; `tile_note` is
    (dim symbol, tile, remainder) when the tile's remainder explains the run."""
    first: int
    last: int
    n: int
    tile_note: tuple | None = None


@dataclass(frozen=True)
class Pattern(Plain):
    """The shape of the wrong elements (checks/pattern.py finds it, report/words/base.py says it).

    kind: single | every | elements (a 1-d run: cols) | block (cols of rows; cols None: whole
          rows) | whole_rows (count of n_rows, ids) | runs (most/scattered elements of rows) |
          scattered (n_bad of numel, first)
    sample: for whole_rows (past its five ids), runs and scattered, the indices of up to 256 wrong
            elements spread evenly over the wrong rows and their wrong columns (the HTML's map)
    density: for the same kinds, where every row was checked: the share of wrong elements in each
            cell of the output folded to at most 32 x 64 cells (the HTML's map draws a dense failure
            by it: 94% of a row wrong is a red band, not a sample's stripes)
    rows: ("every",) | ("one", a) | ("from", a, b) | ("range", a, b) | ("runs", ((a, b), ...))"""
    kind: str
    cols: Span | None = None
    rows: tuple | None = None
    n_bad: int = 0
    n_total: int = 0
    n_rows: int = 0
    ids: tuple = ()
    most: bool = False
    checked: bool = False
    first: tuple = ()
    sample: tuple = ()       # where the kind does not locate every wrong element: up to 256 of their indices, spread evenly
    density: tuple = ()      # there too, the output checked whole: (rows a cell, columns a cell, per cell the share of
                             # its elements that are wrong in percent, 1..100 where any is) over at most 32 x 64 cells


def _typed(kind: Check | NoteKind, facts):
    """`facts` checked against its kind's class (facts/): the kind's empty facts for None; a
    dict, or another kind's class, is refused (a misspelt key fails here, not when it renders)."""
    cls = registered(kind)
    if facts is None:
        return cls()
    if type(facts) is not cls:
        raise TypeError(f"{kind}'s facts must be a facts.{cls.__name__}, not {type(facts).__name__}")
    return facts


@dataclass(frozen=True)
class Note(Plain):
    kind: NoteKind
    facts: Facts = field(default=None, hash=False, compare=True, metadata={"kind": "kind"})   # its kind's class

    def __post_init__(self):
        object.__setattr__(self, "facts", _typed(NoteKind(self.kind), self.facts))

    @classmethod
    def of(cls, kind: NoteKind, **facts) -> "Note":
        """The note with its kind's facts made from keywords."""
        return cls(kind, registered(NoteKind(kind))(**facts))


@dataclass(frozen=True)
class RowsChecked(Plain):
    """A big point judged on some rows: `checked` of `rows` rows of `dim`, `sampled` at random."""
    checked: int
    rows: int
    dim: str
    sampled: int


Load = LoadFacts
"""What else used the device or the host while a point ran (run/sampling.py measures it), and,
for a point re-run alone because of it, what the alone run gave: facts.LoadFacts, the one class
(frozen: a changed load is a `dataclasses.replace`). An Outcome writes it whole, None fields too."""


@dataclass
class Finding(Plain):
    """One failed check on one output (or on the call itself)."""
    check: Check
    output: str = ""
    call: str = ""                  # which call of a mode went wrong: a label the mode gave ("replay 2 of 3")
    pattern: Pattern | None = None
    mismatched: int = 0
    total: int = 0
    largest: Largest | None = None
    max_abs_err: float | None = None
    facts: Facts = field(default=None, metadata={"kind": "check"})   # its check's class; None: the check's empty facts

    def __post_init__(self):
        self.facts = _typed(Check(self.check), self.facts)


@dataclass
class Outcome(Plain):
    """One point's result. `to_dict` is typed and lossless: what a worker sends its parent
    (report/jsonout.py writes the user's JSON)."""
    point: Point
    status: Status
    findings: list[Finding] = field(default_factory=list)
    note: Note | None = None             # why skipped / oom / broken, or what a passing mode measured
    seconds: float = 0.0
    rows: RowsChecked | None = None      # big points: which rows the reference checked
    repro: str = ""
    warnings: list[Finding] = field(default_factory=list)   # not failures: a bias inside the tolerance
    replay: Replay | None = None         # what re-running a failure showed
    replay_status: Status | None = None  # the replay's own status, for FLAKY
    output: str = ""                     # what the kernel printed (stdout and stderr) during the point
    stages: dict[Stage, float] = field(default_factory=dict)   # seconds spent in each stage (run/stages.py)
    load: LoadFacts | None = field(default=None, metadata={"whole": True})   # what else ran while it ran, when it
                                                                             # was re-run alone for it
    hashes: dict[str, str] = field(default_factory=dict)   # output name -> sha256 of its bytes, first call (run/hashes.py)
    ran_with: LoadFacts | None = field(default=None, metadata={"whole": True})   # what else used the host and the
                                         # device during its run (every run's; the history keeps it, and `kladder
                                         # diff` compares timings only at like load)
    reused: ReusedFacts | None = None    # not run in this climb: the earlier climb whose outcome it is (history/outcomes.py)

    @property
    def headline(self) -> Finding | None:
        return self.findings[0] if self.findings else None


# ---------------------------------------------------------------------------- between layers
class Skip(Exception):
    """A mode that does not apply to this spec or device, with the reason as a Note."""

    def __init__(self, kind: NoteKind, **facts):
        super().__init__(str(kind))
        self.note = Note.of(kind, **facts)


class SpecBroken(Exception):
    """The inputs could not be built or the reference raised: not the kernel's fault."""

    def __init__(self, kind: NoteKind, **facts):
        super().__init__(f"{kind}: {facts}")
        self.note = Note.of(kind, **facts)


class KernelError(Exception):
    """The kernel raised during a call; `label` says which call ("replay 2 of 3")."""

    def __init__(self, error: BaseException, label: str):
        super().__init__(str(error))
        self.error, self.label = error, label


class Hung(Exception):
    """Calls that did not finish within their watchdog's bound: the kernel spins or waits on
    something that never comes. The device stays busy, so the worker that saw it is replaced."""

    def __init__(self, timeout_s: float):
        super().__init__(f"no answer within {timeout_s:g} s")
        self.timeout_s = timeout_s


def error_facts(e: BaseException, whole: bool = False) -> dict:
    """An exception as facts: its type's name and the first line of its message (300
    characters), or with `whole` the message as it is. A first line that only announces what
    follows (Triton's CompilationError: "at 5:21:", then the source, then the error) gets the
    message's last line after it: "at 5:21: NameError(...)"."""
    if whole:
        return {"error": type(e).__name__, "text": str(e)}
    lines = [x for x in str(e).strip().splitlines() if x.strip()]
    if not lines:
        return {"error": type(e).__name__, "text": ""}
    text = lines[0][:300]
    if len(lines) > 1 and text.rstrip().endswith(":"):
        text = f"{text.rstrip()} {lines[-1].strip()[:300]}"
    return {"error": type(e).__name__, "text": text}
