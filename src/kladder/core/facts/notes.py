"""The facts of notes: why a point was skipped, broken or out of memory, or what a passing
mode measured (words: report/words/notes.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, Json, opt
from .common import ErrorFacts
from .kinds import NoteKind


@dataclass(frozen=True, kw_only=True)
class NoOutArgsFacts(Facts, note=NoteKind.NO_OUT_ARGS):
    pass


@dataclass(frozen=True, kw_only=True)
class NotTorchOpFacts(Facts, note=NoteKind.NOT_TORCH_OP):
    pass


@dataclass(frozen=True, kw_only=True)
class GpuPointFacts(Facts, note=NoteKind.GPU_POINT):
    need_bytes: int
    budget: str


@dataclass(frozen=True, kw_only=True)
class ValueOutOfRangeFacts(Facts, note=NoteKind.VALUE_OUT_OF_RANGE):
    """A rung-2 value kind that no value inside an input's declared range can show (fill.range_problem)."""
    arg: str
    value: str                                  # the value kind, as the point holds it ("tiny")
    lo: float                                   # the declared range at the point's sizes
    hi: float
    why: str                                    # no_value (the dtype holds no value there), no_tiny, no_one


@dataclass(frozen=True, kw_only=True)
class NoDeviceMemoryFacts(Facts, note=NoteKind.NO_DEVICE_MEMORY):
    need_bytes: int
    free_bytes: int
    measured: str | None = opt()           # the point whose measured peak sized need_bytes (sizes.Peak), or None:
    measured_bytes: int | None = opt()     # the declared tensors alone; its peak


@dataclass(frozen=True, kw_only=True)
class NoHostMemoryFacts(Facts, note=NoteKind.NO_HOST_MEMORY):
    """A point whose estimated peak on the host (sizes.Peak: a measured small point's peak
    scaled by the elements) is more than the host's share for one worker: skipped before it ran."""
    need_bytes: int
    share_bytes: int                       # the host's available memory over the workers that share it
    workers: int
    measured: str                          # the point whose peak was measured
    measured_bytes: int


@dataclass(frozen=True, kw_only=True)
class ModeNeedsCudaFacts(Facts, note=NoteKind.MODE_NEEDS_CUDA):
    mode: str


@dataclass(frozen=True, kw_only=True)
class OutsideClimbFacts(Facts, note=NoteKind.OUTSIDE_CLIMB):
    mode: str


@dataclass(frozen=True, kw_only=True)
class GraphsNotClaimedFacts(ErrorFacts, note=NoteKind.GRAPHS_NOT_CLAIMED):
    pass


@dataclass(frozen=True, kw_only=True)
class LayoutRefusedFacts(ErrorFacts, note=NoteKind.LAYOUT_REFUSED):
    pass


@dataclass(frozen=True, kw_only=True)
class RefusedAsDocumentedFacts(ErrorFacts, note=NoteKind.REFUSED_AS_DOCUMENTED):
    label: str | None = opt()               # the runs=False expectation's label, where it has one


@dataclass(frozen=True, kw_only=True)
class InputsFailedFacts(ErrorFacts, note=NoteKind.INPUTS_FAILED):
    pass


@dataclass(frozen=True, kw_only=True)
class ReferenceRaisedFacts(ErrorFacts, note=NoteKind.REFERENCE_RAISED):
    pass


@dataclass(frozen=True, kw_only=True)
class ReferenceShapeFacts(Facts, note=NoteKind.REFERENCE_SHAPE):
    """The reference returned an output of another shape than `returns=` declares, while the
    kernel's output has the declared shape: the spec's problem, never the kernel's."""
    output: str
    shape: list[int]                            # the reference's output
    declared: list[int]                         # returns= at the point's sizes (and the kernel's output)


@dataclass(frozen=True, kw_only=True)
class InputsMutatedFacts(Facts, note=NoteKind.INPUTS_MUTATED):
    args: list[str]
    when: Literal["accumulate"] | None = opt()   # an accumulation point whose backward writes what it reads again


@dataclass(frozen=True, kw_only=True)
class RaceNotSetUpFacts(Facts, note=NoteKind.RACE_NOT_SET_UP):
    attempts: int
    delay_cycles: int


@dataclass(frozen=True, kw_only=True)
class RaisedAsAskedFacts(Facts, note=NoteKind.RAISED_AS_ASKED):
    error: str


@dataclass(frozen=True, kw_only=True)
class ReferenceNanFacts(Facts, note=NoteKind.REFERENCE_NAN):
    output: str
    count: int
    total: int
    at: list[int]                          # the first, as the kernel's index


@dataclass(frozen=True, kw_only=True)
class InvariantRaisedFacts(ErrorFacts, note=NoteKind.INVARIANT_RAISED):
    name: str


@dataclass(frozen=True, kw_only=True)
class ProcessFailedFacts(Facts, note=NoteKind.PROCESS_FAILED):
    label: str
    text: str


@dataclass(frozen=True, kw_only=True)
class NoSuchSlotFacts(Facts, note=NoteKind.NO_SUCH_SLOT):
    slot: str
    slots: list[str]


@dataclass(frozen=True, kw_only=True)
class BaselineFailedFacts(ErrorFacts, note=NoteKind.BASELINE_FAILED):
    user: bool


@dataclass(frozen=True, kw_only=True)
class KladderErrorFacts(ErrorFacts, note=NoteKind.KLADDER_ERROR):
    trace: str


@dataclass(frozen=True, kw_only=True)
class KernelOomFacts(Facts, note=NoteKind.KERNEL_OOM):
    call: str
    text: str


@dataclass(frozen=True, kw_only=True)
class InputsOomFacts(Facts, note=NoteKind.INPUTS_OOM):
    text: str


@dataclass(frozen=True, kw_only=True)
class CacheFilesFacts(Facts, note=NoteKind.CACHE_FILES):
    files: int


@dataclass(frozen=True, kw_only=True)
class RunToRunFacts(Facts, note=NoteKind.RUN_TO_RUN):
    """A's two calls on the same inputs, before B, differ bit for bit (Spec(deterministic=False)):
    the outputs that vary, their differing elements and elements in all, the mode (aba, jitcache),
    and the cold process's cache files (jitcache)."""
    outputs: list[str]
    differ: int
    total: int
    mode: str
    files: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class FlagChangedFacts(Facts, note=NoteKind.FLAG_CHANGED):
    flag: str
    values: list[Json]
    how: Literal["binary", "source", "names"]
    codes: int                             # distinct code objects over the values
    set: Literal["at_start", "after_import"] | None = opt()   # after_import: set after import and one call


@dataclass(frozen=True, kw_only=True)
class FlagNotVisibleFacts(Facts, note=NoteKind.FLAG_NOT_VISIBLE):
    flag: str


@dataclass(frozen=True, kw_only=True)
class NotCompiledFacts(Facts, note=NoteKind.NOT_COMPILED):
    variant: str


@dataclass(frozen=True, kw_only=True)
class ImportsCheckedFacts(Facts, note=NoteKind.IMPORTS_CHECKED):
    names: list[str]
    traced: list[str]                      # the modules whose import was traced


@dataclass(frozen=True, kw_only=True)
class CacheMissedFacts(Facts, note=NoteKind.CACHE_MISSED):
    variant: str
    files_cold: int
    files_added: int


@dataclass(frozen=True, kw_only=True)
class CollectiveNeedsCudaFacts(Facts, note=NoteKind.COLLECTIVE_NEEDS_CUDA):
    world: int


@dataclass(frozen=True, kw_only=True)
class NotEnoughGpusFacts(Facts, note=NoteKind.NOT_ENOUGH_GPUS):
    world: int
    gpus: int


@dataclass(frozen=True, kw_only=True)
class RankFailedFacts(ErrorFacts, note=NoteKind.RANK_FAILED):
    rank: int
    phase: str


@dataclass(frozen=True, kw_only=True)
class CollectiveCallsFacts(Facts, note=NoteKind.COLLECTIVE_CALLS):
    world: int
    queued: int
    lag: int
    lag_us: float
    dim: str
    sizes: list[int]
    backend: str
    seconds: float


@dataclass(frozen=True, kw_only=True)
class SanitizerCleanFacts(Facts, note=NoteKind.SANITIZER_CLEAN):
    tool: str
    calls: int


@dataclass(frozen=True, kw_only=True)
class NoSanitizerFacts(Facts, note=NoteKind.NO_SANITIZER):
    tool: str
    searched: list[str]


@dataclass(frozen=True, kw_only=True)
class InterpreterDefectFacts(Facts, note=NoteKind.INTERPRETER_DEFECT):
    feature: str                           # run/interpreter.py's feature, and its probe's evidence
    what: str
    x: list[float]
    got: list[float]
    want: list[float]


@dataclass(frozen=True, kw_only=True)
class InterpreterErrorFacts(ErrorFacts, note=NoteKind.INTERPRETER_ERROR):
    probe: str | None = opt()              # the feature whose probe raised the same


@dataclass(frozen=True, kw_only=True)
class StageOverrunFacts(Facts, note=NoteKind.STAGE_OVERRUN):
    stage: str                             # outcome.Stage's value
    seconds: float
    budget_s: float
    timeout_s: float
    elements: int | None = opt()           # the point's tensors, when known


@dataclass(frozen=True, kw_only=True)
class ReferenceNotIndependentFacts(Facts, note=NoteKind.REFERENCE_NOT_INDEPENDENT):
    """The reference runs the kernel under test's own code (checks/independence.py): the spec's problem."""
    reference: str                         # the reference's name
    functions: list[str] = field(default_factory=list)     # the kernel's launchers the reference called
    jit_kernels: list[str] = field(default_factory=list)   # the Triton kernels both launched
    gpu_kernels: list[str] = field(default_factory=list)   # GPU kernels of the kernel's own (no torch op's) both ran
    torch_op: str | None = opt()           # the kernel under test is this torch op, and the reference calls it
