"""Rung 5's facts: calls repeated and the stream (checks/repetition.py; words:
report/words/repetition.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, opt
from .common import ErrorFacts
from .kinds import Check, NoteKind


@dataclass(frozen=True, kw_only=True)
class AccumulatedFacts(Facts, part=True):
    """Rung 5's evidence kept across climbs (history/outcomes.py): the clean calls of every climb
    that ran this point under the same key (history/key.py: same point, spec, code, toolchain),
    this climb's included, and the bound they prove together (stats.upper_bound)."""
    climbs: int                            # climbs that ran the point clean under this key
    calls: int                             # their calls compared (or judged, for a stream), all together
    bound: float                           # the rate of a wrong call is below this, at `conf`
    conf: float
    since: str                             # when the first of them ran (local time, ISO 8601)


@dataclass(frozen=True, kw_only=True)
class RepeatsCleanFacts(Facts, note=NoteKind.REPEATS_CLEAN):
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
class RepeatsFacts(RepeatsCleanFacts, check=Check.REPEATS):
    first_calls: list[int] = field(default_factory=list)
    worst_call: int = 0
    bitwise: bool = False                  # counted bitwise differences (nondeterministic), not wrong calls
    against: Literal["reference", "first call"] = "first call"
    nonfinite: int | None = opt()


@dataclass(frozen=True, kw_only=True)
class NondeterministicFacts(RepeatsFacts, check=Check.NONDETERMINISTIC):
    """A warning: calls that differ bit for bit, within the tolerance (Check.REPEATS's facts)."""


@dataclass(frozen=True, kw_only=True)
class StreamCleanFacts(Facts, note=NoteKind.STREAM_CLEAN):
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
class StreamFacts(StreamCleanFacts, check=Check.STREAM):
    first_wrong: int = 0                   # the first wrong call's number, counting from 1 over the stream
    first_calls: list[int] = field(default_factory=list)   # the numbers of the first wrong calls (up to 8)
    step: int = 0                          # the first wrong call's step of the pattern, from 1
    letter: str = ""                       # its input set's letter in the pattern
    nonfinite: int | None = opt()
