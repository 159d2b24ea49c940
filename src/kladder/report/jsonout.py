"""The report as data: per point its id, rung, status, why, pattern and repro command; each
finding with its facts and its message. The JSON-lines log holds a header record, the same
point records as they arrive, and a closing record.

Every document is strict JSON (RFC 8259): a non-finite float is written as the string "NaN",
"Infinity" or "-Infinity" (a kernel's NaN is data about the kernel, never a parse error for the
reader). docs/report.schema.json describes both the report and the log's records; FORMAT is
bumped whenever a field changes meaning or goes away."""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import secrets
from collections import Counter
from typing import Any

from ..core.outcome import Finding, Outcome
from . import words
from ..core.results import ClimbReport, RungReport

FORMAT = 1


def dumps(doc: Any, indent: int | None = None) -> str:
    return json.dumps(strict(doc), indent=indent, allow_nan=False, default=str)


def strict(v: Any) -> Any:
    """`v` with every non-finite float written as a string ("NaN", "Infinity", "-Infinity")."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {str(k): strict(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set)):
        return [strict(x) for x in v]
    return v


def render_json(report: ClimbReport) -> str:
    return dumps(report_dict(report), indent=1)


def write_atomic(path: str, text: str) -> None:
    """`text` at `path`, all of it or none: written to a new file in the same folder (a rename
    is atomic only within one file system), flushed to the disk, then renamed over `path`. A
    reader, a crash or a Ctrl-C in between sees the old file or the new one, never a 0-byte or
    half-written one; a write that fails (a full disk: ENOSPC) raises OSError with the old file
    in place and no temporary file left behind, whatever moment it fails at."""
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}-{secrets.token_hex(3)}.tmp")
    data, fd, done = text.encode(), None, False
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # 0o666 less the umask, as open() makes it
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
        os.close(fd)
        fd = None
        os.replace(tmp, path)
        done = True
    finally:
        if not done:
            _discard(fd, tmp)


def _discard(fd: int | None, tmp: str) -> None:
    """A temporary file given up: closed and removed (it may not have been made at all)."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def cannot_write(folder: str) -> str | None:
    """Why files cannot be made in `folder` (made first if missing), or None when they can: a
    real file is made and removed (os.access says yes to root on a read-only mount), removed
    whatever moment a signal comes at."""
    probe = None
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, f".kladder-probe-{os.getpid()}-{secrets.token_hex(3)}")
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as e:
        return e.strerror or str(e)
    finally:
        if probe is not None:
            with contextlib.suppress(OSError):
                os.unlink(probe)
    return None


def write_report(path: str, report: ClimbReport) -> None:
    write_atomic(path, render_json(report))


def report_dict(report: ClimbReport) -> dict[str, Any]:
    return {"format": FORMAT, "spec": report.spec, "ref": report.ref, "device": report.device,
            "device_name": report.device_name, "kladder_version": report.kladder_version, "started": report.started,
            "run_id": report.run_id, "start_error": report.start_error, "kladder_error": report.kladder_error, "seconds": round(report.seconds, 3), "interrupted": report.interrupted, "log": report.log_path,
            "exit_code": report.exit_code, "nothing_ran": report.nothing_ran,
            "lowest_failing_rung": report.lowest_failing_rung, "fingerprint": report.fingerprint,
            "rungs": [rung_dict(r, report.golden) for r in report.rungs], "shrunk": report.shrunk,
            "shard": shard_dict(report), "golden": None if report.golden is None else report.golden.to_dict(),
            "reuse": None if report.reuse is None else report.reuse.to_dict(), "stopped_at": report.stopped_at,
            "budget": None if report.budget is None else report.budget.to_dict()}


def shard_dict(report: ClimbReport) -> dict[str, Any] | None:
    """--shard I/N: the slice and, per rung, its points' outcomes typed and lossless (Outcome.to_dict),
    from which `kladder merge` rebuilds the one report (merge.py)."""
    if report.shard is None:
        return None
    return {**report.shard, "outcomes": {str(r.rung): [o.to_dict() for o in r.outcomes] for r in report.rungs if r.outcomes}}


def header_dict(report: ClimbReport, opts, fingerprint: dict) -> dict[str, Any]:
    """The log's first record: what was climbed, how, and in what environment (as the climbing
    process sees it; the end record has the workers' own, with the device)."""
    return {"format": FORMAT, "spec": report.spec, "ref": report.ref, "device": report.device,
            "kladder_version": report.kladder_version, "started": report.started, "run_id": report.run_id,
            "options": {"rungs": list(opts.rungs), "timeout_s": opts.timeout_s, "jobs": opts.jobs, "replay": opts.replay,
                        "budget": getattr(opts, "budget", None)},
            "fingerprint": fingerprint}


def end_dict(report: ClimbReport) -> dict[str, Any]:
    counts = Counter(str(o.status) for o in report.outcomes)
    return {"ended": _dt.datetime.now().isoformat(timespec="seconds"), "run_id": report.run_id,
            "start_error": report.start_error, "kladder_error": report.kladder_error, "seconds": round(report.seconds, 3),
            "interrupted": report.interrupted, "exit_code": report.exit_code, "nothing_ran": report.nothing_ran,
            "device_name": report.device_name, "lowest_failing_rung": report.lowest_failing_rung,
            "points": len(report.outcomes), "counts": dict(counts), "fingerprint": report.fingerprint,
            "reuse": None if report.reuse is None else report.reuse.to_dict(), "stopped_at": report.stopped_at}


def rung_dict(r: RungReport, golden=None) -> dict[str, Any]:
    points = [outcome_dict(o) for o in r.outcomes]
    if golden is not None:                  # --golden: each point's bits against the golden hashes
        for p in points:
            g = golden.of_point(p["id"])
            p["golden"] = None if g is None else g.to_dict()
    return {"rung": r.rung, "title": r.title, "verdict": r.verdict, "climbed": r.climbed,
            "note": r.note, "seconds": round(r.seconds, 3), "counts": r.counts,
            "waits": [w.to_dict() for w in r.waits], "points": points, "stopped": r.stopped}


def outcome_dict(o: Outcome) -> dict[str, Any]:
    head = o.headline
    return {
        "id": o.point.id, "rung": o.point.rung, "status": str(o.status),
        "why": o.point.why, "kind": o.point.kind, "mode": o.point.mode,
        "failure": str(head.check) if head else None,
        "pattern": words.pattern_label(head) if head else None,
        "max_abs_err": head.max_abs_err if head else None,
        "reason": words.reason(o), "note": None if o.note is None else o.note.to_dict(),
        "replay": None if o.replay is None else str(o.replay),
        "seconds": round(o.seconds, 4),
        "rows_checked": words.rows_text(o.rows) if o.rows else "", "repro": o.repro,
        "findings": [finding_dict(f) for f in o.findings],
        "warnings": [words.message(w) for w in o.warnings],
        "output": o.output,
        "stages": {str(k): round(v, 4) for k, v in o.stages.items()},
        "under_load": None if o.load is None else o.load.facts(),
        "point": o.point.to_dict(),
        "hashes": o.hashes,
        "reused": None if o.reused is None else o.reused.to_dict(),
    }


def finding_dict(f: Finding) -> dict[str, Any]:
    big = f.largest
    return {"check": str(f.check), "output": f.output, "message": words.message(f), "pattern": words.pattern_label(f),
            "max_abs_err": f.max_abs_err, "index": list(big.index) if big else None,
            "allowed": big.allowed if big else None, "mismatched": f.mismatched, "total": f.total,
            "kernel": big.kernel if big else None, "reference": big.reference if big else None,
            "facts": f.facts.to_dict(), "call": f.call, "where": f.to_dict()["pattern"],
            "budget": words.budget_headline(f) or None, "budget_details": words.budget_text(f.facts) or None,
            "trace": words.trace_lines(getattr(f.facts, "trace", None)) or None}


def zoo_dict(rows: list, device: str) -> dict[str, Any]:
    """`kladder zoo climb --json PATH` with no case: every case's row (zoo_rows.CaseRow) and both
    climbs' reports, each as `kladder climb --json` writes it."""
    return {"format": FORMAT, "zoo": True, "device": device,
            "cases": [{"case": r.name, "rung": r.rung, "verdict": r.verdict.value, "twin_clean": r.twin_clean,
                       "seconds": round(r.seconds, 3), "buggy": report_dict(r.bug), "fixed": report_dict(r.twin)}
                      for r in rows]}


def write_zoo(path: str, rows: list, device: str) -> None:
    write_atomic(path, dumps(zoo_dict(rows, device), indent=1))
