"""The outcome of one point: what happened, and the findings that say where."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compare import Finding
from .point import Point

PASSED, FAILED, SKIPPED, OOM, BROKEN, FLAKY = "passed", "failed", "skipped", "oom", "broken", "flaky"
# failed: the kernel is wrong (a mismatch, a guard, a contract, it raised, crashed, hung or
#         faulted the device). oom: the point could not run for memory. broken: kladder or
#         the spec's reference failed; never blamed on the kernel (STYLE: keep the three apart).
# flaky: failed, then passed when replayed: reported with its observed rate, never dropped.
STATUSES = (PASSED, FAILED, FLAKY, SKIPPED, OOM, BROKEN)


@dataclass
class Outcome:
    point: Point
    status: str
    findings: list[Finding] = field(default_factory=list)
    reason: str = ""                   # why skipped / oom / broken
    seconds: float = 0.0
    rows_checked: str = ""             # for big points: which rows the reference checked
    repro: str = ""
    warnings: list[str] = field(default_factory=list)   # not failures: a bias inside the tolerance

    @property
    def headline(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict[str, Any]:
        head = self.headline
        return {
            "id": self.point.id, "rung": self.point.rung, "status": self.status,
            "why": self.point.why, "kind": self.point.kind, "mode": self.point.mode,
            "failure": head.check if head else None,
            "pattern": head.pattern if head else None,
            "max_abs_err": head.max_abs_err if head else None,
            "reason": self.reason, "seconds": round(self.seconds, 4),
            "rows_checked": self.rows_checked, "repro": self.repro,
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "point": self.point.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Outcome":
        return cls(Point.from_dict(d["point"]), d["status"],
                   [Finding(**{**f, "index": tuple(f["index"]) if f.get("index") is not None else None})
                    for f in d.get("findings", [])],
                   d.get("reason", ""), d.get("seconds", 0.0), d.get("rows_checked", ""), d.get("repro", ""),
                   list(d.get("warnings", [])))
