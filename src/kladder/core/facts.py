"""The facts a Finding or a Note carries: one frozen dataclass per Check and per NoteKind.

Each class names its fields, their types and what they mean; checks/ (and run/faults.py,
run/modes/ for notes) build them, report/words/ says them, report/jsonout.py writes them with
`to_dict`, and docs/report.schema.json is generated from them (report/schema.py). A field made
with `opt()` is left out of the JSON when it is None: the JSON then holds exactly the keys a
finding of that shape has (a crash by a signal has `signal`, one by an exit status
`exit_status`); every other field is always written. Values stay JSON's own types (str, int,
float, bool, lists, dicts) or a facts class of their own (a piece one finding's facts hold:
SpreadFacts, PeerFacts, ...): the same facts go from a worker to its parent as JSON, and a field
typed with a facts class takes that class or its JSON dict, made typed where the facts are made
(`__post_init__`; a union of facts classes takes the one whose fields the dict's keys are).
"""
from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal, Union

Json = Any          # a JSON value: str, int, float, bool, None, a list or a dict of them


def opt(default: Any = None) -> Any:
    """A field left out of the JSON while it is None."""
    return field(default=default, metadata={"omit": True})


@dataclass(frozen=True, kw_only=True)
class Facts:
    """The base of every facts class: JSON out (`to_dict`) and back in (`from_dict`)."""
    def __post_init__(self) -> None:
        for name, hint in _nested(type(self)).items():
            v = getattr(self, name)
            typed = _typed(hint, v, f"{type(self).__name__}.{name}")
            if typed is not v:
                object.__setattr__(self, name, typed)

    def to_dict(self) -> dict[str, Json]:
        out, left_out = {}, self.left_out()
        for f in fields(self):
            v = getattr(self, f.name)
            if (v is None and f.metadata.get("omit")) or f.name in left_out:
                continue
            out[f.name] = _plain(v)
        return out

    sometimes: ClassVar[tuple[str, ...]] = ()     # fields left_out may drop (not required in the schema)

    def left_out(self) -> tuple[str, ...]:
        """Fields this instance does not write at all (a class whose shape depends on a value)."""
        return ()

    @classmethod
    def from_dict(cls, d: dict[str, Json] | None) -> "Facts":
        return cls(**(d or {}))


def _is_facts(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, Facts)


def _mentions_facts(t: Any) -> bool:
    return _is_facts(t) or any(_mentions_facts(a) for a in typing.get_args(t))


@functools.cache
def _nested(cls: type) -> dict[str, Any]:
    """The fields of `cls` typed with a facts class (itself, in a list, or in a union)."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in fields(cls) if _mentions_facts(hints[f.name])}


def _required(cls: type) -> set[str]:
    from dataclasses import MISSING
    return {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}


def _typed(t: Any, v: Any, where: str) -> Any:
    """`v` as the annotation `t` says: a JSON dict in a facts class's place made that class."""
    if v is None or isinstance(v, Facts):
        return v
    if _is_facts(t):
        return t.from_dict(v) if isinstance(v, dict) else v
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin is list and isinstance(v, list) and args:
        return [_typed(args[0], x, where) for x in v]
    if origin in (Union, types.UnionType) and isinstance(v, dict):
        classes = [a for a in args if _is_facts(a)]
        fits = [c for c in classes if set(v) <= {f.name for f in fields(c)} and _required(c) <= set(v)]
        if len(fits) != 1 and classes:
            raise TypeError(f"{where}: {sorted(v)} are the fields of {len(fits)} of {[c.__name__ for c in classes]}")
        return fits[0].from_dict(v) if fits else v
    return v


def _plain(v: Any) -> Any:
    """A field's value as JSON: a facts class as its dict."""
    if isinstance(v, Facts):
        return v.to_dict()
    if isinstance(v, list) and v and isinstance(v[0], Facts):
        return [_plain(x) for x in v]
    return v


# ---------------------------------------------------------------------------- pieces shared by several kinds
@dataclass(frozen=True, kw_only=True)
class FrameFacts(Facts):
    """One frame of a traceback (run/frames.py): where, and the source line there."""
    file: str                   # relative to the working folder when inside it
    line: int
    function: str
    kind: Literal["user", "library", "jit"] = "user"   # library: the raising frame of torch/Triton/numpy/Python;
                                                       # jit: a Triton compile error's line in the @jit function
    code: str = ""              # the source line, stripped (200 characters)


@dataclass(frozen=True, kw_only=True)
class TraceFacts(Facts):
    """The traceback of the kernel's exception, folded to the user's frames (run/frames.py): the
    frames kept, outermost first, the one that raised last; how many of kladder's, of the
    libraries' (torch, Triton, numpy, Python's own, between the user's frames) and beyond
    MAX_FRAMES were folded; whether the call entered the launcher, and where the launcher is
    defined with the names kladder passed when it did not (a signature that does not match)."""
    frames: list[FrameFacts] = field(default_factory=list)
    folded_kladder: int = 0
    folded_library: int = 0
    folded_more: int | None = opt()
    entered: bool | None = opt()           # None: the launcher is not a Python function (its frames cannot tell)
    launcher: FrameFacts | None = opt()    # only when not entered: its `def` line
    called: list[str] | None = opt()       # only when not entered: the arguments' names in order, keywords as 'name='


@dataclass(frozen=True, kw_only=True)
class ErrorFacts(Facts):
    error: str = ""             # the exception's type name
    text: str = ""              # its message's first line (300 characters), or the whole message
    trace: TraceFacts | None = opt()   # the kernel's own exception: its traceback (run/frames.py)


@dataclass(frozen=True, kw_only=True)
class LoadFacts(Facts):
    """outcome.Load's fields, as a Note or Finding about a run under load carries them."""
    lanes: int = 0
    processes: int = 0
    device_used_bytes: int | None = None
    device_total_bytes: int | None = None
    host_cpu_s: float = 0.0
    worker_cpu_s: float = 0.0
    worker_wait_s: float = 0.0
    seconds: float = 0.0
    alone: str | None = None    # the alone run's Status
    alone_s: float = 0.0
    host_used_bytes: int | None = opt()    # the host's memory in use once the point ended, when it was full
    host_total_bytes: int | None = opt()
    oom_kills: int | None = opt()          # the kernel's out-of-memory killer's kills while the point ran (/proc/vmstat)
    waited_s: float | None = opt()         # seconds the run alone waited for others' memory to free


@dataclass(frozen=True, kw_only=True)
class SpreadFacts(Facts):
    """The rounding spread s at the element furthest past its budget (checks/peer.py): how far
    the float64 reference's output moves when every input is rounded once more."""
    draws: int                         # draws of per-element rounding (0: the output's rounding alone)
    at: float                          # s there
    terms: float                       # s over the inputs' unit roundoff: the size of the terms that make the element


@dataclass(frozen=True, kw_only=True)
class PeerFacts(Facts):
    """The honest peer: the reference run in the kernel's own precision (checks/peer.py)."""
    dtype: str                         # the precision it ran in (the output's dtype)
    factor: float | None = opt()       # K: its largest error in units of s (None: no spread to measure it in)
    capped: bool | None = opt()        # C x K x s was past the cap at the worst element
    cap: float | None = opt()          # the cap: this many times what the default or s allows ...
    half_digits: float | None = opt()  # ... or this power of the dtype's epsilon of the element's scale
    runs: int | None = opt()           # correct runs in the kernel's precision K is the largest over


@dataclass(frozen=True, kw_only=True)
class PeerFailedFacts(ErrorFacts):
    """The reference could not run in the kernel's precision: its error (no peer budget)."""


@dataclass(frozen=True, kw_only=True)
class PeerSkippedFacts(Facts):
    """No peer asked: more failing elements than it judges (checks/values.PEER_MAX_ELEMENTS)."""
    skipped: int                       # the elements that fail the default


@dataclass(frozen=True, kw_only=True)
class PeerNotNeededFacts(Facts):
    """No peer asked: the worst element is off by `times` x its default budget, past the `decides`
    x within which a peer can change the verdict (checks/values.PEER_DECIDES)."""
    times: float                       # the worst element's error over the dtype's default budget there
    decides: float                     # checks/values.PEER_DECIDES


# ---------------------------------------------------------------------------- findings
@dataclass(frozen=True, kw_only=True)
class ContractFacts(Facts):
    """One of: problems; not_tensor; returned and declared; reference_shape and kernel_shape."""
    problems: list[list[Json]] | None = opt()   # [[what ("shape" | "dtype" | "device"), got, expected]]
    not_tensor: str | None = opt()              # the type the kernel returned in an output's place
    returned: str | None = opt()                # the kernel's return value's type, when the outputs cannot be read
    declared: list[str] | None = opt()          # from it: the outputs the spec declares
    reference_shape: list[int] | None = opt()   # the reference returned another shape than the kernel
    kernel_shape: list[int] | None = opt()


@dataclass(frozen=True, kw_only=True)
class ValuesFacts(Facts):
    """A value comparison that failed (checks/values.py; a mutated input's bits: mutated)."""
    nonfinite: int | None = opt()      # non-finite outputs where the reference is finite
    sampled: bool | None = opt()       # a big point judged on some rows
    rtol: float | None = opt()
    atol: float | None = opt()
    dtype: str | None = opt()          # the output's dtype, shape and the point's mode
    shape: list[int] | None = opt()
    mode: str | None = opt()
    mutated: bool | None = opt()       # a declared-mutated input compared bit for bit
    budget: Literal["default", "spread", "peer"] | None = opt()   # which set the allowed error at the worst element
    c: float | None = opt()            # checks/peer.py's C
    spread: SpreadFacts | None = opt()        # the rounding spread s at the worst element
    peer: PeerFacts | PeerFailedFacts | PeerSkippedFacts | PeerNotNeededFacts | None = opt()   # the honest peer: ran,
                                                                        # failed, not asked (too many), not needed
    slack_ulps: int | None = opt()     # ulps of slack granted (the interpreter's bfloat16 truncation)
    # The budget at the element furthest past it (budget_at, the report's index; the largest
    # difference's element is often the same): what was allowed there, the dtype's default there
    # (atol + rtol x max(|ref|, the row's RMS)), and K x s' there, the error a correct
    # implementation in the kernel's precision makes (the peer's; C x it is the peer's budget).
    budget_at: list[int] | None = opt()
    budget_allowed: float | None = opt()
    budget_default: float | None = opt()
    budget_peer_error: float | None = opt()
    # The size cliffs the output crosses (sizes.output_cliffs): [bits, unit, element], the first
    # element at or past 2^bits bytes or elements; the error map marks the first row past each.
    cliffs: list[list[int | str]] | None = opt()
    # A near miss kept as a warning (checks/values.near_miss_kept): every remaining element within
    # peer.SETTLE_MARGIN x its budget after the peer's further runs, at most NEAR_MISS_SHARE of the
    # output: the largest error / allowed among them.
    near_miss: float | None = opt()


@dataclass(frozen=True, kw_only=True)
class AllocatedFacts(Facts):
    """A tensor the kernel allocated itself during the call, guarded (run/guarded_alloc.py)."""
    op: str                            # the torch factory that made it (empty, zeros, ...)
    shape: list[int]
    dtype: str
    returned: bool                     # the kernel returned it as an output (else its scratch)


@dataclass(frozen=True, kw_only=True)
class GuardFacts(Facts):
    itemsize: int
    n_after: int                       # guard bytes overwritten after the end, and before the start
    n_before: int
    after: list[int] = field(default_factory=list)    # the first 64 of them (byte offsets)
    before: list[int] = field(default_factory=list)
    after_lo: int | None = opt()
    after_hi: int | None = opt()
    before_lo: int | None = opt()
    before_hi: int | None = opt()
    allocated: AllocatedFacts | None = opt()   # a tensor the kernel allocated itself (run/guarded_alloc.py)


@dataclass(frozen=True, kw_only=True)
class RaisedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class CrashedFacts(Facts):
    """The worker (or a rank's process) died: by a signal, or the kernel's exit status."""
    signal: str | None = opt()
    exit_status: int | str | None = opt()
    frames: list[str] | None = opt()       # the innermost Python frames
    rank: int | None = opt()               # rung 6: the rank whose process died
    heap_checked: bool | None = opt()      # crashed again alone with glibc's malloc checks on


@dataclass(frozen=True, kw_only=True)
class HangFacts(Facts):
    timeout_s: float
    watchdog: bool | None = opt()          # a batch's watchdog gave up (rung 5), not the point's timeout


@dataclass(frozen=True, kw_only=True)
class DeviceFaultFacts(ErrorFacts):
    in_call: bool = True                   # during the kernel's call, or outside it


@dataclass(frozen=True, kw_only=True)
class CaptureFacts(ErrorFacts):
    claimed: bool | None = opt()           # Spec(graphs=True)


@dataclass(frozen=True, kw_only=True)
class UncapturedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class InputChangedFacts(Facts):
    how: Literal["copy", "hash", "values"]
    gap_bytes: int = 0                     # bytes between a strided view's elements that changed
    resized: list[list[int]] | None = opt()   # [[shape before], [shape after]]
    slabs: int | None = opt()              # hash: slabs of rows that differ, of how many
    of: int | None = opt()
    # a write the spec declares (Spec's grad_overwritten=, mutated='backward'): what the buffer may hold
    # after the call ("gradient": a gradient of the reference's, or its data as passed), and it holds neither
    declared: Literal["gradient"] | None = opt()
    upstream: bool | None = opt()          # the buffer is an upstream gradient kladder handed the backward ('upstream y')


@dataclass(frozen=True, kw_only=True)
class NotBitwiseFacts(Facts):
    cause: str                             # outcome.Cause's value
    variant: str | None = opt()            # cachekey: what B changed


@dataclass(frozen=True, kw_only=True)
class PaddingFacts(Facts):
    cause: str = "padding"
    arg: str
    fill: str
    valid: int


@dataclass(frozen=True, kw_only=True)
class InvalidReferenceFacts(Facts):
    functions: list[str] = field(default_factory=list)   # the kernel's functions and GPU kernels the reference ran
    gpu_kernels: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class InvariantFacts(Facts):
    name: str


@dataclass(frozen=True, kw_only=True)
class NonfiniteFacts(Facts):
    pass


@dataclass(frozen=True, kw_only=True)
class ModelScoresFacts(Facts):
    """What the model mode measured (run/modes/in_model.py): kladder's model (where "slot") or
    the user's adapter (where "adapter")."""
    where: Literal["slot", "adapter"]
    baseline: float
    kernel: float
    samples: list[list[str]] = field(default_factory=list)
    slot: str | None = opt()
    target: str | None = opt()
    nll_baseline: float | None = opt()
    nll_kernel: float | None = opt()
    gain: float | None = opt()
    drift: float | None = opt()
    n: int | None = opt()
    dtype: str | None = opt()
    rise: float | None = opt()             # nll_kernel / nll_baseline - 1


@dataclass(frozen=True, kw_only=True)
class ModelFacts(ModelScoresFacts):
    """The model's answers got worse: metric "score" (baseline, kernel are scores) or "nll"
    (baseline, kernel are the NLLs; baseline_score, kernel_score the scores)."""
    metric: Literal["nll", "score"]
    allowed: float
    baseline_score: float | None = opt()
    kernel_score: float | None = opt()


@dataclass(frozen=True, kw_only=True)
class BiasFacts(Facts):
    lean: Literal["offset", "scale"]
    up: int
    down: int
    p: float
    mean_ulps: float
    rel: float
    peer: bool
    dtype: str


@dataclass(frozen=True, kw_only=True)
class RanFacts(Facts):
    """What a call ran (checks/dispatch.ran_facts): up to 12 of each, and how many in all."""
    launches: list[dict[str, Json]] = field(default_factory=list)   # [{name, params}]
    n_launches: int = 0
    gpu: list[str] = field(default_factory=list)
    n_gpu: int = 0
    functions: list[str] = field(default_factory=list)
    n_functions: int = 0
    unjudged: list[dict[str, Json]] | None = opt()   # expectations whose toolchain condition does not hold here:
                                                      # [{kernel, label, unmet: [{key, want, have}]}] (have None: absent)


@dataclass(frozen=True, kw_only=True)
class DispatchFacts(Facts):
    expected: list[dict[str, Json]]        # [{kernel, launch, label, when}] that did not run
    ran: RanFacts                          # what the call ran
    env: dict[str, Json] | None = opt()    # the variables the point set (None: unset)
    env_set: Literal["at_start", "after_import"] | None = opt()   # at the process's start, or after import and one call
    forbidden: list[dict[str, Json]] | None = opt()   # [{kernel, launch, label, when}] with runs=False that ran (returned)
    started: dict[str, Json] | None = opt()   # after_import: each variable as the process started (None: unset)


@dataclass(frozen=True, kw_only=True)
class FlagNoEffectFacts(Facts):
    flag: str
    values: list[Json]
    how: Literal["binary", "source", "names"]
    runs: list[dict[str, Json]]            # [{value, launches, gpu}], after_import: [{value, started, launches, gpu}]
    set: Literal["at_start", "after_import"] | None = opt()   # after_import: each value set after the kernel's module
                                                               # was imported and the kernel called once
    variable: str | None = opt()          # an environment flag's variable (its values: strings, None for unset)


@dataclass(frozen=True, kw_only=True)
class ImportContractFacts(Facts):
    name: str
    problem: Literal["missing", "untested"]
    error: str | None = opt()              # missing: why it does not resolve
    text: str | None = opt()
    object: str | None = opt()             # untested: what it resolves to


@dataclass(frozen=True, kw_only=True)
class CaughtImportFacts(ErrorFacts):
    module: str
    where: str                             # file:line


@dataclass(frozen=True, kw_only=True)
class CollectiveFacts(Facts):
    ranks: dict[str, list[int]]            # {rank: its wrong calls, 1-based}
    sizes_wrong: list[int]
    sizes: list[int]
    dim: str
    world: int
    lag: int
    queued: int
    kinds: list[str]                       # the checks the wrong calls failed


@dataclass(frozen=True, kw_only=True)
class RanksHungFacts(Facts):
    watchdog_s: float
    waited_s: float
    queued: int
    dim: str
    lag: int
    ranks: list[dict[str, Json]]           # [{rank, phase, launched, finished, size}]


@dataclass(frozen=True, kw_only=True)
class AccumulatedFacts(Facts):
    """Rung 5's evidence kept across climbs (history/outcomes.py): the clean calls of every climb
    that ran this point under the same key (history/key.py: same point, spec, code, toolchain),
    this climb's included, and the bound they prove together (stats.upper_bound)."""
    climbs: int                            # climbs that ran the point clean under this key
    calls: int                             # their calls compared (or judged, for a stream), all together
    bound: float                           # the rate of a wrong call is below this, at `conf`
    conf: float
    since: str                             # when the first of them ran (local time, ISO 8601)


@dataclass(frozen=True, kw_only=True)
class RepeatsCleanFacts(Facts):
    """Rung 5 (checks/repetition.py): calls compared with the first call on the same inputs,
    and the rate's statistics (stats.summary)."""
    calls: int
    compared: int
    firsts: int
    differ: int
    wrong: int
    deterministic: bool
    launch: str
    inputs: str
    load: bool
    seconds: float
    stopped: str
    fallback: ErrorFacts | None = None     # the capture's error, when graph replays fell back to eager calls
    post_graph: str | None = None
    calls_s: float = 0.0
    rate: float = 0.0
    lo: float = 0.0
    hi: float = 0.0
    conf: float = 0.0
    bound: float = 0.0
    calls_50: int | float | None = None
    calls_95: int | float | None = None
    curve: list[list[float]] = field(default_factory=list)   # [[N, p, lo, hi]]
    accumulated: AccumulatedFacts | None = opt()   # with earlier climbs under the same key (history/outcomes.py)


@dataclass(frozen=True, kw_only=True)
class RepeatsFacts(RepeatsCleanFacts):
    first_calls: list[int] = field(default_factory=list)
    worst_call: int = 0
    bitwise: bool = False                  # counted bitwise differences (nondeterministic), not wrong calls
    against: Literal["reference", "first call"] = "first call"
    nonfinite: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class NondeterministicFacts(RepeatsFacts):
    """A warning: calls that differ bit for bit, within the tolerance (Check.REPEATS's facts)."""


@dataclass(frozen=True, kw_only=True)
class StreamCleanFacts(Facts):
    """Rung 5's stream (checks/repetition.py judge_stream): calls in the model's pattern, each on
    its own inputs and judged against the reference of those inputs, and the rate's statistics."""
    calls: int                             # calls made (the stream's first, judged as every rung-1 call, included)
    judged: int                            # calls judged against their own reference (each after the first)
    wrong: int
    sets: int                              # distinct input sets the calls ran on
    pattern: str                           # one step of the model's calls ("AABB")
    fresh: bool                            # every step new input sets
    count: int                             # the calls asked for (kl.Calls.count, or rung 5's default)
    declared: bool                         # the spec declares kl.Calls
    seconds: float
    stopped: str                           # "calls" | "seconds": which budget ended the stream
    batched: bool                          # the reference ran once per batch (torch.func.vmap), not once per input set
    undecided: int = 0                     # calls over the dtype's default left undecided (the peers' time budget ran out)
    peered: int = 0                        # calls over the dtype's default the honest peer was asked about
    excused: int = 0                       # of those, the calls it excused (a correct implementation does as badly)
    truncated: int = 0                     # bfloat16 calls not judged: only the interpreter's truncation puts them over
    calls_s: float = 0.0
    rate: float = 0.0
    lo: float = 0.0
    hi: float = 0.0
    conf: float = 0.0
    bound: float = 0.0
    calls_50: int | float | None = None
    calls_95: int | float | None = None
    curve: list[list[float]] = field(default_factory=list)   # [[N, p, lo, hi]]
    accumulated: AccumulatedFacts | None = opt()   # with earlier climbs under the same key (history/outcomes.py)


@dataclass(frozen=True, kw_only=True)
class StreamFacts(StreamCleanFacts):
    first_wrong: int = 0                   # the first wrong call's number, counting from 1 over the stream
    first_calls: list[int] = field(default_factory=list)   # the numbers of the first wrong calls (up to 8)
    step: int = 0                          # the first wrong call's step of the pattern, from 1
    letter: str = ""                       # its input set's letter in the pattern
    nonfinite: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class SanitizerFacts(Facts):
    tool: str
    kind: str                              # invalid | uninitialized | misaligned | race | unread | ...
    count: int = 1
    text: str | None = opt()
    kernel: str | None = opt()
    file: str | None = opt()
    line: int | str | None = opt()
    access: str | None = opt()
    size: int | str | None = opt()
    address: str | None = opt()
    detail: str | None = opt()
    thread: str | None = opt()
    block: str | None = opt()
    severity: str | None = opt()
    second: dict[str, Json] | None = None    # a race's other access (None for another kind)

    sometimes: ClassVar[tuple[str, ...]] = ("second",)

    def left_out(self) -> tuple[str, ...]:
        return ("second",) if self.kind == "unread" else ()     # a report kladder could not read: tool, kind, count


@dataclass(frozen=True, kw_only=True)
class UnderLoadFacts(LoadFacts):
    first: str                             # the check or status of the run under load


@dataclass(frozen=True, kw_only=True)
class CrashedNotAloneFacts(Facts):
    signal: str | None
    frames: list[str]
    heap_words: str                        # glibc's message, or ''
    earlier: int                           # other points that ran in the worker before it
    alone: str                             # the point's status alone


# ---------------------------------------------------------------------------- notes
@dataclass(frozen=True, kw_only=True)
class NoOutArgsFacts(Facts):
    pass


@dataclass(frozen=True, kw_only=True)
class NotTorchOpFacts(Facts):
    pass


@dataclass(frozen=True, kw_only=True)
class GpuPointFacts(Facts):
    need_bytes: int
    budget: str


@dataclass(frozen=True, kw_only=True)
class ValueOutOfRangeFacts(Facts):
    """A rung-2 value kind that no value inside an input's declared range can show (fill.range_problem)."""
    arg: str
    value: str                                  # the value kind, as the point holds it ("tiny")
    lo: float                                   # the declared range at the point's sizes
    hi: float
    why: str                                    # no_value (the dtype holds no value there), no_tiny, no_one


@dataclass(frozen=True, kw_only=True)
class NoDeviceMemoryFacts(Facts):
    need_bytes: int
    free_bytes: int
    measured: str | None = opt()           # the point whose measured peak sized need_bytes (sizes.Peak), or None:
    measured_bytes: int | None = opt()     # the declared tensors alone; its peak


@dataclass(frozen=True, kw_only=True)
class NoHostMemoryFacts(Facts):
    """A point whose estimated peak on the host (sizes.Peak: a measured small point's peak
    scaled by the elements) is more than the host's share for one worker: skipped before it ran."""
    need_bytes: int
    share_bytes: int                       # the host's available memory over the workers that share it
    workers: int
    measured: str                          # the point whose peak was measured
    measured_bytes: int


@dataclass(frozen=True, kw_only=True)
class ModeNeedsCudaFacts(Facts):
    mode: str


@dataclass(frozen=True, kw_only=True)
class OutsideClimbFacts(Facts):
    mode: str


@dataclass(frozen=True, kw_only=True)
class GraphsNotClaimedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class LayoutRefusedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class RefusedAsDocumentedFacts(ErrorFacts):
    label: str | None = opt()               # the runs=False expectation's label, where it has one


@dataclass(frozen=True, kw_only=True)
class InputsFailedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class ReferenceRaisedFacts(ErrorFacts):
    pass


@dataclass(frozen=True, kw_only=True)
class ReferenceShapeFacts(Facts):
    """The reference returned an output of another shape than `returns=` declares, while the
    kernel's output has the declared shape: the spec's problem, never the kernel's."""
    output: str
    shape: list[int]                            # the reference's output
    declared: list[int]                         # returns= at the point's sizes (and the kernel's output)


@dataclass(frozen=True, kw_only=True)
class InputsMutatedFacts(Facts):
    args: list[str]
    when: Literal["accumulate"] | None = opt()   # an accumulation point whose backward writes what it reads again


@dataclass(frozen=True, kw_only=True)
class RaceNotSetUpFacts(Facts):
    attempts: int
    delay_cycles: int


@dataclass(frozen=True, kw_only=True)
class RaisedAsAskedFacts(Facts):
    error: str


@dataclass(frozen=True, kw_only=True)
class ReferenceNanFacts(Facts):
    output: str
    count: int
    total: int
    at: list[int]                          # the first, as the kernel's index


@dataclass(frozen=True, kw_only=True)
class InvariantRaisedFacts(ErrorFacts):
    name: str


@dataclass(frozen=True, kw_only=True)
class ProcessFailedFacts(Facts):
    label: str
    text: str


@dataclass(frozen=True, kw_only=True)
class NoSuchSlotFacts(Facts):
    slot: str
    slots: list[str]


@dataclass(frozen=True, kw_only=True)
class BaselineFailedFacts(ErrorFacts):
    user: bool


@dataclass(frozen=True, kw_only=True)
class KladderErrorFacts(ErrorFacts):
    trace: str


@dataclass(frozen=True, kw_only=True)
class KernelOomFacts(Facts):
    call: str
    text: str


@dataclass(frozen=True, kw_only=True)
class InputsOomFacts(Facts):
    text: str


@dataclass(frozen=True, kw_only=True)
class CacheFilesFacts(Facts):
    files: int


@dataclass(frozen=True, kw_only=True)
class RunToRunFacts(Facts):
    """A's two calls on the same inputs, before B, differ bit for bit (Spec(deterministic=False)):
    the outputs that vary, their differing elements and elements in all, the mode (aba, jitcache),
    and the cold process's cache files (jitcache)."""
    outputs: list[str]
    differ: int
    total: int
    mode: str
    files: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class FlagChangedFacts(Facts):
    flag: str
    values: list[Json]
    how: Literal["binary", "source", "names"]
    codes: int                             # distinct code objects over the values
    set: Literal["at_start", "after_import"] | None = opt()   # after_import: set after import and one call


@dataclass(frozen=True, kw_only=True)
class FlagNotVisibleFacts(Facts):
    flag: str


@dataclass(frozen=True, kw_only=True)
class NotCompiledFacts(Facts):
    variant: str


@dataclass(frozen=True, kw_only=True)
class ImportsCheckedFacts(Facts):
    names: list[str]
    traced: list[str]                      # the modules whose import was traced


@dataclass(frozen=True, kw_only=True)
class CacheMissedFacts(Facts):
    variant: str
    files_cold: int
    files_added: int


@dataclass(frozen=True, kw_only=True)
class CollectiveNeedsCudaFacts(Facts):
    world: int


@dataclass(frozen=True, kw_only=True)
class NotEnoughGpusFacts(Facts):
    world: int
    gpus: int


@dataclass(frozen=True, kw_only=True)
class RankFailedFacts(ErrorFacts):
    rank: int
    phase: str


@dataclass(frozen=True, kw_only=True)
class CollectiveCallsFacts(Facts):
    world: int
    queued: int
    lag: int
    lag_us: float
    dim: str
    sizes: list[int]
    backend: str
    seconds: float


@dataclass(frozen=True, kw_only=True)
class SanitizerCleanFacts(Facts):
    tool: str
    calls: int


@dataclass(frozen=True, kw_only=True)
class NoSanitizerFacts(Facts):
    tool: str
    searched: list[str]


@dataclass(frozen=True, kw_only=True)
class InterpreterDefectFacts(Facts):
    feature: str                           # run/interpreter.py's feature, and its probe's evidence
    what: str
    x: list[float]
    got: list[float]
    want: list[float]


@dataclass(frozen=True, kw_only=True)
class InterpreterErrorFacts(ErrorFacts):
    probe: str | None = opt()              # the feature whose probe raised the same


@dataclass(frozen=True, kw_only=True)
class StageOverrunFacts(Facts):
    stage: str                             # outcome.Stage's value
    seconds: float
    budget_s: float
    timeout_s: float
    elements: int | None = opt()           # the point's tensors, when known


@dataclass(frozen=True, kw_only=True)
class DeviceFullFacts(LoadFacts):
    first: str                             # the run under load's NoteKind
    text: str                              # its OOM's text


@dataclass(frozen=True, kw_only=True)
class HostFullFacts(LoadFacts):
    """The worker was killed (SIGKILL: the out-of-memory killer) while the host's memory was full or
    the killer was at work, and alone it could not show otherwise: not judged."""
    signal: str                            # how the run under load ended
    first: str                             # its check ("crashed") or status


@dataclass(frozen=True, kw_only=True)
class ReferenceNotIndependentFacts(Facts):
    """The reference runs the kernel under test's own code (checks/independence.py): the spec's problem."""
    reference: str                         # the reference's name
    functions: list[str] = field(default_factory=list)     # the kernel's launchers the reference called
    jit_kernels: list[str] = field(default_factory=list)   # the Triton kernels both launched
    gpu_kernels: list[str] = field(default_factory=list)   # GPU kernels of the kernel's own (no torch op's) both ran
    torch_op: str | None = opt()           # the kernel under test is this torch op, and the reference calls it


@dataclass(frozen=True, kw_only=True)
class HostBusyFacts(LoadFacts):
    """A hang under load and alone too, with the alone run's load (run/faults.under_load): other
    processes held the host's CPUs and the worker waited for one (runnable, not running) at least
    half the time."""
    timeout_s: float                       # the kernel's limit, wall time
    cores: int                             # the host's CPUs


# ---------------------------------------------------------------------------- golden hashes (--golden)
@dataclass(frozen=True, kw_only=True)
class GoldenPointFacts(Facts):
    """One point's output bits against the golden hashes (history/golden.check): equal to them,
    changed since they were kept (which outputs), none kept for this point, or not compared
    (its outputs are nondeterministic: their bits are not stable)."""
    bits: Literal["equal", "changed", "not_kept", "nondeterministic"]
    since: str | None                           # when the golden hashes were kept (ISO date and time; None: none are)
    outputs: list[str] | None = opt()           # changed: the outputs whose bits differ


@dataclass(frozen=True, kw_only=True)
class GoldenRecordFacts(Facts):
    """`kladder golden record SPEC`: the climb whose output hashes were kept, for which target,
    and the points not kept (nondeterministic outputs; no output made)."""
    spec: str
    climb: int                                  # the climb's number (#N in `kladder history`)
    target: dict[str, Json]                     # the (device, toolchain) they hold for (history/store.toolchain)
    kept: int                                   # points whose hashes were kept
    recorded: str                               # when (ISO date and time)
    nondeterministic: list[str]                 # not kept: their outputs' bits are not stable
    no_hashes: list[str]                        # not kept: no output made (skipped, crashed, ...)


@dataclass(frozen=True, kw_only=True)
class GoldenChangedFacts(Facts):
    """A point whose output bits are not the golden ones."""
    id: str
    outputs: list[str]                          # the outputs whose bits differ


@dataclass(frozen=True, kw_only=True)
class GoldenFacts(Facts):
    """A climb's points against the golden hashes of its spec (`--golden`; `kladder golden record`):
    the (device, toolchain) target they were kept for, what differs from this climb's, and the
    points in each class, the nondeterministic ones apart. With --golden=strict, bits changed at
    a point, or no golden hashes of the spec at all, fail the climb (`fails`: exit 1 where every
    point passed; the report's exit_code says it)."""
    recorded: str | None                        # when the golden hashes were kept (None: the spec has none)
    target: dict[str, Json]                     # the toolchain they were kept for (history/store.toolchain)
    toolchain: dict[str, list[Json]]            # what differs: name -> [the golden's, this climb's]
    strict: bool                                # --golden=strict: a change is a failure (exit 1)
    fails: bool                                 # strict, and bits changed (or none kept): the climb fails for it
    equal: list[str]                            # point ids whose bits are the golden's
    changed: list[GoldenChangedFacts]           # the points whose bits differ, and which outputs
    not_kept: list[str]                         # no golden hashes for them (a new point, or no output made)
    nondeterministic: list[str]                 # not compared: their outputs' bits are not stable

    def of_point(self, point_id: str) -> GoldenPointFacts | None:
        if point_id in self.equal:
            return GoldenPointFacts(bits="equal", since=self.recorded)
        for c in self.changed:
            if c.id == point_id:
                return GoldenPointFacts(bits="changed", since=self.recorded, outputs=list(c.outputs))
        for kind in ("not_kept", "nondeterministic"):
            if point_id in getattr(self, kind):
                return GoldenPointFacts(bits=kind, since=self.recorded)
        return None


# ---------------------------------------------------------------------------- the outcome store (history/outcomes.py)
@dataclass(frozen=True, kw_only=True)
class ReusedFacts(Facts):
    """A point's outcome reused from an earlier climb (its key unchanged: history/key.py), not run
    in this one: the climb that ran it."""
    run_id: str                            # the run id of the climb that ran it
    climb: int | None                      # that climb's number in the history (#N), where it is recorded
    kept: str                              # when it ran (local time, ISO 8601)


@dataclass(frozen=True, kw_only=True)
class ReuseFacts(Facts):
    """What a climb took from the outcome store (history/outcomes.py) and what it ran. A passed
    outcome (or a skip for a reason its key decides) whose key is unchanged is reused; every
    other point runs."""
    points: int                            # the climb's points
    reused: int                            # taken from the store, not run
    ran: int                               # run in this climb
    climbs: list[int]                      # the history's numbers (#N) of the climbs the reused outcomes come from
    run_ids: list[str]                     # their run ids (a climb the history no longer holds has no number)
    fresh: bool                            # --fresh: nothing was reused (this climb's outcomes are kept all the same)
    accumulate: bool                       # --accumulate: rung 5's clean points ran again, adding their calls
    why_not: str | None = None             # why nothing could be reused: a part of the key cannot be computed
    changed: list[str] = field(default_factory=list)   # parts of the key changed since the spec's last climb kept
                                                        # (history/key.py PART_WORDS: kernel, reference, spec, ...)
    since: int | None = opt()              # the climb `changed` compares with (#N)


# ---------------------------------------------------------------------------- kladder diff (history/diff.py)
@dataclass(frozen=True, kw_only=True)
class DiffClimbFacts(Facts):
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
class DiffPointFacts(Facts):
    """A point both climbs ran, its status in each (and the headline check's name)."""
    id: str
    rung: int
    before: str
    after: str
    failure_before: str | None
    failure_after: str | None


@dataclass(frozen=True, kw_only=True)
class DiffBitsFacts(DiffPointFacts):
    """A point with the same status in both climbs and other output bits."""
    outputs: list[str]                          # the outputs whose hashes differ


@dataclass(frozen=True, kw_only=True)
class SlowerRungFacts(Facts):
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
class ClimbLoadFacts(Facts):
    """What else used the host and the device while one climb's points ran (outcome.Load of each
    point's run, as the history keeps it; history/diff.py sums them)."""
    points: int                                 # points whose load was recorded
    seconds: float                              # their wall time in all
    others_cores: float                         # other processes' CPU seconds a second: the cores they kept busy
    wait_share: float                           # the share of that time the points' workers waited for a CPU
    lanes: float                                # other lanes of the climb running meanwhile, on average (--jobs)
    device_processes: float                     # other processes on the device, on average (CUDA; 0 where not asked)


@dataclass(frozen=True, kw_only=True)
class TimingFacts(Facts):
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
class DiffFacts(Facts):
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


# ---------------------------------------------------------------------------- shrinking (shrink.py)
@dataclass(frozen=True, kw_only=True)
class EdgeFacts(Facts):
    """Where one dim's bisection ended: size `fails` failed and `passes`, the size below it, did
    not, with the smallest point's inputs; both run again under other seeds (other inputs of the
    same kinds at the same sizes): of `seeds` input sets, how many failed at `fails` and how many
    passed at `passes`, and how often a size below the edge failed under another seed first (the
    point moved down)."""
    dim: str
    fails: int
    passes: int
    seeds: int
    fails_under: int
    passes_under: int
    moved_down: int


@dataclass(frozen=True, kw_only=True)
class ShrinkCauseFacts(Facts):
    """What decides the smallest failing point's failure (shrink.py). kind: `values` (the value
    kinds: normal values pass at the failing point's shape, and no shape edge holds), `layout`
    (likewise its inputs' layouts: contiguous inputs pass there), `shape` (an edge that holds
    under every seed: the size decides it), `inputs` (normal values, and the edge moves with the
    seed: the inputs' values decide where it fails), `floor` (normal values fail at every dim's
    floor: no value kind is needed and no smaller shape can show an edge), `unsettled` (the
    budget ran out first)."""
    kind: Literal["values", "layout", "shape", "inputs", "floor", "unsettled"]
    values: list[list[str]]                     # the smallest point's value kinds, [input, kind] ([]: normal values)
    milder: str | None                          # the failing point's shape with normal values: what it gave (None: not run)
    milder_at: list[list[Json]]                 # the failing point's shape ([dim, size] pairs): where those runs were made
    floors: bool                                # every dim of the smallest point is at its floor
    every_shape: bool                           # every shape run with these values failed, under one seed or another
    shapes: int                                 # shapes run with these values
    edges: list[EdgeFacts]                      # per dim whose floor passes: where it starts failing
    layouts: list[list[str]] = field(default_factory=list)   # the smallest point's layouts, [input, layout] ([]: contiguous)
    contiguous: str | None = None               # its shape with contiguous inputs: what it gave (None: not run)


# ---------------------------------------------------------------------------- the tables
CHECK_FACTS: dict[str, type[Facts]] = {
    "contract": ContractFacts, "values": ValuesFacts, "guard": GuardFacts, "raised": RaisedFacts,
    "crashed": CrashedFacts, "hang": HangFacts, "device_fault": DeviceFaultFacts, "capture": CaptureFacts,
    "uncaptured": UncapturedFacts, "input_changed": InputChangedFacts, "not_bitwise": NotBitwiseFacts,
    "padding": PaddingFacts, "invalid_reference": InvalidReferenceFacts, "invariant": InvariantFacts,
    "nonfinite": NonfiniteFacts, "model": ModelFacts, "bias": BiasFacts, "dispatch": DispatchFacts,
    "flag_no_effect": FlagNoEffectFacts, "import_contract": ImportContractFacts, "caught_import": CaughtImportFacts,
    "collective": CollectiveFacts, "ranks_hung": RanksHungFacts, "repeats": RepeatsFacts,
    "nondeterministic": NondeterministicFacts, "stream": StreamFacts, "sanitizer": SanitizerFacts, "under_load": UnderLoadFacts,
    "crashed_not_alone": CrashedNotAloneFacts,
}

NOTE_FACTS: dict[str, type[Facts]] = {
    "gpu_point": GpuPointFacts, "value_out_of_range": ValueOutOfRangeFacts, "no_device_memory": NoDeviceMemoryFacts, "mode_needs_cuda": ModeNeedsCudaFacts,
    "graphs_not_claimed": GraphsNotClaimedFacts, "no_out_args": NoOutArgsFacts, "inputs_mutated": InputsMutatedFacts,
    "not_torch_op": NotTorchOpFacts, "outside_climb": OutsideClimbFacts, "race_not_set_up": RaceNotSetUpFacts,
    "layout_refused": LayoutRefusedFacts, "raised_as_asked": RaisedAsAskedFacts,
    "refused_as_documented": RefusedAsDocumentedFacts, "inputs_failed": InputsFailedFacts,
    "reference_raised": ReferenceRaisedFacts, "reference_shape": ReferenceShapeFacts,
    "reference_nan": ReferenceNanFacts, "invariant_raised": InvariantRaisedFacts, "process_failed": ProcessFailedFacts,
    "no_such_slot": NoSuchSlotFacts, "baseline_failed": BaselineFailedFacts, "kladder_error": KladderErrorFacts,
    "kernel_oom": KernelOomFacts, "inputs_oom": InputsOomFacts, "model_scores": ModelScoresFacts,
    "cache_files": CacheFilesFacts, "run_to_run": RunToRunFacts, "ran": RanFacts, "flag_changed": FlagChangedFacts, "flag_not_visible": FlagNotVisibleFacts,
    "not_compiled": NotCompiledFacts, "imports_checked": ImportsCheckedFacts, "cache_missed": CacheMissedFacts,
    "collective_needs_cuda": CollectiveNeedsCudaFacts, "not_enough_gpus": NotEnoughGpusFacts, "rank_failed": RankFailedFacts,
    "collective_calls": CollectiveCallsFacts, "repeats_clean": RepeatsCleanFacts, "stream_clean": StreamCleanFacts,
    "sanitizer_clean": SanitizerCleanFacts, "no_sanitizer": NoSanitizerFacts,
    "interpreter_defect": InterpreterDefectFacts, "interpreter_error": InterpreterErrorFacts,
    "stage_overrun": StageOverrunFacts, "device_full": DeviceFullFacts,
    "host_busy": HostBusyFacts, "host_full": HostFullFacts, "no_host_memory": NoHostMemoryFacts,
    "reference_not_independent": ReferenceNotIndependentFacts,
}
