"""The report as data: per point its id, rung, status, why, pattern and repro command; each
finding with its facts and its message. The JSON-lines log holds the same point records."""
from __future__ import annotations

import json
from typing import Any

from ..outcome import Finding, Outcome
from . import words
from .data import ClimbReport, RungReport


def render_json(report: ClimbReport) -> str:
    return json.dumps(report_dict(report), indent=1, default=str)


def report_dict(report: ClimbReport) -> dict[str, Any]:
    return {"spec": report.spec, "ref": report.ref, "device": report.device, "device_name": report.device_name,
            "kladder_version": report.kladder_version, "started": report.started,
            "seconds": round(report.seconds, 3), "interrupted": report.interrupted, "log": report.log_path,
            "exit_code": report.exit_code, "nothing_ran": report.nothing_ran,
            "lowest_failing_rung": report.lowest_failing_rung, "fingerprint": report.fingerprint,
            "rungs": [rung_dict(r) for r in report.rungs]}


def rung_dict(r: RungReport) -> dict[str, Any]:
    return {"rung": r.rung, "title": r.title, "verdict": r.verdict, "climbed": r.climbed,
            "note": r.note, "seconds": round(r.seconds, 3), "counts": r.counts,
            "points": [outcome_dict(o) for o in r.outcomes]}


def outcome_dict(o: Outcome) -> dict[str, Any]:
    head = o.headline
    return {
        "id": o.point.id, "rung": o.point.rung, "status": str(o.status),
        "why": o.point.why, "kind": o.point.kind, "mode": o.point.mode,
        "failure": str(head.check) if head else None,
        "pattern": words.pattern_label(head) if head else None,
        "max_abs_err": head.max_abs_err if head else None,
        "reason": words.reason(o), "seconds": round(o.seconds, 4),
        "rows_checked": words.rows_text(o.rows) if o.rows else "", "repro": o.repro,
        "findings": [finding_dict(f) for f in o.findings],
        "warnings": [words.message(w) for w in o.warnings],
        "point": o.point.to_dict(),
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    big = f.largest
    return {"check": str(f.check), "output": f.output, "message": words.message(f), "pattern": words.pattern_label(f),
            "max_abs_err": f.max_abs_err, "index": list(big.index) if big else None,
            "allowed": big.allowed if big else None, "mismatched": f.mismatched, "total": f.total,
            "kernel": big.kernel if big else None, "reference": big.reference if big else None,
            "facts": f.facts, "call": f.call}
