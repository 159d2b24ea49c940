"""The facts of how a call ended (raised, crashed, hung, faulted, capture) and of the bitwise
modes and the sanitizer (words: report/words/modes.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import Facts, Json, opt
from .common import ErrorFacts
from .kinds import Check


@dataclass(frozen=True, kw_only=True)
class RaisedFacts(ErrorFacts, check=Check.RAISED):
    pass


@dataclass(frozen=True, kw_only=True)
class CrashedFacts(Facts, check=Check.CRASHED):
    """The worker (or a rank's process) died: by a signal, or the kernel's exit status."""
    signal: str | None = opt()
    exit_status: int | str | None = opt()
    frames: list[str] | None = opt()       # the innermost Python frames
    rank: int | None = opt()               # rung 6: the rank whose process died
    heap_checked: bool | None = opt()      # crashed again alone with glibc's malloc checks on


@dataclass(frozen=True, kw_only=True)
class HangFacts(Facts, check=Check.HANG):
    timeout_s: float
    watchdog: bool | None = opt()          # a batch's watchdog gave up (rung 5), not the point's timeout


@dataclass(frozen=True, kw_only=True)
class DeviceFaultFacts(ErrorFacts, check=Check.DEVICE_FAULT):
    in_call: bool = True                   # during the kernel's call, or outside it


@dataclass(frozen=True, kw_only=True)
class CaptureFacts(ErrorFacts, check=Check.CAPTURE):
    claimed: bool | None = opt()           # Spec(graphs=True)


@dataclass(frozen=True, kw_only=True)
class UncapturedFacts(ErrorFacts, check=Check.UNCAPTURED):
    pass


@dataclass(frozen=True, kw_only=True)
class NotBitwiseFacts(Facts, check=Check.NOT_BITWISE):
    cause: str                             # outcome.Cause's value
    variant: str | None = opt()            # cachekey: what B changed


@dataclass(frozen=True, kw_only=True)
class PaddingFacts(Facts, check=Check.PADDING):
    cause: str = "padding"
    arg: str
    fill: str
    valid: int


@dataclass(frozen=True, kw_only=True)
class SanitizerFacts(Facts, check=Check.SANITIZER):
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
class CrashedNotAloneFacts(Facts, check=Check.CRASHED_NOT_ALONE):
    signal: str | None
    frames: list[str]
    heap_words: str                        # glibc's message, or ''
    earlier: int                           # other points that ran in the worker before it
    alone: str                             # the point's status alone
