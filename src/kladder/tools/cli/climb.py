"""`kladder climb`: one spec, or several through many.py; its report written whatever happens."""
from __future__ import annotations

import contextlib
import datetime
import os
import sys

from ...run.devicestart import DeviceStartError
from ...core.errors import UsageError, UsageProblem
from ...climbing.session import climb_options, device_of, early_server, log_path, writable
from ...version import __version__
from .common import INTERRUPTED, checked_early, color, write_json


def cmd_climb_paths(args) -> int:
    """`kladder climb PATH...`: one spec as it always was; several (several paths, a folder, a
    package, a file holding several specs) through many.py."""
    from ...gen.load import ManySpecs, is_many, refs_in
    refs = list(args.refs)
    if len(refs) == 1 and is_many(refs[0]):          # a folder or a package: of one spec, climbed as that spec
        device_of(args.device)                       # Triton's interpreter chosen before any spec imports Triton
        try:
            refs = refs_in(refs[0])
        except UsageError as e:
            raise UsageProblem(str(e)) from None
    if len(refs) == 1:
        try:
            return cmd_climb(refs[0], args)
        except ManySpecs as e:
            refs = e.refs
    from ..many import climb_many
    return climb_many(refs, args)


def cmd_climb(ref: str, args) -> int:
    """A climb, and its report whatever happens: every outcome below ends with the --json
    file written whole (atomically) and the text printed, marked interrupted (Ctrl-C at any
    moment), or marked with start_error (a usage problem, or a device others held), exit 2."""
    from ...core.interrupts import Interrupts
    guard = Interrupts().install()          # first of all: a Ctrl-C from here on leaves a report
    report, started, problem = None, {"pools": [], "rungs": None}, None
    try:
        try:
            writable("--json", args.json)
            writable("--log", args.log)
            writable("--html", args.html)
            report = _new_report(ref, args)
            started["recorder"] = _recorder(args, report)
            _climb_started(ref, args, report, started)
        finally:
            guard.defer()                   # from here on a Ctrl-C only marks the report
    except KeyboardInterrupt:
        pass
    except UsageProblem as e:
        problem = e
    except UsageError as e:
        problem = UsageProblem(str(e))
    except DeviceStartError as e:
        from ...report.words import device_start_error
        report.start_error = device_start_error(e.facts)
    except _many_specs():                   # the file holds several specs: climbed as many (cmd_climb_paths)
        started["recorder"].close()
        raise
    except Exception as e:  # kladder's own bug mid-climb: the points so far still get their report
        if guard.seen:
            # the signal's own, reraised: on Python 3.11 one that lands inside a class's __set_name__
            # while a module imports comes out as "RuntimeError: Error calling __set_name__" (once in
            # a whole suite's 40 signalled climbs under load): the climb is interrupted, not broken
            pass
        elif report is None:
            raise
        else:
            import traceback
            from ...core.facts import KladderErrorFacts
            from ...core.outcome import error_facts
            report.kladder_error = KladderErrorFacts(**error_facts(e), trace="".join(traceback.format_exception(e)[-8:]))
    finally:
        for pool in started["pools"]:
            pool.close()
        if started.get("server") is not None:          # early_server's: this command's, not a pool's
            started["server"].close()
        if started.get("store") is not None:
            started["store"].close()
    if guard.seen:                          # what failed after a signal failed of it (an import torn half-way): interrupted
        problem = None
    if report is None:                      # --json or --log cannot be written: nothing to write a report to
        if problem is None:
            print("kladder: interrupted before the climb started", file=sys.stderr)
            return INTERRUPTED
        raise problem
    return _ended(report, args, guard, problem, started["rungs"], started.get("recorder"))


def _recorder(args, report):
    from ...history.record import Recorder
    r = Recorder.from_args(args)
    r.report = report
    return r


def _new_report(ref: str, args):
    from ...gen.load import split_ref
    from ...core.results import ClimbReport
    target, name = split_ref(ref)
    guess = name or os.path.splitext(os.path.basename(target))[0] or ref
    device = args.device if args.device in ("cpu", "cuda") else "auto"
    return ClimbReport(guess, ref, device, started=datetime.datetime.now().isoformat(timespec="seconds"),
                       kladder_version=__version__)


def _climb_started(ref: str, args, report, started: dict) -> None:
    from ...climbing.ladder import climb
    checked_early(ref, args)
    started["server"] = early_server(args, ref)          # on CUDA, before this process imports torch
    device = _climb_device(args)
    report.device = device
    if device != "cuda" and started["server"] is not None:   # auto found no CUDA device after all
        started.pop("server").close()
    opts = climb_options(args, ref, device, keep=started["pools"], server=started.get("server"))
    opts.on_outcome = started["recorder"].point
    opts.on_end = lambda r: _golden_check(r, args)       # before the log's end record: its exit_code says it
    started["rungs"] = opts.rungs
    try:
        spec = _load_one(ref)
        opts.log_path = log_path(args, spec, report.run_id)
        _history_options(args, opts, spec, ref, started)
        climb(ref, spec, opts, report=report)
    except UsageError as e:
        raise UsageProblem(str(e)) from None


def _many_specs():
    from ...gen.load import ManySpecs
    return ManySpecs


def _load_one(ref: str):
    """The spec `ref` names; a file or module holding several (no ::NAME) raises ManySpecs."""
    from ...gen.load import ManySpecs, load_spec, specs_in, split_ref
    if split_ref(ref)[1] is not None:
        return load_spec(ref)
    found = specs_in(ref)
    if len(found) > 1:
        raise ManySpecs([r for r, _ in found])
    return found[0][1]


def _history_options(args, opts, spec, ref: str, started: dict | None = None) -> None:
    """The options the history gives a climb: the outcome store, and --lf's failures first."""
    from ...history.commands import last_failures, outcome_store
    opts.store = outcome_store(args)
    if started is not None:
        started["store"] = opts.store
    if getattr(args, "lf", False):
        opts.first = frozenset(last_failures(args, spec.name, ref)[1])


def _climb_device(args) -> str:
    """The device climbed: on a Ray cluster (--ray) the workers', chosen from the cluster's resources."""
    if not getattr(args, "ray", None):
        return device_of(args.device)
    from ...run.ray_lanes import cluster_device
    try:
        dev = cluster_device(args.ray, args.device)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if dev == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    return dev


def _ended(report, args, guard, problem, rungs, recorder=None) -> int:
    """The report finished and written. A Ctrl-C while it is written marks it interrupted and
    writes it again; once it is written, SIGINT is ignored to the end (Python's shutdown puts
    back the default handler, which would end the process with the report saying otherwise).
    A finished climb is never lost to one output: the JSON, the history and the HTML are each
    written where they can be, the verdict printed, and only then is a write that failed said
    (one line each); the exit status stays the verdict's (report.exit_code, as the JSON says)."""
    from ...climbing.ladder import end_climb
    from ...core.rungs import BUILT
    from ...report.terminal import render_text
    if problem is not None:
        from ...core.results import StartErrorFacts
        report.start_error = StartErrorFacts(kind="usage", message=str(problem))
    if not report.fingerprint:               # no worker started: the environment as this process sees it
        from ...core.fingerprint import fingerprint, source_file
        report.fingerprint = fingerprint(source_file(report.ref), None)
    failed: dict[str, str] = {}
    seen = None
    while seen != guard.seen:
        seen = guard.seen
        end_climb(report, rungs or BUILT, seen)
        if report.golden is None:            # the climb's on_end made it, unless no climb ran
            _golden_check(report, args)      # in the report (--json, --html) as typed data
        if args.json:
            write_json(args.json, report, failed)
    guard.ignore()                           # written: from here on no signal ends the process mid-way
    if recorder is not None:
        recorder.end(report)
    if args.html:
        _write_html(args.html, report, failed)
    if report.kladder_error:
        x = report.kladder_error
        print(f"{x.trace}kladder: kladder's own error ended the climb (not the kernel's): {x.error}: {x.text}; "
              "the report holds the points run before it", file=sys.stderr)
    if report.start_error:
        print(f"kladder: error: {report.start_error.message}", file=sys.stderr)
    else:
        _say(lambda: sys.stdout.write(render_text(report, color=color(args.color), verbose=getattr(args, "verbose", False))))
    for line in failed.values():
        print(line, file=sys.stderr)
    return report.exit_code                  # --golden=strict's failure in it (report.golden.fails)


def _say(write) -> None:
    """The terminal report printed; a terminal that is gone (a closed pipe, a full disk under a
    redirect) loses only itself, never the outputs written before it nor the exit status."""
    try:
        write()
        sys.stdout.flush()
    except OSError as e:
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        with contextlib.suppress(OSError):
            print(f"kladder: error: the report could not be printed ({e.strerror or e}); --json, --html and the "
                  "history hold it where they were written", file=sys.stderr)


def _write_html(path: str, report, failed: dict) -> None:
    from ...report.html import report_html
    from ...report.jsonout import report_dict, strict, write_atomic
    try:
        write_atomic(path, report_html(strict(report_dict(report))))
    except OSError as e:
        failed["--html"] = (f"kladder: error: --html {path!r}: could not write the report ({e.strerror or e}); the "
                            "verdict above stands; write it again with `kladder report REPORT.json --html FILE` from "
                            "--json, or climb again with a file in a folder you can write to")


def _golden_check(report, args) -> None:
    from ...history.commands import golden_check
    golden_check(report, args)
