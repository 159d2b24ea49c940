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
from enum import Enum
from typing import Any

from .facts import CHECK_FACTS, NOTE_FACTS, Facts, ReusedFacts
from .point import Point


class _Words(str, Enum):
    """A str-valued enum that prints, formats and serialises as its value ("passed")."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Status(_Words):
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


class Stage(_Words):
    """The stages of a point, timed one by one (run/stages.py) and named to the parent's watchdog
    as they begin (run/isolation.py): the kernel's stage gets the hang timeout, kladder's the
    budget isolation.KLADDER_STAGE_FACTOR gives them."""
    INPUTS = "inputs"          # Harness.prepare: seeded inputs in guarded buffers, the reference's copies
    KERNEL = "kernel"          # the mode driving the kernel: its calls (each synchronized) and the mode's own work
                               # between them (rung 5's device comparisons, the child processes of jitcache & co)
    REFERENCE = "reference"    # Harness.expected: the float64 reference
    PEERS = "peers"            # Harness.peers: the honest peer and its spread draws
    CHECKS = "checks"          # the Judge: guards, contract, comparison, pattern, invariants


KLADDER_STAGES = tuple(s for s in Stage if s != Stage.KERNEL)


class Check(_Words):
    """What failed. The facts each kind carries are listed beside it, and typed in facts.py
    (CHECK_FACTS: one frozen dataclass per member)."""
    CONTRACT = "contract"                    # problems [[what, got, expected]] | not_tensor | returned+declared | reference_shape
    VALUES = "values"                        # pattern, mismatched/total, largest; nonfinite, dtype, shape, mode, sampled,
                                             # rtol, atol; when a peer was asked (checks/peer.py): budget (which set the
                                             # allowed error at the worst element: default | spread | peer), c, spread
                                             # {draws, at}, peer {dtype, rel, capped} | {error, text} | {skipped}, slack_ulps
    GUARD = "guard"                          # n_after, after_lo/hi, n_before, before_lo/hi, itemsize, after[:64], before[:64];
                                             # allocated {op, shape, dtype, returned} for a tensor the kernel allocated
                                             # itself (run/guarded_alloc.py): output is the output it returned, or ''
    RAISED = "raised"                        # error, text
    CRASHED = "crashed"                      # signal and frames, or exit_status (the kernel ended the process); heap_checked:
                                             # it crashed again alone with glibc's malloc checks on (run/faults.py)
    HANG = "hang"                            # timeout_s
    DEVICE_FAULT = "device_fault"            # error, text, in_call
    CAPTURE = "capture"                      # error, text; claimed (kl.Modes(graphs=): True, or None for a spec before it)
    UNCAPTURED = "uncaptured"                # a warning, never a failure: error, text: the kernel cannot be captured in a
                                             # CUDA graph and the spec does not say whether production graphs it
    INPUT_CHANGED = "input_changed"          # an input the spec does not declare mutated changed in the call (output: the
                                             # input's name): how ("copy" | "hash" | "values"), gap_bytes (bytes between a
                                             # strided view's elements), resized [[before], [after]]; slabs, of (hash);
                                             # pattern, mismatched/total: the elements (rows for a hash) that changed
    NOT_BITWISE = "not_bitwise"              # cause (Cause), mismatched/total
    PADDING = "padding"                      # arg, fill, valid, pattern, mismatched/total
    INVALID_REFERENCE = "invalid_reference"  # functions, gpu_kernels: older reports only; a reference that is not
                                             # independent is now the spec's problem (NoteKind.REFERENCE_NOT_INDEPENDENT)
    INVARIANT = "invariant"                  # name; pattern and mismatched/total when checked per element
    NONFINITE = "nonfinite"                  # (none): NaN/Inf accepted where the policy says raise
    MODEL = "model"                          # metric (nll | score), baseline, kernel, samples, ...
    BIAS = "bias"                            # a warning, never a failure: lean, up, down, p, mean_ulps, rel, dtype
    # rung 7, the toolchain
    DISPATCH = "dispatch"                    # expected [{kernel, launch, label, when}] that did not run; ran (what ran)
    FLAG_NO_EFFECT = "flag_no_effect"        # flag, values, how ("binary" | "source" | "names"), runs [{value, launches, gpu}]
    IMPORT_CONTRACT = "import_contract"      # name, problem ("missing" | "untested"), error, text | object
    CAUGHT_IMPORT = "caught_import"          # a warning, never a failure: module, where, error, text
    COLLECTIVE = "collective"                # rung 6: wrong (outputs), outputs (judged), ranks {rank: [calls, 1-based]},
                                             # sizes_wrong, sizes, dim, world, lag, queued; the first wrong call of
                                             # each rank follows as its own finding (values, guard, contract)
    RANKS_HUNG = "ranks_hung"                # rung 6: watchdog_s, queued, dim, lag, ranks [{rank, phase, launched,
                                             # finished, size}]: no rank progressed for watchdog_s; the ranks were killed
    # rung 5 (checks/repetition.py): calls compared with the first call on the same inputs. Facts: calls, compared,
    # firsts, differ, wrong, deterministic, launch, inputs, load, seconds, calls_s, stopped, fallback, worst_call,
    # worst_elements, first_calls, rate, lo, hi, conf, calls_50, calls_95, curve [[N, p, lo, hi]]; pattern,
    # mismatched, largest: the worst call against the reference
    REPEATS = "repeats"
    NONDETERMINISTIC = "nondeterministic"    # a warning, never a failure: calls that differ bitwise, within the tolerance (same facts)
    # rung 5's stream (checks/repetition.py judge_stream): calls in the model's pattern (kl.Repetition(calls=)), each on
    # distinct inputs against its own reference. Facts: calls, judged, wrong, first_wrong, first_calls, pattern,
    # fresh, sets, count, declared, seconds, stopped, batched, undecided, rate ...; pattern, mismatched, largest:
    # the first wrong call against its reference
    STREAM = "stream"
    SANITIZER = "sanitizer"                  # tool, kind, kernel, file, line, access, size, address, detail, thread, block, count
    UNDER_LOAD = "under_load"                # a warning, never a failure: first (the check or status of the run under
                                             # load), the Load's facts (lanes, processes, device_used_bytes, ...), alone_s
    # a warning, never a failure (run/faults.py after_heap_check): the worker crashed as heap damage does (signal,
    # frames, heap_words: glibc's message or ''), after `earlier` other points in it; alone, in a fresh worker with
    # glibc's malloc checks on, the point did not crash (alone: its status there)
    CRASHED_NOT_ALONE = "crashed_not_alone"


class Cause(_Words):
    """Why two results were expected to be equal bit for bit."""
    ABA = "aba"                  # A again, after B, in one process
    JITCACHE = "jitcache"        # A on a warm cache against A on a cold one
    PADDING = "padding"          # the same valid data with other padding bytes
    CACHEKEY = "cachekey"        # B on the cache A left against B on an empty cache (variant: what B changed)
    RUN_TO_RUN = "run_to_run"    # A twice on the same inputs, before B (kl.Repetition(deterministic=True) says they agree)


class NoteKind(_Words):
    """Why a point was skipped, broken or out of memory, or what a passing mode measured. Its
    facts: facts.py's NOTE_FACTS (one frozen dataclass per member)."""
    GPU_POINT = "gpu_point"                        # need_bytes, budget
    VALUE_OUT_OF_RANGE = "value_out_of_range"      # arg, value, lo, hi, why: the value kind has no value inside the declared range
    NO_DEVICE_MEMORY = "no_device_memory"          # need_bytes, free_bytes
    MODE_NEEDS_CUDA = "mode_needs_cuda"            # mode
    GRAPHS_NOT_CLAIMED = "graphs_not_claimed"      # error, text: the capture failed; kl.Modes(graphs=False) says production
                                                   # does not run the kernel in graphs
    NO_OUT_ARGS = "no_out_args"
    INPUTS_MUTATED = "inputs_mutated"              # args: inputs the spec declares the kernel writes in place (rung 5)
    NOT_TORCH_OP = "not_torch_op"
    OUTSIDE_CLIMB = "outside_climb"                # mode
    RACE_NOT_SET_UP = "race_not_set_up"            # attempts, delay_cycles
    LAYOUT_REFUSED = "layout_refused"              # error, text
    RAISED_AS_ASKED = "raised_as_asked"            # error
    REFUSED_AS_DOCUMENTED = "refused_as_documented"  # error, text, label: the launcher raised where Expect(runs=False) says it refuses
    INPUTS_FAILED = "inputs_failed"                # error, text
    REFERENCE_RAISED = "reference_raised"          # error, text
    REFERENCE_SHAPE = "reference_shape"            # output, shape (the reference's), declared (returns=, the kernel's too)
    REFERENCE_NAN = "reference_nan"                # output, count, total, at (the first, as the kernel's index): NaN where every input is finite and the kernel gave a number
    INVARIANT_RAISED = "invariant_raised"          # name, error, text
    PROCESS_FAILED = "process_failed"              # label, text
    NO_SUCH_SLOT = "no_such_slot"                  # slot, slots
    BASELINE_FAILED = "baseline_failed"            # error, text, user (bool)
    KLADDER_ERROR = "kladder_error"                # error, text, trace: kladder's own bug, never the kernel's
    KERNEL_OOM = "kernel_oom"                      # call, text
    INPUTS_OOM = "inputs_oom"                      # text
    MODEL_SCORES = "model_scores"                  # what the model mode measured (see checks/model_score.py)
    CACHE_FILES = "cache_files"                    # files
    RUN_TO_RUN = "run_to_run"                      # outputs, differ, total, mode, files: A varies run to run (not judged bitwise)
    # rung 7
    RAN = "ran"                                    # ran: {launches [{name, params}], gpu [names], functions [names]}
    FLAG_CHANGED = "flag_changed"                  # flag, values, how, codes (distinct code objects over the values)
    FLAG_NOT_VISIBLE = "flag_not_visible"          # flag: no Triton kernel ran, and the CPU has no profiler names
    NOT_COMPILED = "not_compiled"                  # variant: under Triton's interpreter nothing is compiled
    IMPORTS_CHECKED = "imports_checked"            # names, traced (the modules whose import was traced)
    CACHE_MISSED = "cache_missed"                  # variant, files_cold, files_added
    COLLECTIVE_NEEDS_CUDA = "collective_needs_cuda"  # world
    NOT_ENOUGH_GPUS = "not_enough_gpus"            # world, gpus
    RANK_FAILED = "rank_failed"                    # rank, phase, error, text: kladder's side of a rank (or the spec's)
    COLLECTIVE_CALLS = "collective_calls"          # world, queued, lag, lag_us, sizes, backend, seconds: what a passing point ran
    REPEATS_CLEAN = "repeats_clean"                # what a passing rung-5 point proved: Check.REPEATS's facts, bound
    STREAM_CLEAN = "stream_clean"                  # what a passing stream proved: Check.STREAM's facts, bound
    SANITIZER_CLEAN = "sanitizer_clean"            # tool, calls
    NO_SANITIZER = "no_sanitizer"                  # tool, searched
    INTERPRETER_DEFECT = "interpreter_defect"      # feature, what, x, got, want (the probe's evidence; run/interpreter.py)
    INTERPRETER_ERROR = "interpreter_error"        # error, text; probe (the feature whose probe raised the same)
    STAGE_OVERRUN = "stage_overrun"                # stage (Stage), seconds, budget_s, timeout_s, elements (the point's
                                                   # tensors, when known): kladder's own stage
                                                   # was silent past its budget; the worker was killed, nothing judged
    DEVICE_FULL = "device_full"                    # text (the OOM), first (its NoteKind), alone (Status), the Load's
                                                   # facts: out of memory while others held the device's memory
    HOST_BUSY = "host_busy"                        # timeout_s, cores, the alone run's Load facts: hung under load and
                                                   # alone too, while other processes held the host's CPU and the
                                                   # worker got little of it: the kernel never had the time to finish
    HOST_FULL = "host_full"                        # signal, first, the Load's facts: killed (the out-of-memory killer)
                                                   # while the host's memory was full or others held it: not judged
    NO_HOST_MEMORY = "no_host_memory"              # need_bytes (a measured peak, scaled), share_bytes, workers, measured,
                                                   # measured_bytes: the host cannot hold the point: skipped before it ran
    REFERENCE_NOT_INDEPENDENT = "reference_not_independent"  # reference, functions, jit_kernels, gpu_kernels, torch_op:
                                                   # the reference runs the kernel's own code: BROKEN, the spec's problem


class Wait(_Words):
    """What a lane of a climb waited for before its point could run (run/waits.py records it,
    per rung, in the report: RungReport.waits)."""
    FORK_SERVER = "fork_server"      # the fork server to import torch and Triton (new processes fork from it)
    WORKER = "worker"                # a worker to start (its imports, the spec's, a CUDA context)
    DEVICE = "device"                # the device to take a worker's CUDA context (others hold its memory)
    IN_FLIGHT = "in_flight"          # the other lanes' points to end, to run a point alone (a re-run alone, a big point)
    HELD = "held"                    # a point that runs alone: the other lanes are held back meanwhile


@dataclass(frozen=True)
class Waited:
    """A rung's lanes waited `seconds` in all, `times` times, for `wait`."""
    wait: Wait
    seconds: float
    times: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"for": str(self.wait), "seconds": round(self.seconds, 3), "times": self.times}

    @classmethod
    def from_dict(cls, d: dict) -> "Waited":
        return cls(Wait(d["for"]), float(d["seconds"]), int(d.get("times", 1)))


class Replay(_Words):
    """What re-running a failed point showed."""
    FAILED_AGAIN = "failed_again"
    FLAKY = "flaky"                  # the replay's status in Outcome.replay_status
    ALONE_PASSES = "alone_passes"    # fails after earlier points in the worker, passes alone in a fresh one


@dataclass(frozen=True)
class Largest:
    """The greatest difference: where, the two values, and what was allowed there."""
    index: tuple
    kernel: float
    reference: float
    allowed: float


@dataclass(frozen=True)
class Span:
    """A run of positions along one axis: a..b (inclusive) out of n; `tile_note` is
    (dim symbol, tile, remainder) when the tile's remainder explains the run."""
    first: int
    last: int
    n: int
    tile_note: tuple | None = None


@dataclass(frozen=True)
class Pattern:
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


def _typed(table: dict, kind, facts):
    """`facts` checked against its kind's class (facts.py): the kind's empty facts for None; a
    dict, or another kind's class, is refused (a misspelt key fails here, not when it renders)."""
    cls = table[str(kind)]
    if facts is None:
        return cls()
    if type(facts) is not cls:
        raise TypeError(f"{kind}'s facts must be a facts.{cls.__name__}, not {type(facts).__name__}")
    return facts


@dataclass(frozen=True)
class Note:
    kind: NoteKind
    facts: Facts = field(default=None, hash=False, compare=True)    # facts.NOTE_FACTS[kind]

    def __post_init__(self):
        object.__setattr__(self, "facts", _typed(NOTE_FACTS, self.kind, self.facts))

    @classmethod
    def of(cls, kind: NoteKind, **facts) -> "Note":
        """The note with its kind's facts made from keywords."""
        return cls(kind, NOTE_FACTS[str(kind)](**facts))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "facts": self.facts.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Note":
        kind = NoteKind(d["kind"])
        return cls(kind, NOTE_FACTS[str(kind)].from_dict(d.get("facts")))


@dataclass(frozen=True)
class RowsChecked:
    """A big point judged on some rows: `checked` of `rows` rows of `dim`, `sampled` at random."""
    checked: int
    rows: int
    dim: str
    sampled: int


@dataclass
class Load:
    """What else used the device or the host while a point ran (run/isolation.py measures it),
    and, for a point re-run alone because of it, what the alone run gave."""
    lanes: int = 0                        # other lanes of this climb running points meanwhile
    processes: int = 0                    # other processes on the device (CUDA: NVML or nvidia-smi)
    device_used_bytes: int | None = None  # device memory in use by processes other than this point's worker
    device_total_bytes: int | None = None
    host_cpu_s: float = 0.0               # CPU time of every process but this point's worker and the climb's (/proc)
    worker_cpu_s: float = 0.0             # the point's worker's own CPU time meanwhile (read before a hung one is killed)
    worker_wait_s: float = 0.0            # the worker's threads' time runnable but waiting for a CPU (/proc schedstat)
    seconds: float = 0.0                  # the point's wall time while measured
    alone: Status | None = None           # the alone run's status (None: not re-run)
    alone_s: float = 0.0                  # the alone run's wall time
    host_used_bytes: int | None = None    # the host's memory in use once the point ended, when it was full (isolation.HOST_FULL_SHARE)
    host_total_bytes: int | None = None
    oom_kills: int | None = None          # kills by the out-of-memory killer while the point ran (/proc/vmstat oom_kill)
    waited_s: float | None = None         # seconds the run alone waited for others' memory to free first

    def facts(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Status) else v) for k, v in vars(self).items()}

    @classmethod
    def from_facts(cls, d: dict[str, Any] | None) -> "Load | None":
        if d is None:
            return None
        return cls(**{**d, "alone": None if d.get("alone") is None else Status(d["alone"])})


@dataclass
class Finding:
    """One failed check on one output (or on the call itself)."""
    check: Check
    output: str = ""
    call: str = ""                  # which call of a mode went wrong: a label the mode gave ("replay 2 of 3")
    pattern: Pattern | None = None
    mismatched: int = 0
    total: int = 0
    largest: Largest | None = None
    max_abs_err: float | None = None
    facts: Facts = None             # facts.CHECK_FACTS[check]; None: the check's empty facts

    def __post_init__(self):
        self.facts = _typed(CHECK_FACTS, self.check, self.facts)

    def to_dict(self) -> dict[str, Any]:
        return {"check": str(self.check), "output": self.output, "call": self.call,
                "pattern": _pattern_dict(self.pattern), "mismatched": self.mismatched, "total": self.total,
                "largest": None if self.largest is None else {**vars(self.largest), "index": list(self.largest.index)},
                "max_abs_err": self.max_abs_err, "facts": self.facts.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Finding":
        big = d.get("largest")
        check = Check(d["check"])
        return cls(check, d.get("output", ""), d.get("call", ""), _pattern_from(d.get("pattern")),
                   d.get("mismatched", 0), d.get("total", 0),
                   None if big is None else Largest(tuple(big["index"]), big["kernel"], big["reference"], big["allowed"]),
                   d.get("max_abs_err"), CHECK_FACTS[str(check)].from_dict(d.get("facts")))


def _pattern_dict(p: Pattern | None):
    if p is None:
        return None
    d = dict(vars(p))
    d["cols"] = None if p.cols is None else dict(vars(p.cols))
    return d


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _pattern_from(d):
    if d is None:
        return None
    cols = d.get("cols")
    span = None if cols is None else Span(cols["first"], cols["last"], cols["n"], _freeze(cols.get("tile_note")))
    return Pattern(**{**d, "cols": span, "rows": _freeze(d.get("rows")), "ids": _freeze(d.get("ids", ())),
                      "first": _freeze(d.get("first", ())), "sample": _freeze(d.get("sample", ())),
                      "density": _freeze(d.get("density", ()))})


@dataclass
class Outcome:
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
    load: Load | None = None             # what else ran while it ran, when it was re-run alone for it
    hashes: dict[str, str] = field(default_factory=dict)   # output name -> sha256 of its bytes, first call (run/hashes.py)
    ran_with: Load | None = None         # what else used the host and the device during its run (every run's; the
                                         # history keeps it, and `kladder diff` compares timings only at like load)
    reused: ReusedFacts | None = None    # not run in this climb: the earlier climb whose outcome it is (history/outcomes.py)

    @property
    def headline(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict[str, Any]:
        """Typed and lossless: what a worker sends its parent (report/jsonout.py writes the user's JSON)."""
        return {"point": self.point.to_dict(), "status": str(self.status),
                "findings": [f.to_dict() for f in self.findings],
                "note": None if self.note is None else self.note.to_dict(),
                "seconds": self.seconds, "rows": None if self.rows is None else dict(vars(self.rows)),
                "repro": self.repro, "warnings": [w.to_dict() for w in self.warnings],
                "replay": None if self.replay is None else str(self.replay),
                "replay_status": None if self.replay_status is None else str(self.replay_status),
                "output": self.output, "stages": {str(k): v for k, v in self.stages.items()},
                "load": None if self.load is None else self.load.facts(), "hashes": self.hashes,
                "ran_with": None if self.ran_with is None else self.ran_with.facts(),
                "reused": None if self.reused is None else self.reused.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Outcome":
        note, rows = d.get("note"), d.get("rows")
        return cls(Point.from_dict(d["point"]), Status(d["status"]), [Finding.from_dict(f) for f in d.get("findings", [])],
                   None if note is None else Note.from_dict(note),
                   d.get("seconds", 0.0), None if rows is None else RowsChecked(**rows), d.get("repro", ""),
                   [Finding.from_dict(w) for w in d.get("warnings", [])],
                   None if d.get("replay") is None else Replay(d["replay"]),
                   None if d.get("replay_status") is None else Status(d["replay_status"]), d.get("output", ""),
                   {Stage(k): v for k, v in (d.get("stages") or {}).items()}, Load.from_facts(d.get("load")),
                   dict(d.get("hashes") or {}), Load.from_facts(d.get("ran_with")),
                   None if d.get("reused") is None else ReusedFacts.from_dict(d["reused"]))


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
