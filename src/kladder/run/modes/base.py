"""What every mode shares: the Protocol, what a mode observes, and the two ways to call."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Literal

from ...core.facts import ErrorFacts, NotBitwiseFacts, PaddingFacts, Plain
from ...core.notation import Inputs, Launch
from ...core.outcome import Cause, Note


@dataclass
class Call:
    """One call of the kernel: its prepared inputs, what it returned, which call it was."""
    prep: Any
    returned: Any
    label: str = ""


@dataclass
class Uncaptured:
    """The kernel could not be captured in a CUDA graph, and the spec does not claim that
    production graphs it: the capture's error; `skip` when the spec says production does not
    (Spec.graphs False: the point is skipped, not judged)."""
    facts: ErrorFacts
    skip: bool = False


@dataclass
class Same:
    """Two results that must be equal bit for bit, and why (the cause); `facts`: the finding's
    facts where they differ, when the mode knows more than the cause (padding: which input and
    fill; cachekey: what B changed). None: NotBitwiseFacts of the cause alone."""
    before: dict
    after: dict
    cause: Cause
    call: str
    facts: NotBitwiseFacts | PaddingFacts | None = None


@dataclass
class Traces:
    """What the kernel and the reference each ran (reference independence): Python functions
    called (code object -> 'name (file:line)'), the kernel's own launchers and the @triton.jit
    bodies the interpreter ran, the Triton kernels each launched (function -> 'name
    (file:line)'), on CUDA the GPU kernels the profiler recorded (the kernel's: name -> the op
    that launched it, '' for none), and, when the kernel under test is itself a torch op
    (`torch_op`), the reference's calls of that op."""
    kernel_called: dict
    kernel_bodies: set
    launchers: set
    reference_called: dict
    kernel_gpu: dict = field(default_factory=dict)
    reference_gpu: dict = field(default_factory=dict)   # name -> the torch op that launched it ('' none)
    kernel_jit: dict = field(default_factory=dict)
    reference_jit: dict = field(default_factory=dict)
    torch_op: str | None = None
    reference_op_calls: list = field(default_factory=list)
    reference: str = ""              # the reference's name, as the spec's problem names it


@dataclass
class Scores:
    """A model's scores with and without the kernel (rung 8)."""
    measured: dict


@dataclass
class Measured:
    """What a passing mode measured, kept as the outcome's note (the cache's files)."""
    note: Note


@dataclass
class Ran:
    """What one call ran (rung 7): the Triton kernels it launched (tracing.Launch.to_dict():
    name, params, code, how, asm), the GPU kernels the profiler recorded (CUDA), the Python
    functions it called (qualified names, first call first)."""
    launches: list
    gpu: list = field(default_factory=list)
    functions: list = field(default_factory=list)
    label: str = ""
    env: dict = field(default_factory=dict)     # the variables the spec's `when`s name, as the call had them (None: unset)


@dataclass
class Flagged:
    """A flag's values, each with what its call ran (rung 7's flags mode): [(value, Ran)]; `set`
    "after_import" when each value was set after import and one call, `started` then what the
    variable held at each process's start (None: unset)."""
    flag: str
    runs: list
    set: str = ""
    started: list = field(default_factory=list)
    variable: str | None = None     # an environment flag's variable (None: a launcher keyword)


@dataclass
class Imported:
    """Rung 7's import contracts: each declared 'pkg.mod:name' with the object it resolved to
    or the error's facts; what the kernel's call ran (code objects called, @triton.jit objects
    launched); and the ImportErrors raised and caught while the kernel's modules were imported
    afresh ([{module, where, error, text}]), with the modules whose import was traced."""
    resolved: list
    called: set
    launched: list
    caught: list
    traced: list


@dataclass
class RankCall:
    """One finished call of one rank (rung 6): its outputs (None where the kernel returned no
    tensor; `returned` then names what it returned), the reference collective's outputs, and
    the guard bytes that changed around each tensor ((before, after) offsets)."""
    rank: int
    call: int                      # 0-based
    size: int                      # the message dim's size at this call
    outputs: dict
    expected: dict
    damaged: dict
    returned: dict = field(default_factory=dict)
    devices: dict = field(default_factory=dict)    # output name -> the device it came back on ("cuda:1")
    label: str = ""                                # "rank 0, call 5 of 64 (N=2047)"


@dataclass
class Ranks:
    """What the ranks of a collective did (rung 6): every call each rank finished, and how
    the run ended."""
    world: int
    lag: int
    sizes: list
    calls: list
    ended: Ended


@dataclass
class RankPlace(Plain):
    """Where one rank stood when a collective's run ended: its phase, the calls it launched and
    finished, and the message size of the call it was on (None: past the last)."""
    rank: int
    phase: str
    launched: int
    finished: int
    size: int | None = None


@dataclass
class Ended(Plain):
    """How a collective's run ended (run/modes/collective.py; a rank's record in its folder holds
    its own as JSON, run/rank.py): `how` is
    - done: every rank finished;
    - hung: no rank moved for waited_s (the watchdog's watchdog_s): where each stood (ranks);
    - raised: a rank's call raised (rank, call, kind: raised | device_fault | oom, error, text, at);
    - died: a rank's process died by a signal (rank, signal, call, phase);
    - broken / oom: kladder's side of a rank, or the spec's (rank, phase; note: the spec's problem
      as a Note, else error and text).
    label, queued and dim: the call a finding names (the raising, dying or most-behind rank's)."""
    how: Literal["done", "hung", "raised", "died", "broken", "oom"]
    rank: int = 0
    phase: str = ""
    call: int = -1                   # 0-based; -1: before the first call (setup)
    kind: str = ""
    error: str = ""
    text: str = ""
    at: float = 0.0                  # when it raised (time.time(): the earliest raise is the cause)
    signal: str = ""
    note: Note | None = None
    ranks: list[RankPlace] = field(default_factory=list)
    watchdog_s: float = 0.0
    waited_s: float = 0.0
    label: str = ""
    queued: int = 0
    dim: str = ""


@dataclass(frozen=True)
class PostGraph:
    """Rung 5's fused comparison under a graph launch (each batch's comparison captured as one
    graph): not tried, captured, or the capture's error (the batches then run op by op). Its
    text, as a report's facts hold it: "" (not tried), "captured", or the error."""
    tried: bool = False
    error: str = ""

    CAPTURED = "captured"

    def __post_init__(self):
        if self.error and not self.tried:
            raise ValueError(f"PostGraph: an error ({self.error!r}) means a capture was tried.")
        if self.error == self.CAPTURED:
            raise ValueError(f"PostGraph: {self.CAPTURED!r} is not an error; give PostGraph(tried=True).")

    @property
    def captured(self) -> bool:
        return self.tried and not self.error

    @classmethod
    def failed(cls, error: str) -> "PostGraph":
        return cls(True, error)

    @classmethod
    def parse(cls, text: str) -> "PostGraph":
        if not text:
            return cls()
        return cls(True) if text == cls.CAPTURED else cls(True, text)

    def format(self) -> str:
        if not self.tried:
            return ""
        return self.error or self.CAPTURED


@dataclass
class Repeats:
    """Many calls of one point (rung 5), each compared on the device with the first call on the
    same inputs: per output, per compared call, the elements whose bits differ (`bits`) and those
    further from the first call's value than twice the tolerance (`far`), as CPU int64 tensors.
    `worst` holds the outputs of the call furthest from its first (most `far`, then most `bits`)
    and `worst_prep` its input set, for the checks to hold against the reference."""
    bits: dict
    far: dict
    calls: int                      # calls made, the first call on each input set included
    firsts: int                     # input sets: one first call each, the others compared with them
    seconds: float                  # the repetition loop's wall time (after capture and the first calls)
    launch: Launch                  # GRAPH (replays of captured calls) or EAGER
    inputs: Inputs                  # SAME or FRESH (a pool of input sets, cycled)
    load: bool                      # a second stream of work ran beside the calls
    stopped: str                    # "calls" or "seconds": which budget ended the loop
    fallback: dict | None = None    # why the calls ran eagerly though a graph was asked for (error facts)
    looped: int = 0                 # the calls made in those `seconds` (the first calls came before)
    post_graph: PostGraph = PostGraph()  # graph launch: each batch's comparison one graph, or why not
    worst_call: int = 0             # the worst call's number, counting from 1 over every call made
    worst: dict | None = None
    worst_prep: Any = None
    worst_first: dict | None = None  # the first call's outputs on the worst call's input set


@dataclass
class StreamBatch:
    """One batch of rung 5's stream (run/modes/calls.py): calls first_call.. in order, call j on
    input set sets[j] (prepared as preps[j], at (step, letter) where[j] of the pattern), its
    outputs in outputs[name][j] and the reference of its inputs in refs[name][j]. The tensors are
    the mode's ring: judged before the next batch overwrites them."""
    first_call: int                 # the batch's first call's number, counting from 1 over the stream
    sets: list
    preps: list
    outputs: dict
    refs: dict
    where: list
    budget_s: float = 0.0           # the stream's time budget (the checks' share for the honest peer is part of it)


@dataclass
class Streamed:
    """How rung 5's stream ended: calls made (call 1 included), distinct input sets, its time,
    which budget ended it, the pattern, and whether the reference ran batched."""
    calls: int
    seconds: float
    stopped: str                    # "calls" | "seconds"
    sets: int
    pattern: str
    fresh: bool
    count: int
    declared: bool
    batched: bool


@dataclass
class Sanitized:
    """What compute-sanitizer reported on the point's calls in a child process: each error it
    printed, the count its summary gave, and how many calls ran under it."""
    tool: str
    errors: list[SanitizerError]
    summary: int | None
    calls: int


@dataclass
class SanitizerAccess:
    """A race's other access (racecheck): read or write, and where."""
    access: str
    kernel: str = ""
    file: str = ""
    line: int = 0


@dataclass
class SanitizerError:
    """One error compute-sanitizer printed (run/modes/sanitize.parse reads it line by line): the
    tool, its kind (invalid, uninitialized, misaligned, race, barrier, ...), the line that opened it,
    where (kernel, source file and line), the access, its size, the address and what the tool says
    of it, the thread and block; a race's severity, its other access and the hazards counted."""
    tool: str
    kind: str
    text: str
    kernel: str = ""
    file: str = ""
    line: int = 0
    access: str = ""
    size: int = 0
    address: str = ""
    detail: str = ""
    thread: str = ""
    block: str = ""
    count: int = 1
    severity: str = ""               # racecheck: error | warning | info
    second: SanitizerAccess | None = None


class Mode:
    """An execution mode: one class a module (run/modes/), its name one of notation.Mode's, its
    traits declared here as class attributes (overridden where a mode differs), and `observe`.
    The registry is every subclass defined in a module of run/modes/ (modes.traits, modes.get):
    the climb, the pool, the harness and the trial ask the mode, never a table of mode names."""
    name: ClassVar[str] = ""
    # the rungs whose generators make points of this mode (gaps/): a point of another pairing is
    # no point a climb makes (pointcheck)
    rungs: ClassVar[tuple[int, ...]] = ()
    # runs only on a CUDA device (elsewhere the point is skipped, MODE_NEEDS_CUDA)
    needs_cuda: ClassVar[bool] = False
    # processes of its own a point starts (a new Python importing torch, Triton and the spec before
    # it calls anything), each allowed timeouts.CHILD_TIMEOUT_FACTOR point timeouts
    child_processes: ClassVar[int] = 0
    # a process of its own whose time is the point's own (compute-sanitizer's child): started early
    # like the modes with child processes, its timeout not extended
    starts_child: ClassVar[bool] = False
    # about state one call leaves for the next: each point runs alone in a new worker, so that its
    # first call is the first of a fresh process (else the points before it set the state)
    fresh_process: ClassVar[bool] = False
    # all its calls run in processes of its own, new for every point (a collective's ranks): running
    # such a point alone in a new worker would change nothing
    own_processes: ClassVar[bool] = False
    # the order points start in a rung (lower first): the longest start first, so that the rest
    # share the other lanes meanwhile (the results still come in the rung's order)
    start_order: ClassVar[int] = 2
    # its calls go on for a time budget (Point.repeat's seconds: rung 5's repetition and stream of
    # calls), a lane's worth of work by itself (ladder.timed)
    runs_for_a_budget: ClassVar[bool] = False
    # the devices where its calls run under torch's profiler (CUDA: the GPU kernels a call ran),
    # whose first start in a worker takes seconds before anything is called (CUPTI: 4.8-7.5 s a
    # worker on an H100, docs/results/2026-12-07-h100-cold): such points, of every rung climbed,
    # start at the climb's start one after another on one lane of their own (ladder.profiled), so
    # the profiler starts once a climb and on no rung's path
    profiles_on: ClassVar[tuple[str, ...]] = ()
    # its calls run the backward too where the spec has one (Spec.grads): the calls judged against
    # the reference, accumulate's, graph's (forward and backward captured together), aba's and
    # jitcache's (whose children run eager points), repeat's (every call's gradients compared bit for
    # bit with the first's), the stream of calls' (each against the reference of its own inputs and
    # upstream gradients), compiled's, and the sanitizer child's eager point
    backward: ClassVar[bool] = False
    # its memory is not an eager call's (rung 5's ring of outputs, a child's, a collective's
    # ranks, the model): a measured eager peak does not size it
    measured_elsewhere: ClassVar[bool] = False
    # the call's inputs are the buffers it wrote: declared mutations judged against the
    # reference's copy (rungs 1-3)
    judges_mutations: ClassVar[bool] = False

    @classmethod
    def children(cls, point, device: str) -> int:
        """How many processes of its own this point starts (about: see the overrides)."""
        return cls.child_processes

    @classmethod
    def starts_fresh(cls, point) -> bool:
        """The point runs first in a new worker."""
        return cls.fresh_process

    def observe(self, h) -> Iterator[Call | Uncaptured | Same | Traces | Scores | Measured | Ran | Flagged | Imported | Ranks
                                     | Repeats | StreamBatch | Streamed | Sanitized]:
        """Run the point's calls through the harness, yielding what was observed."""
        raise NotImplementedError


def call_once(kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
    """One call, then a synchronize, so that an asynchronous device fault surfaces inside
    this point and not in the next one."""
    import torch
    result = kernel(*args, **kwargs)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    return result


def call_raw(kernel: Callable[..., Any], args: list, kwargs: dict) -> Any:
    """One call with no synchronize: inside a capture or under a side stream, the mode
    orders the work itself."""
    return kernel(*args, **kwargs)


def heal_failed_capture() -> None:
    """After a capture that failed (a kernel that synchronizes, allocates or reads the host
    inside it), torch leaves the CUDA generators marked as capturing: every later random op in
    the process then raises "Offset increment outside graph capture encountered unexpectedly"
    (measured on the H200: 15 later tests of one process failed so). A capture that succeeds
    ends that state; one of a single fill is enough. The worker goes on to other points."""
    import torch
    try:
        torch.cuda.synchronize()
        healed = torch.cuda.CUDAGraph()
        scratch = torch.empty(1, device="cuda")
        with torch.cuda.graph(healed):
            scratch.fill_(0.0)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a context the failed capture broke: the next call says so
        pass


def declared_writes(h) -> list[str]:
    """What the spec declares the kernel writes at the harness's point, as findings name the
    buffers: the inputs its forward writes, and with a backward the inputs its backward writes and
    the upstream gradients it overwrites ('upstream y'); an input the forward overwrites with its
    gradient (mutated='gradient') with a backward or without."""
    from ...core.spec import upstream_name
    spec, p = h.spec, h.point
    writes = list(spec.mutated_at(p)) + [n for n in spec.written_in_forward(p) if not h.backward]
    if h.backward:
        writes += [*spec.written_in_backward(p), *(upstream_name(n) for n in spec.overwritten_at(p))]
    return writes
