"""The facts of golden hashes (--golden, history/golden.py) and of the outcome store
(history/outcomes.py; words: report/words/reuse.py)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .base import Facts, Json, opt


@dataclass(frozen=True, kw_only=True)
class GoldenPointFacts(Facts, part=True):
    """One point's output bits against the golden hashes (history/golden.check): equal to them,
    changed since they were kept (which outputs), none kept for this point, or not compared
    (its outputs are nondeterministic: their bits are not stable)."""
    bits: Literal["equal", "changed", "not_kept", "nondeterministic"]
    since: str | None                           # when the golden hashes were kept (ISO date and time; None: none are)
    outputs: list[str] | None = opt()           # changed: the outputs whose bits differ


@dataclass(frozen=True, kw_only=True)
class GoldenRecordFacts(Facts, part=True):
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
class GoldenChangedFacts(Facts, part=True):
    """A point whose output bits are not the golden ones."""
    id: str
    outputs: list[str]                          # the outputs whose bits differ


@dataclass(frozen=True, kw_only=True)
class GoldenFacts(Facts, part=True):
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


@dataclass(frozen=True, kw_only=True)
class ReusedFacts(Facts, part=True):
    """A point's outcome reused from an earlier climb (its key unchanged: history/key.py), not run
    in this one: the climb that ran it."""
    run_id: str                            # the run id of the climb that ran it
    climb: int | None                      # that climb's number in the history (#N), where it is recorded
    kept: str                              # when it ran (local time, ISO 8601)


@dataclass(frozen=True, kw_only=True)
class ReuseFacts(Facts, part=True):
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
