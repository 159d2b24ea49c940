"""`kladder climb PATH...` with several specs: several paths, a folder or a package (each spec
of each .py file under it that mentions kladder), a file or a module holding several specs.

Every spec is found and loaded first (a bad path or a spec that does not import is a usage
error, exit 2, before anything is climbed). Then they are climbed one after another on this
machine's workers, each climb as `kladder climb PATH::NAME` climbs it (its own pool, workers
started when a point needs one: with the outcome store, a spec whose points are all reused
starts none), recorded in the history, logged (--log PATH: every spec's records in that one
file, each with its run id; else one default log a spec). As each ends, one line; then the
reports of the specs that failed, and the totals. With -x, no spec is climbed after the first
that failed; with --lf, the specs whose last climb failed go first (and their failed points
first in each rung).

Outputs with several specs: --json PATH is one document, {"many": true, "climbs": [each
spec's report as `kladder climb --json` writes it], ...} (docs/report.schema.json, $defs/many);
--html PATH writes one page a spec, PATH's stem + "-N-NAME" + its extension (N the spec's
place, NAME its name). The exit status is 130 when interrupted, else 1 when any spec failed
(or could not be judged), else 2 when one could not start, else 5 when no spec ran a point,
else 0."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

from ..core.errors import UsageError, UsageProblem
from ..climbing.session import climb_options, cuda_asked, device_of, log_path, writable


@dataclass
class Many:
    """The climbs of many specs: their reports in order, those not climbed, and why."""
    device: str
    reports: list = field(default_factory=list)             # results.ClimbReport, in the order climbed
    not_climbed: list[tuple[str, str, str]] = field(default_factory=list)   # (spec, ref, why)
    stopped_by: str | None = None                            # -x: the spec whose failure stopped the climb
    interrupted: bool = False
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        codes = {r.exit_code for r in self.reports}
        if self.interrupted or 130 in codes:
            return 130
        if 1 in codes:
            return 1
        if 2 in codes:
            return 2
        if not codes or codes == {5}:
            return 5
        return 0


def found(refs: list[str]) -> list[tuple[str, object]]:
    """(PATH::NAME, Spec) for every spec the paths name, each once, in the order given."""
    from ..gen.load import specs_in
    out, seen = [], set()
    for ref in refs:
        try:
            for r, spec in specs_in(ref):
                target, _, name = r.partition("::")
                key = (os.path.abspath(target) if os.path.exists(target) else target, name)
                if key not in seen:
                    seen.add(key)
                    out.append((r, spec))
        except UsageError as e:
            raise UsageProblem(str(e)) from None
    return out


def _first_failed(args, specs: list) -> tuple[list, dict]:
    """--lf: the specs whose last climb failed first, and each spec's failed points' ids."""
    from ..history.commands import last_failures
    failed = {ref: frozenset(last_failures(args, spec.name, ref)[1]) for ref, spec in specs}
    return sorted(specs, key=lambda rs: not failed[rs[0]]), failed


def climb_many(refs: list[str], args) -> int:
    from ..core.interrupts import Interrupts
    Interrupts().install()                   # a Ctrl-C while the specs load: the usual KeyboardInterrupt below
    for option in ("json", "log", "html"):
        writable(f"--{option}", getattr(args, option, None))
    if getattr(args, "ray", None) or getattr(args, "shard", None):
        raise UsageProblem("--ray and --shard climb one spec; give one PATH::NAME (several specs climb on this "
                           "machine's workers, one after another)")
    # on CUDA the server starts before this process imports torch to resolve the device, so that
    # the two imports overlap (climbing/session.early_server: the one spec's climb does the same)
    early = _server("cuda") if cuda_asked(args.device) else None
    try:
        device = device_of(args.device)
    except BaseException:
        if early is not None:
            early.close()
        raise
    if early is not None and device != "cuda":      # auto found no CUDA device after all
        early.close()
        early = None
    t0 = time.perf_counter()
    server = early or _server(device)        # imports torch beside this process's loading of the specs
    try:
        return _climb_found(refs, args, device, server, t0)
    finally:
        if server is not None:
            server.close()


def _server(device: str):
    """One fork server for every spec's workers: each spec's first worker is a fork of a process
    that has imported torch, Triton and kladder already, not a new Python (run/forkserver.py;
    KLADDER_FORKSERVER=0: none)."""
    if os.name != "posix" or os.environ.get("KLADDER_FORKSERVER") == "0":
        return None
    from ..run.forkclient import Server
    from ..run.workers import worker_env
    try:
        return Server(worker_env(device), label="many")
    except OSError:
        return None


def _climb_found(refs: list[str], args, device: str, server, t0: float) -> int:
    from ..core.interrupts import signalled
    try:
        specs = found(refs)
    except (KeyboardInterrupt, Exception) as e:
        if not isinstance(e, KeyboardInterrupt) and not signalled():
            raise
        print("kladder: interrupted before the climb started", file=sys.stderr)
        return 130
    from ..history.commands import outcome_store
    store = outcome_store(args)
    failed_before: dict = {}
    if getattr(args, "lf", False):
        specs, failed_before = _first_failed(args, specs)
    many = Many(device)
    width = max(len(s.name) for _, s in specs)
    try:
        for ref, spec in specs:
            if many.stopped_by is not None or many.interrupted:
                why = "not climbed: -x stopped at an earlier spec's failure" if many.stopped_by else "interrupted"
                many.not_climbed.append((spec.name, ref, why))
                continue
            report = _climb_one(args, ref, spec, device, store, failed_before.get(ref, frozenset()), server)
            many.reports.append(report)
            _say(report, width)
            if report.interrupted:
                many.interrupted = True
            elif getattr(args, "exitfirst", False) and report.failures:
                many.stopped_by = f"{report.spec} ({ref})"
    except KeyboardInterrupt:
        many.interrupted = True
    finally:
        if store is not None:
            store.close()
    many.seconds = time.perf_counter() - t0
    return _ended(many, args)


def _climb_one(args, ref: str, spec, device: str, store, first: frozenset, server=None):
    """One spec's climb, recorded in the history as `kladder climb PATH::NAME` records it."""
    from ..history.commands import golden_check
    from ..history.record import recorded
    from ..core.interrupts import Interrupts, signalled
    from ..climbing.ladder import climb
    Interrupts().install()                   # each climb its own: the one before defers every SIGINT once it ended
    pools: list = []
    opts = climb_options(args, ref, device, keep=pools, warm=False, server=server)
    try:
        opts.store, opts.first = store, first
        opts.on_end = lambda r: golden_check(r, args)
        report, recorder = recorded(args, spec.name, ref, device, opts)
        opts.log_path = log_path(args, spec, report.run_id)
        try:
            climb(ref, spec, opts, report=report)
        except UsageError as e:
            report.start_error = {"kind": "usage", "message": str(e)}
        except Exception:
            if not signalled():
                raise
            report.interrupted = True        # the signal's, wrapped on its way (interrupts.signalled)
        recorder.end(report)
    finally:
        for pool in pools:
            pool.close()
    return report


def _say(report, width: int) -> None:
    from ..report.many import spec_line
    sys.stdout.write(spec_line(report, width) + "\n")
    sys.stdout.flush()


def _ended(many: Many, args) -> int:
    import signal

    from ..report.many import failed_reports, not_climbed_line, totals_text
    width = max([len(r.spec) for r in many.reports] + [len(s) for s, _, _ in many.not_climbed] + [0])
    for spec, ref, why in many.not_climbed:
        sys.stdout.write(not_climbed_line(spec, ref, why, width) + "\n")
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    sys.stdout.write(failed_reports(many.reports, color=color, verbose=getattr(args, "verbose", False)))
    sys.stdout.write(totals_text(many.reports, len(many.not_climbed), many.seconds, many.stopped_by, many.interrupted))
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the outputs are written whole from here on
    code = many.exit_code
    if getattr(args, "json", None) and not _write(args.json, "--json", lambda: many_json(many)):
        return 2
    if getattr(args, "html", None):
        from ..report.html import report_html
        from ..report.jsonout import report_dict, strict
        for path, r in zip(html_paths(args.html, many.reports), many.reports, strict=True):
            if not _write(path, "--html", lambda r=r: report_html(strict(report_dict(r)))):
                return 2
    return code


def html_paths(path: str, reports: list) -> list[str]:
    """--html PATH with several specs: PATH's stem + "-N-NAME" + its extension, one a spec."""
    stem, ext = os.path.splitext(path)
    return [f"{stem}-{i + 1}-{''.join(c if c.isalnum() or c in '-_.' else '_' for c in r.spec)}{ext or '.html'}"
            for i, r in enumerate(reports)]


def many_json(many: Many) -> str:
    from ..report.jsonout import FORMAT, dumps, report_dict
    doc = {"format": FORMAT, "many": True, "device": many.device, "exit_code": many.exit_code,
           "seconds": round(many.seconds, 3), "interrupted": many.interrupted,
           "stopped_by": many.stopped_by,
           "not_climbed": [{"spec": s, "ref": r, "why": w} for s, r, w in many.not_climbed],
           "climbs": [report_dict(r) for r in many.reports]}
    return dumps(doc, indent=1)


def _write(path: str, option: str, text) -> bool:
    from ..report.jsonout import write_atomic
    try:
        write_atomic(path, text())
    except OSError as e:
        print(f"kladder: error: {option} {path!r}: could not write it ({e.strerror or e}); give a file in a folder you "
              "can write to", file=sys.stderr)
        return False
    return True
