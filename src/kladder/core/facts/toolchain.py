"""Rungs 6 and 7's facts: the collective, dispatch, flags and imports (words:
report/words/toolchain.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, Json, opt
from .common import ErrorFacts
from .kinds import Check, NoteKind


@dataclass(frozen=True, kw_only=True)
class RanFacts(Facts, note=NoteKind.RAN):
    """What a call ran (checks/dispatch.ran_facts): up to 12 of each, and how many in all."""
    launches: list[dict[str, Json]] = field(default_factory=list)   # [{name, params}]
    n_launches: int = 0
    gpu: list[str] = field(default_factory=list)
    n_gpu: int = 0
    functions: list[str] = field(default_factory=list)
    n_functions: int = 0
    unjudged: list[dict[str, Json]] | None = opt()   # expectations whose toolchain condition does not hold here:


@dataclass(frozen=True, kw_only=True)
class DispatchFacts(Facts, check=Check.DISPATCH):
    expected: list[dict[str, Json]]        # [{kernel, launch, label, when}] that did not run
    ran: RanFacts                          # what the call ran
    env: dict[str, Json] | None = opt()    # the variables the point set (None: unset)
    env_set: Literal["at_start", "after_import"] | None = opt()   # at the process's start, or after import and one call
    forbidden: list[dict[str, Json]] | None = opt()   # [{kernel, launch, label, when}] with runs=False that ran (returned)
    started: dict[str, Json] | None = opt()   # after_import: each variable as the process started (None: unset)


@dataclass(frozen=True, kw_only=True)
class FlagNoEffectFacts(Facts, check=Check.FLAG_NO_EFFECT):
    flag: str
    values: list[Json]
    how: Literal["binary", "source", "names"]
    runs: list[dict[str, Json]]            # [{value, launches, gpu}], after_import: [{value, started, launches, gpu}]
    set: Literal["at_start", "after_import"] | None = opt()   # after_import: each value set after the kernel's module
                                                               # was imported and the kernel called once
    variable: str | None = opt()          # an environment flag's variable (its values: strings, None for unset)


@dataclass(frozen=True, kw_only=True)
class ImportContractFacts(Facts, check=Check.IMPORT_CONTRACT):
    name: str
    problem: Literal["missing", "untested"]
    error: str | None = opt()              # missing: why it does not resolve
    text: str | None = opt()
    object: str | None = opt()             # untested: what it resolves to


@dataclass(frozen=True, kw_only=True)
class CaughtImportFacts(ErrorFacts, check=Check.CAUGHT_IMPORT):
    module: str
    where: str                             # file:line


@dataclass(frozen=True, kw_only=True)
class CollectiveFacts(Facts, check=Check.COLLECTIVE):
    ranks: dict[str, list[int]]            # {rank: its wrong calls, 1-based}
    sizes_wrong: list[int]
    sizes: list[int]
    dim: str
    world: int
    lag: int
    queued: int
    kinds: list[str]                       # the checks the wrong calls failed


@dataclass(frozen=True, kw_only=True)
class RanksHungFacts(Facts, check=Check.RANKS_HUNG):
    watchdog_s: float
    waited_s: float
    queued: int
    dim: str
    lag: int
    ranks: list[dict[str, Json]]           # [{rank, phase, launched, finished, size}]
