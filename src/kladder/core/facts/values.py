"""The facts of value comparisons (checks/values.py, checks/peer.py), invariants, the bias and
the model (words: report/words/values.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, opt
from .common import ErrorFacts
from .kinds import Check, NoteKind


@dataclass(frozen=True, kw_only=True)
class SpreadFacts(Facts, part=True):
    """The rounding spread s at the element furthest past its budget (checks/peer.py): how far
    the float64 reference's output moves when every input is rounded once more."""
    draws: int                         # draws of per-element rounding (0: the output's rounding alone)
    at: float                          # s there
    terms: float                       # s over the inputs' unit roundoff: the size of the terms that make the element


@dataclass(frozen=True, kw_only=True)
class PeerFacts(Facts, part=True, tag="dtype"):
    """The honest peer: the reference run in the kernel's own precision (checks/peer.py)."""
    dtype: str                         # the precision it ran in (the output's dtype)
    factor: float | None = opt()       # K: its largest error in units of s (None: no spread to measure it in)
    capped: bool | None = opt()        # C x K x s was past the cap at the worst element
    cap: float | None = opt()          # the cap: this many times what the default or s allows ...
    half_digits: float | None = opt()  # ... or this power of the dtype's epsilon of the element's scale
    runs: int | None = opt()           # correct runs in the kernel's precision K is the largest over


@dataclass(frozen=True, kw_only=True)
class PeerFailedFacts(ErrorFacts, part=True, tag="error"):
    """The reference could not run in the kernel's precision: its error (no peer budget)."""


@dataclass(frozen=True, kw_only=True)
class PeerSkippedFacts(Facts, part=True, tag="skipped"):
    """No peer asked: more failing elements than it judges (checks/values.PEER_MAX_ELEMENTS)."""
    skipped: int                       # the elements that fail the default


@dataclass(frozen=True, kw_only=True)
class PeerNotNeededFacts(Facts, part=True, tag="times"):
    """No peer asked: the worst element is off by `times` x its default budget, past the `decides`
    x within which a peer can change the verdict (checks/values.PEER_DECIDES)."""
    times: float                       # the worst element's error over the dtype's default budget there
    decides: float                     # checks/values.PEER_DECIDES


@dataclass(frozen=True, kw_only=True)
class ValuesFacts(Facts, check=Check.VALUES):
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
class InvariantFacts(Facts, check=Check.INVARIANT):
    name: str


@dataclass(frozen=True, kw_only=True)
class NonfiniteFacts(Facts, check=Check.NONFINITE):
    pass


@dataclass(frozen=True, kw_only=True)
class ModelScoresFacts(Facts, note=NoteKind.MODEL_SCORES):
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
class ModelFacts(ModelScoresFacts, check=Check.MODEL):
    """The model's answers got worse: metric "score" (baseline, kernel are scores) or "nll"
    (baseline, kernel are the NLLs; baseline_score, kernel_score the scores)."""
    metric: Literal["nll", "score"]
    allowed: float
    baseline_score: float | None = opt()
    kernel_score: float | None = opt()


@dataclass(frozen=True, kw_only=True)
class BiasFacts(Facts, check=Check.BIAS):
    lean: Literal["offset", "scale"]
    up: int
    down: int
    p: float
    mean_ulps: float
    rel: float
    peer: bool
    dtype: str
