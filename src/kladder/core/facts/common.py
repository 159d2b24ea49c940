"""The pieces several kinds share (a traceback, an error, what else ran: LoadFacts) and the facts
of the runs under load (run/faults.py; words: report/words/modes.py, notes.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, opt
from .kinds import Check, NoteKind


@dataclass(frozen=True, kw_only=True)
class FrameFacts(Facts, part=True):
    """One frame of a traceback (run/frames.py): where, and the source line there."""
    file: str                   # relative to the working folder when inside it
    line: int
    function: str
    kind: Literal["user", "library", "jit"] = "user"   # library: the raising frame of torch/Triton/numpy/Python;
                                                       # jit: a Triton compile error's line in the @jit function
    code: str = ""              # the source line, stripped (200 characters)


@dataclass(frozen=True, kw_only=True)
class TraceFacts(Facts, part=True):
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
class ErrorFacts(Facts, part=True):
    error: str = ""             # the exception's type name
    text: str = ""              # its message's first line (300 characters), or the whole message
    trace: TraceFacts | None = opt()   # the kernel's own exception: its traceback (run/frames.py)


@dataclass(frozen=True, kw_only=True)
class LoadFacts(Facts, part=True):
    """What else used the device or the host while a point ran (run/sampling.py measures it), and,
    for a point re-run alone because of it, what the alone run gave: outcome.Load is this class
    (an Outcome writes it whole, None fields too), and a Note or Finding about a run under load
    carries its fields."""
    lanes: int = 0                        # other lanes of this climb running points meanwhile
    processes: int = 0                    # other processes on the device (CUDA: NVML or nvidia-smi)
    device_used_bytes: int | None = None  # device memory in use by processes other than this point's worker
    device_total_bytes: int | None = None
    host_cpu_s: float = 0.0               # CPU time of every process but this point's worker and the climb's (/proc)
    worker_cpu_s: float = 0.0             # the point's worker's own CPU time meanwhile (read before a hung one is killed)
    worker_wait_s: float = 0.0            # the worker's threads' time runnable but waiting for a CPU (/proc schedstat)
    seconds: float = 0.0                  # the point's wall time while measured
    alone: str | None = None              # the alone run's Status (None: not re-run)
    alone_s: float = 0.0                  # the alone run's wall time
    host_used_bytes: int | None = opt()   # the host's memory in use once the point ended, when it was full
    host_total_bytes: int | None = opt()
    oom_kills: int | None = opt()         # the out-of-memory killer's kills while the point ran (/proc/vmstat oom_kill)
    waited_s: float | None = opt()         # seconds the run alone waited for others' memory to free


@dataclass(frozen=True, kw_only=True)
class UnderLoadFacts(LoadFacts, check=Check.UNDER_LOAD):
    first: str                             # the check or status of the run under load


@dataclass(frozen=True, kw_only=True)
class DeviceFullFacts(LoadFacts, note=NoteKind.DEVICE_FULL):
    first: str                             # the run under load's NoteKind
    text: str                              # its OOM's text


@dataclass(frozen=True, kw_only=True)
class HostFullFacts(LoadFacts, note=NoteKind.HOST_FULL):
    """The worker was killed (SIGKILL: the out-of-memory killer) while the host's memory was full or
    the killer was at work, and alone it could not show otherwise: not judged."""
    signal: str                            # how the run under load ended
    first: str                             # its check ("crashed") or status


@dataclass(frozen=True, kw_only=True)
class HostBusyFacts(LoadFacts, note=NoteKind.HOST_BUSY):
    """A hang under load and alone too, with the alone run's load (run/faults.under_load): other
    processes held the host's CPUs and the worker waited for one (runnable, not running) at least
    half the time."""
    timeout_s: float                       # the kernel's limit, wall time
    cores: int                             # the host's CPUs
