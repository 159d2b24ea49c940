"""A climb or a repro into the history as it runs (store.py says how it survives a kill and
concurrent writers). The history never decides a verdict: a history that cannot be written
is one line on stderr, and the climb goes on and reports as it would without it."""
from __future__ import annotations

import datetime
import sys

from ..core.outcome import Check, Outcome
from .store import History, HistoryError, default_path

VERDICTS = {0: "passed", 1: "failed", 2: "not started", 5: "nothing ran", 130: "interrupted"}


def nondeterministic(o: Outcome) -> bool:
    """Calls at the same inputs gave other bits (a warning or rung 5's bitwise finding): the
    point's hashes are not stable, and no diff or golden check compares them."""
    return any(f.check == Check.NONDETERMINISTIC or (f.check == Check.REPEATS and getattr(f.facts, "bitwise", False))
               for f in [*o.findings, *o.warnings])


def point_row(o: Outcome) -> dict:
    from ..report.jsonout import outcome_dict
    d = outcome_dict(o)
    return {"id": d["id"], "rung": d["rung"], "status": d["status"], "failure": d["failure"], "seconds": d["seconds"],
            "stages": d["stages"], "hashes": d["hashes"], "nondeterministic": nondeterministic(o), "point": d["point"],
            "load": None if o.ran_with is None else o.ran_with.to_dict(whole=True),
            "reused_from": None if o.reused is None else o.reused.run_id}


class Recorder:
    """Writes one climb: begin() at the start, point() for each outcome as it arrives, end()."""

    def __init__(self, path: str | None):
        self.path, self.h, self.climb_id, self.report = path, None, None, None
        if path is None:
            return
        try:
            self.h = History(path)
        except HistoryError as e:
            self._lost(e)

    @classmethod
    def from_args(cls, args) -> "Recorder":
        if getattr(args, "no_history", False):
            return cls(None)
        return cls(getattr(args, "history", None) or default_path())

    def _lost(self, e: Exception) -> None:
        print(f"kladder: the history {self.path!r} is not written ({e}); the climb goes on without it "
              "(give --history PATH, or --no-history)", file=sys.stderr)
        if self.h is not None:
            self.h.close()
        self.h = None

    def _safely(self, method: str, *a):
        """History.`method`(*a), or None: the history dropped for the rest of the climb at its
        first failure (looked up only while there is one: a point after a failed write is a no-op)."""
        if self.h is None:
            return None
        try:
            return getattr(self.h, method)(*a)
        except Exception as e:  # noqa: BLE001 - the history must never end a climb
            self._lost(e)
            return None

    def begin(self, report, kind: str = "climb") -> None:
        from ..core.fingerprint import fingerprint, source_file
        if self.climb_id is not None or self.h is None:
            return
        fp = report.fingerprint or fingerprint(source_file(report.ref), None)
        self.climb_id = self._safely("begin", kind, report.spec, report.ref, report.device,
                                     report.kladder_version, report.started, report.run_id, fp)

    def point(self, outcome: Outcome) -> None:
        """Each outcome as it arrives; the climb's row is made at the first (the spec's own name
        is known by then)."""
        if self.climb_id is None and self.report is not None:
            self.begin(self.report)
        if self.climb_id is not None:
            self._safely("point", self.climb_id, point_row(outcome))

    def end(self, report) -> None:
        self.begin(report)                   # a climb that ran no point is recorded too
        if self.climb_id is None:
            return
        rungs = [{"rung": r.rung, "verdict": r.verdict, "seconds": round(r.seconds, 3)} for r in report.rungs if r.climbed]
        code = report.exit_code
        golden = report.golden                # --golden's result: why a climb whose points passed failed
        shard = report.shard
        self._safely("end", self.climb_id, datetime.datetime.now().isoformat(timespec="seconds"),
                     VERDICTS.get(code, f"exit {code}"), code, report.fingerprint, report.device_name, rungs,
                     None if golden is None else golden.to_dict(),
                     f"{shard.index}/{shard.count}" if shard is not None and shard.index else None)
        self.close()

    def close(self) -> None:
        if self.h is not None:
            self.h.close()
            self.h = None


def recorded(args, spec_name: str, ref: str, device: str, opts):
    """A climb that is not the CLI's own (each case of `kladder zoo climb` with no case): its
    report made here and a Recorder that writes it into the history as it runs (--history PATH,
    --no-history), as `kladder climb` records. Returns (report, recorder); the caller passes the
    report to ladder.climb and calls recorder.end(report) once it returns."""
    from ..core.results import ClimbReport
    report = ClimbReport(spec_name, ref, device, started=datetime.datetime.now().isoformat(timespec="seconds"))
    recorder = Recorder.from_args(args)
    recorder.report = report
    opts.on_outcome = recorder.point
    return report, recorder
