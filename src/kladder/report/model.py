"""The climb as data: rungs, each with its outcomes, counted and timed."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..outcome import FAILED, FLAKY, PASSED, SKIPPED, STATUSES, Outcome

RUNG_TITLES = {
    1: "shapes", 2: "values", 3: "contracts", 4: "execution modes",
    5: "repetition", 6: "multi-GPU", 7: "toolchain", 8: "model",
}


@dataclass
class RungReport:
    rung: int
    title: str
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    climbed: bool = True
    note: str = ""                       # why a rung was not climbed

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(o.status for o in self.outcomes)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def verdict(self) -> str:
        if not self.climbed:
            return "not climbed"
        c = self.counts
        if c[FAILED] or c[FLAKY]:
            return "failed"
        if any(c[s] for s in STATUSES if s not in (PASSED, SKIPPED)):
            return "incomplete"
        return "passed" if c[PASSED] else "nothing ran"

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "title": self.title, "verdict": self.verdict, "climbed": self.climbed,
                "note": self.note, "seconds": round(self.seconds, 3), "counts": self.counts,
                "points": [o.to_dict() for o in self.outcomes]}


@dataclass
class ClimbReport:
    spec: str
    ref: str
    device: str
    device_name: str = ""
    rungs: list[RungReport] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    log_path: str = ""
    started: str = ""
    kladder_version: str = ""

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for r in self.rungs for o in r.outcomes]

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status in (FAILED, FLAKY)]

    @property
    def lowest_failing_rung(self) -> int | None:
        bad = [r.rung for r in self.rungs if r.verdict == "failed"]
        return min(bad) if bad else None

    @property
    def exit_code(self) -> int:
        """0 when every point that ran passed (skips carry their reason), 1 otherwise."""
        ok = all(o.status in (PASSED, SKIPPED) for o in self.outcomes)
        return 0 if ok and not self.interrupted else 1

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "ref": self.ref, "device": self.device, "device_name": self.device_name,
                "kladder_version": self.kladder_version, "started": self.started,
                "seconds": round(self.seconds, 3), "interrupted": self.interrupted, "log": self.log_path,
                "exit_code": self.exit_code, "lowest_failing_rung": self.lowest_failing_rung,
                "rungs": [r.to_dict() for r in self.rungs]}
