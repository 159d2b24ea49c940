"""The facts a Finding or a Note carries: one frozen dataclass per Check and per NoteKind, each in
the family module of its words (report/words/ mirrored: values, contracts, modes, repetition,
toolchain, notes, reuse, shrinking; common: the pieces several share; diff: `kladder diff`).

Each class names its fields, their types and what they mean, and the kind it is the facts of
(`class HangFacts(Facts, check=Check.HANG)`: base.py registers it; CHECK_FACTS and NOTE_FACTS
below are built from the registrations). checks/ (and run/faults.py, run/modes/ for notes) build
them, report/words/ says them, report/jsonout.py writes them with `to_dict`, and
docs/report.schema.json is generated from them (report/schema.py). A field made with `opt()` is
left out of the JSON when it is None: the JSON then holds exactly the keys a finding of that
shape has (a crash by a signal has `signal`, one by an exit status `exit_status`); every other
field is always written. Values stay JSON's own types (str, int, float, bool, lists, dicts) or a
facts class of their own (a piece one finding's facts hold: SpreadFacts, PeerFacts, ...): the
same facts go from a worker to its parent as JSON, and a field typed with a facts class takes
that class or its JSON dict, made typed where the facts are made (`__post_init__`; a union of
facts classes takes the member whose declared tag the dict holds).
"""
from __future__ import annotations

from .base import Facts, Json, Plain, dump, dump_fields, load, load_fields, opt, registered, table_of
from .common import (
    DeviceFullFacts,
    ErrorFacts,
    FrameFacts,
    HostBusyFacts,
    HostFullFacts,
    LoadFacts,
    TraceFacts,
    UnderLoadFacts,
)
from .values import (
    BiasFacts,
    InvariantFacts,
    ModelFacts,
    ModelScoresFacts,
    NonfiniteFacts,
    PeerFacts,
    PeerFailedFacts,
    PeerNotNeededFacts,
    PeerSkippedFacts,
    SpreadFacts,
    ValuesFacts,
)
from .contracts import (
    AllocatedFacts,
    ContractFacts,
    GuardFacts,
    InputChangedFacts,
    InvalidReferenceFacts,
)
from .modes import (
    CaptureFacts,
    CrashedFacts,
    CrashedNotAloneFacts,
    DeviceFaultFacts,
    HangFacts,
    NotBitwiseFacts,
    PaddingFacts,
    RaisedFacts,
    SanitizerFacts,
    UncapturedFacts,
)
from .repetition import (
    AccumulatedFacts,
    NondeterministicFacts,
    RepeatsCleanFacts,
    RepeatsFacts,
    StreamCleanFacts,
    StreamFacts,
)
from .toolchain import (
    CaughtImportFacts,
    CollectiveFacts,
    DispatchFacts,
    FlagNoEffectFacts,
    ImportContractFacts,
    RanFacts,
    RanksHungFacts,
)
from .notes import (
    BaselineFailedFacts,
    CacheFilesFacts,
    CacheMissedFacts,
    CollectiveCallsFacts,
    CollectiveNeedsCudaFacts,
    FlagChangedFacts,
    FlagNotVisibleFacts,
    GpuPointFacts,
    GraphsNotClaimedFacts,
    ImportsCheckedFacts,
    InputsFailedFacts,
    InputsMutatedFacts,
    InputsOomFacts,
    InterpreterDefectFacts,
    InterpreterErrorFacts,
    InvariantRaisedFacts,
    KernelOomFacts,
    KladderErrorFacts,
    LayoutRefusedFacts,
    ModeNeedsCudaFacts,
    NoDeviceMemoryFacts,
    NoHostMemoryFacts,
    NoOutArgsFacts,
    NoSanitizerFacts,
    NoSuchSlotFacts,
    NotCompiledFacts,
    NotEnoughGpusFacts,
    NotTorchOpFacts,
    OutsideClimbFacts,
    ProcessFailedFacts,
    RaceNotSetUpFacts,
    RaisedAsAskedFacts,
    RankFailedFacts,
    ReferenceNanFacts,
    ReferenceNotIndependentFacts,
    ReferenceRaisedFacts,
    ReferenceShapeFacts,
    RefusedAsDocumentedFacts,
    RunToRunFacts,
    SanitizerCleanFacts,
    StageOverrunFacts,
    ValueOutOfRangeFacts,
)
from .reuse import (
    GoldenChangedFacts,
    GoldenFacts,
    GoldenPointFacts,
    GoldenRecordFacts,
    ReuseFacts,
    ReusedFacts,
)
from .diff import (
    ClimbLoadFacts,
    DiffBitsFacts,
    DiffClimbFacts,
    DiffFacts,
    DiffPointFacts,
    SlowerRungFacts,
    TimingFacts,
)
from .shrinking import EdgeFacts, PassedBelowFacts, ShrinkCauseFacts, ShrunkFacts
from .kinds import Check, NoteKind, Words

CHECK_FACTS: dict[str, type[Facts]] = table_of(Check)       # {check: its facts class}, in Check's order
NOTE_FACTS: dict[str, type[Facts]] = table_of(NoteKind)     # {note kind: its facts class}, in NoteKind's order

__all__ = [
    "AccumulatedFacts", "AllocatedFacts", "BaselineFailedFacts", "BiasFacts", "CacheFilesFacts", "CacheMissedFacts",
    "CaptureFacts", "CaughtImportFacts", "Check", "CHECK_FACTS", "ClimbLoadFacts", "CollectiveCallsFacts",
    "CollectiveFacts", "CollectiveNeedsCudaFacts", "ContractFacts", "CrashedFacts", "CrashedNotAloneFacts",
    "DeviceFaultFacts", "DeviceFullFacts", "DiffBitsFacts", "DiffClimbFacts", "DiffFacts", "DiffPointFacts",
    "DispatchFacts", "dump", "dump_fields", "EdgeFacts", "ErrorFacts", "Facts", "FlagChangedFacts",
    "FlagNoEffectFacts", "FlagNotVisibleFacts", "FrameFacts", "GoldenChangedFacts", "GoldenFacts", "GoldenPointFacts",
    "GoldenRecordFacts", "GpuPointFacts", "GraphsNotClaimedFacts", "GuardFacts", "HangFacts", "HostBusyFacts",
    "HostFullFacts", "ImportContractFacts", "ImportsCheckedFacts", "InputChangedFacts", "InputsFailedFacts",
    "InputsMutatedFacts", "InputsOomFacts", "InterpreterDefectFacts", "InterpreterErrorFacts",
    "InvalidReferenceFacts", "InvariantFacts", "InvariantRaisedFacts", "Json", "KernelOomFacts", "KladderErrorFacts",
    "LayoutRefusedFacts", "load", "load_fields", "LoadFacts", "ModelFacts", "ModelScoresFacts", "ModeNeedsCudaFacts",
    "NoDeviceMemoryFacts", "NoHostMemoryFacts", "NondeterministicFacts", "NonfiniteFacts", "NoOutArgsFacts",
    "NoSanitizerFacts", "NoSuchSlotFacts", "NotBitwiseFacts", "NotCompiledFacts", "NOTE_FACTS", "NoteKind",
    "NotEnoughGpusFacts", "NotTorchOpFacts", "opt", "OutsideClimbFacts", "PaddingFacts", "PeerFacts",
    "PeerFailedFacts", "PeerNotNeededFacts", "PeerSkippedFacts", "Plain", "ProcessFailedFacts", "RaceNotSetUpFacts",
    "RaisedAsAskedFacts", "RaisedFacts", "RanFacts", "RankFailedFacts", "RanksHungFacts", "ReferenceNanFacts",
    "ReferenceNotIndependentFacts", "ReferenceRaisedFacts", "ReferenceShapeFacts", "RefusedAsDocumentedFacts",
    "registered", "RepeatsCleanFacts", "RepeatsFacts", "ReusedFacts", "ReuseFacts", "RunToRunFacts",
    "SanitizerCleanFacts", "SanitizerFacts", "ShrinkCauseFacts", "ShrunkFacts", "PassedBelowFacts", "SlowerRungFacts", "SpreadFacts",
    "StageOverrunFacts", "StreamCleanFacts", "StreamFacts", "table_of", "TimingFacts", "TraceFacts",
    "UncapturedFacts", "UnderLoadFacts", "ValueOutOfRangeFacts", "ValuesFacts", "Words",
]
