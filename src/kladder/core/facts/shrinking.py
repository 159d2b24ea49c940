"""The facts of shrinking (shrink.py; words: report/words/shrinking.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, Json, opt


@dataclass(frozen=True, kw_only=True)
class EdgeFacts(Facts, part=True):
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
class ShrinkCauseFacts(Facts, part=True):
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


@dataclass(frozen=True, kw_only=True)
class PassedBelowFacts(Facts, part=True):
    """A shrunk dim's size one below the smallest failing one, and what it gave there."""
    size: int
    status: str


@dataclass(frozen=True, kw_only=True)
class ShrunkFacts(Facts, part=True):
    """kladder.climbing.shrink's search from a failure (a climb's rung's first, or explore's): the smallest
    point that fails the same way (the same check), each candidate a run in the climb's workers
    (the report's `shrunk`, docs/report.schema.json)."""
    from_: dict[str, Json] = field(metadata={"key": "from"})   # the failing point (Point.to_dict)
    check: str | None                           # its headline check: what "the same way" compares (None: not failed)
    method: str
    runs: int                                   # candidates run
    complete: bool                              # False: the budget ran out before the search ended
    passes_at: dict[str, PassedBelowFacts]      # per shrunk dim: the size below the smallest failing one
    smallest: dict[str, Json] | None            # the smallest failing point (Point.to_dict; None: not shrunk)
    cannot_shrink: str | None                   # why the point cannot shrink (a size cliff, a mode's calls)
    cause: ShrinkCauseFacts | None              # what decides the failure (None: not shrunk)
    smallest_id: str | None = opt()
    outcome_status: str | None = opt()
    seconds: float | None = opt()
    rung: int | None = opt()                    # a climb's: the rung and its failing point's id
    failed_id: str | None = opt()
    repro: str | None = opt()                   # the smallest point's repro line
