"""`kladder ...`. Imports are lazy so that --help answers at once.

A bad option or spec is one line on stderr that names it, what was given and the fix, with
exit status 2; a climb exits 0 (every point that ran passed), 1 (a point failed or could not
be judged), 2 (it could not start: a usage problem, a device others held), 5 (no point ran) or
130 (interrupted), and its JSON says the same."""
from __future__ import annotations

import argparse
import datetime
import os
import signal
import sys

from .devicestart import DeviceStartError
from .session import UsageProblem, climb_options, device_of, log_path, usage_errors, writable
from .version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
INTERRUPTED = 130           # report.data.INTERRUPTED

RUNGS_HELP = "rungs to climb: 1, 1,2 or 1-3 (default: every rung built)"
SANITIZERS = ("memcheck", "racecheck", "initcheck", "synccheck")


DEVICE_HELP = "auto (cuda when torch sees one), cpu (Triton interpreter) or cuda"
JOBS_HELP = ("points run side by side, each in a worker of its own (default: the CPU's cores on the CPU; on "
             "CUDA four per GPU, big points alone)")


SHRINK_S = 30.0             # seconds a climb spends shrinking its failures by default (nothing when none fails)


def _positive(kind, what: str, zero: bool = False):
    """An argparse type: a finite number of `kind` more than 0 (or 0 or more with `zero`)."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r}: give {what}") from None
        if not (v >= 0 if zero else v > 0) or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r}: give {what} ({'0 or more' if zero else 'more than 0'})")
        return v
    return parse


SEED_HELP = ("shift every point's seed by S (other inputs at the same points; false alarms are seed-dependent). "
             "The shifted seed is in each point, so its repro reproduces it")


def _climb_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rungs", help=RUNGS_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH")
    p.add_argument("--timeout", type=_positive(float, "seconds, e.g. 60"), metavar="S",
                   help="seconds a point may run before it is a hang")
    p.add_argument("--log", metavar="PATH", help="append outcomes as JSON lines to PATH as they arrive "
                   "(default .kladder/log/NAME-TIME.jsonl)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--replay", metavar="DIR", help="add rung-2 points made of the calls captured in DIR "
                   "(with kladder.capture(...)), each in its captured layout")
    p.add_argument("-j", "--jobs", type=_positive(int, "a number of workers, e.g. 2"), metavar="N", help=JOBS_HELP)
    p.add_argument("--devices", metavar="IDS", help="CUDA devices to spread workers over, e.g. 0,1 (default: every "
                   "visible one)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display while the climb runs")
    p.add_argument("--repeat", type=_positive(int, "a number of calls, e.g. --repeat 100000"), metavar="N",
                   help="rung 5: calls each repetition point makes (default 100 on the CPU, 100,000 on a GPU; with --repeat-s, whichever ends first)")
    p.add_argument("--repeat-s", type=_positive(float, "seconds, e.g. --repeat-s 30"), metavar="S",
                   help="rung 5: seconds each repetition point may repeat for (default 10 on a GPU, 5 on the CPU)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)
    p.add_argument("--shrink-s", type=_positive(float, "seconds, e.g. --shrink-s 60 (0: do not shrink)", zero=True), default=SHRINK_S,
                   metavar="S", help=f"seconds to shrink the failures after the rungs: the smallest point that fails "
                   f"the same way, per rung (default {SHRINK_S:g}; 0: none)")
    from .history.commands import add_climb_options
    add_climb_options(p)


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kladder", description="Climb the validation ladder for GPU kernels.")
    sub = top.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("climb", help="climb a spec: PATH.py[::NAME] or module::NAME")
    c.add_argument("ref", metavar="PATH[::NAME]")
    c.add_argument("-v", "--verbose", action="store_true", help="under each failure's budget line, how the budget was set")
    _climb_options(c)
    c.add_argument("--shard", metavar="I/N", help="run only the I-th of N disjoint slices of every rung's points "
                   "(a CI matrix: one runner a shard, then `kladder merge` their --json reports)")
    c.add_argument("--ray", metavar="ADDRESS", help="run the points on a Ray cluster's workers, one a GPU (or one a "
                   "CPU slot on the CPU), each in kladder's own worker process: ADDRESS as ray.init takes it (auto, "
                   "HOST:6379, ray://HOST:10001, local); needs `pip install kladder[ray]`")
    m = sub.add_parser("merge", help="make the --json reports of a climb's shards (--shard I/N) one report")
    m.add_argument("reports", nargs="+", metavar="REPORT.json")
    m.add_argument("--json", metavar="PATH", help="write the merged report as JSON to PATH")
    m.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    r = sub.add_parser("repro", help="re-run one point exactly, as a report printed it")
    r.add_argument("ref", metavar="PATH[::NAME]")
    r.add_argument("point", help="the point, as JSON or as the dict the report prints")
    r.add_argument("--device", default="auto", help=DEVICE_HELP)
    r.add_argument("--timeout", type=_positive(float, "seconds, e.g. 60"), metavar="S")
    r.add_argument("-v", "--verbose", action="store_true", help="under the budget line, how the budget was set")
    r.add_argument("--sanitize", choices=SANITIZERS, help="run the point's calls under compute-sanitizer's TOOL "
                   "instead (CUDA; the caching allocator off)")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="shift the point's seed by S")
    r.add_argument("--history", metavar="PATH", help="the history file (default .kladder/history.sqlite)")
    r.add_argument("--no-history", action="store_true", help="do not record this repro in the history")
    pts = sub.add_parser("points", help="list the points a climb would run, without running anything")
    pts.add_argument("ref", metavar="PATH[::NAME]")
    pts.add_argument("--rungs", help=RUNGS_HELP)
    pts.add_argument("--device", default="auto", help=DEVICE_HELP + " (the budget the points are sized for)")
    pts.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)
    pts.add_argument("--json", metavar="FILE", help="write the points as JSON to FILE")
    pts.add_argument("--shard", metavar="I/N", help="only the points `kladder climb --shard I/N` deals to shard I")
    z = sub.add_parser("zoo", help="the bundled buggy kernels and their fixed twins")
    zsub = z.add_subparsers(dest="zoo_cmd", required=True)
    zsub.add_parser("list", help="list the cases")
    zc = zsub.add_parser("climb", help="climb one case, the buggy kernel by default; several cases (or none: every "
                         "case), each kernel and its twin, as a table")
    zc.add_argument("case", nargs="*")
    zc.add_argument("--fixed", action="store_true", help="climb the fixed twin instead")
    zc.add_argument("-v", "--verbose", action="store_true", help="with every case: print each ladder too; under each "
                    "failure's budget line, how the budget was set")
    zc.add_argument("--cases-at-once", type=_positive(int, "a number of climbs, e.g. 2"), metavar="N",
                    help="with every case: climbs run side by side, each with its own workers (default 2 on the "
                    "CPU, 1 on CUDA)")
    _climb_options(zc)
    _bisect_parser(sub)
    _bench_parser(sub)
    _explore_parser(sub)
    from .history.commands import add_parsers
    add_parsers(sub)
    return top


def _explore_parser(sub) -> None:
    e = sub.add_parser("explore", help="points drawn by Hypothesis from the spec, between the ladder's edges; failures "
                       "shrunk and replayed first next time")
    e.add_argument("ref", metavar="PATH[::NAME]")
    e.add_argument("--budget-s", type=_positive(float, "seconds, e.g. 60"), default=60.0, metavar="S",
                   help="seconds to search for a failure (default 60)")
    e.add_argument("--shrink-s", type=_positive(float, "seconds, e.g. 60"), default=60.0, metavar="S",
                   help="seconds to shrink a failure, for Hypothesis and again for the plain search (default 60)")
    e.add_argument("--rungs", default="1", help="what to vary: 1 sizes, dtypes and configs; 2 also value kinds; 3 also "
                   "layouts (default 1)")
    e.add_argument("--device", default="auto", help=DEVICE_HELP)
    e.add_argument("--timeout", type=_positive(float, "seconds, e.g. 60"), metavar="S")
    e.add_argument("--seed", type=int, metavar="S", help="Hypothesis's seed (default: a fresh one each run)")
    e.add_argument("--json", metavar="PATH", help="write every point tried, the failure and its shrinking as JSON")


def _bench_parser(sub) -> None:
    b = sub.add_parser("bench", help="A/B timing: interleaved rounds, L2 flushed, medians, Wilcoxon, %% of roofline")
    b.add_argument("ref", metavar="PATH.py[::NAME]", help="the spec whose kernel is A (and whose point is timed)")
    b.add_argument("--against", metavar="OTHER", help="the spec whose kernel is B, called on the same inputs")
    b.add_argument("--point", help="the point, as JSON or as the dict a report prints (default: the biggest rung-1 "
                   "point that fits the device)")
    b.add_argument("--device", default="auto", help=DEVICE_HELP)
    b.add_argument("--rounds", type=_positive(int, "a number of rounds, e.g. 20"), metavar="N")
    b.add_argument("--calls", type=_positive(int, "calls a round, e.g. 10"), metavar="N", help="calls a round "
                   "(a round's sample is their median)")
    b.add_argument("--warmup", type=_positive(int, "warm-up calls, e.g. 10"), metavar="N")
    b.add_argument("--flops", metavar="EXPR", help="the FLOPs of a call as an expression of the dims, e.g. 2*M*N*K")
    b.add_argument("--json", metavar="PATH", help="write the timings as JSON to PATH")


def _bisect_parser(sub) -> None:
    b = sub.add_parser("bisect", help="find the commit that broke a point: git bisect run in the spec's repository")
    b.add_argument("good", metavar="GOOD", help="a commit where the point passes")
    b.add_argument("bad", metavar="BAD", help="a later commit where it fails")
    b.add_argument("ref", metavar="PATH.py[::NAME]", help="the spec's file inside the kernel's git repository")
    what = b.add_mutually_exclusive_group(required=True)
    what.add_argument("--point", help="the point, as JSON or as the dict a report prints")
    what.add_argument("--rungs", help="judge each commit by these rungs' points instead (any failure: bad)")
    b.add_argument("--device", default="auto", help=DEVICE_HELP)
    b.add_argument("--timeout", type=_positive(float, "seconds, e.g. 60"), metavar="S")
    b.add_argument("--json", metavar="PATH", help="write the verdicts of every step as JSON to PATH")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "climb":
            return cmd_climb(args.ref, args)
        if args.cmd == "repro":
            return cmd_repro(args)
        if args.cmd == "merge":
            return cmd_merge(args)
        if args.cmd == "points":
            return cmd_points(args)
        if args.cmd == "bisect":
            return cmd_bisect(args)
        if args.cmd == "bench":
            return cmd_bench(args)
        if args.cmd == "explore":
            return cmd_explore(args)
        if args.cmd in ("history", "diff", "golden", "report"):
            from .history import commands
            return getattr(commands, f"cmd_{args.cmd}")(args)
        if args.zoo_cmd == "list":
            return cmd_zoo_list()
        if len(args.case) != 1:
            return cmd_zoo_climb_all(args)
        return cmd_climb(_case_ref(args.case[0], args.fixed), args)
    except UsageProblem as e:
        print(f"kladder: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `kladder zoo list | head`: the reader left; say nothing more, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED


def _load(ref: str, device: str):
    from .load import load_spec
    try:
        return load_spec(ref)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None


def _case_ref(case: str, fixed: bool) -> str:
    from .cases import case_modules, case_ref
    names = case_modules()
    if case not in names:
        raise UsageProblem(f"no zoo case {case!r}; `kladder zoo list` shows them: {', '.join(names)}.")
    return case_ref(case, fixed)


def _color(choice: str) -> bool:
    return choice == "always" or (choice == "auto" and sys.stdout.isatty())


def cmd_climb(ref: str, args) -> int:
    """A climb, and its report whatever happens: every outcome below ends with the --json
    file written whole (atomically) and the text printed, marked interrupted (Ctrl-C at any
    moment), or marked with start_error (a usage problem, or a device others held), exit 2."""
    from .interrupts import Interrupts
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
    except usage_errors() as e:
        problem = UsageProblem(str(e))
    except DeviceStartError as e:
        report.start_error = e.facts
    except Exception as e:  # noqa: BLE001 - kladder's own bug mid-climb: the points so far still get their report
        if report is None:
            raise
        import traceback
        from .outcome import error_facts
        report.kladder_error = {**error_facts(e), "trace": "".join(traceback.format_exception(e)[-8:])}
    finally:
        for pool in started["pools"]:
            pool.close()
    if report is None:                      # --json or --log cannot be written: nothing to write a report to
        if problem is None:
            print("kladder: interrupted before the climb started", file=sys.stderr)
            return INTERRUPTED
        raise problem
    return _ended(report, args, guard, problem, started["rungs"], started.get("recorder"))


def _recorder(args, report):
    from .history.record import Recorder
    r = Recorder.from_args(args)
    r.report = report
    return r


def _new_report(ref: str, args):
    from .load import split_ref
    from .report.data import ClimbReport
    target, name = split_ref(ref)
    guess = name or os.path.splitext(os.path.basename(target))[0] or ref
    device = args.device if args.device in ("cpu", "cuda") else "auto"
    return ClimbReport(guess, ref, device, started=datetime.datetime.now().isoformat(timespec="seconds"),
                       kladder_version=__version__)


def _climb_started(ref: str, args, report, started: dict) -> None:
    from .ladder import climb
    _checked_early(ref, args)
    device = _climb_device(args)
    report.device = device
    opts = climb_options(args, ref, device, keep=started["pools"])
    opts.on_outcome = started["recorder"].point
    opts.on_end = lambda r: _golden_check(r, args)       # before the log's end record: its exit_code says it
    started["rungs"] = opts.rungs
    try:
        spec = _load(ref, device)
        opts.log_path = log_path(args, spec, report.run_id)
        climb(ref, spec, opts, report=report)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None


def _device_word(device: str) -> None:
    """A --device that is none of auto, cpu, cuda: its usage error at once (resolve_device
    says it before it imports torch to look for CUDA)."""
    if device not in ("auto", "cpu", "cuda"):
        device_of(device)


def _checked_ref(ref: str) -> None:
    from .load import check_ref
    try:
        check_ref(ref)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None


def _checked_rungs_and_shard(args) -> None:
    """--rungs and --shard read (climb_options and cmd_points read them again, as cheaply)."""
    from .ladder import parse_rungs
    from .shard import ShardError, parse_shard
    try:
        parse_rungs(args.rungs)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    try:
        parse_shard(getattr(args, "shard", None))
    except ShardError as e:
        raise UsageProblem(str(e)) from None


def _checked_early(ref: str, args) -> None:
    """The checks that need neither torch nor a worker, before either: a usage error (a spec
    file that does not exist, --rungs 9, --shard 4/3, --device tpu) exits 2 in a fraction of
    a second instead of after torch's import and a worker's start (~4 CPU s)."""
    _device_word(args.device)
    _checked_ref(ref)
    _checked_rungs_and_shard(args)


def _climb_device(args) -> str:
    """The device climbed: on a Ray cluster (--ray) the workers', chosen from the cluster's resources."""
    if not getattr(args, "ray", None):
        return device_of(args.device)
    from .run.ray_lanes import cluster_device
    try:
        dev = cluster_device(args.ray, args.device)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    if dev == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    return dev


def _ended(report, args, guard, problem, rungs, recorder=None) -> int:
    """The report finished and written. A Ctrl-C while it is written marks it interrupted and
    writes it again; once it is written, SIGINT is ignored to the end (Python's shutdown puts
    back the default handler, which would end the process with the report saying otherwise)."""
    from .ladder import BUILT, end_climb
    from .report.terminal import render_text
    if problem is not None:
        report.start_error = {"kind": "usage", "message": str(problem)}
    if not report.fingerprint:               # no worker started: the environment as this process sees it
        from .fingerprint import fingerprint, source_file
        report.fingerprint = fingerprint(source_file(report.ref), None)
    seen = None
    while seen != guard.seen:
        seen = guard.seen
        end_climb(report, rungs or BUILT, seen)
        if report.golden is None:            # the climb's on_end made it, unless no climb ran
            _golden_check(report, args)      # in the report (--json, --html) as typed data
        if args.json and not _write_json(args.json, report):
            return EXIT_USAGE
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if recorder is not None:
        recorder.end(report)
    if args.html and not _write_html(args.html, report):
        return EXIT_USAGE
    if report.kladder_error:
        x = report.kladder_error
        print(f"{x['trace']}kladder: kladder's own error ended the climb (not the kernel's): {x['error']}: {x['text']}; "
              "the report holds the points run before it", file=sys.stderr)
    if report.start_error:
        print(f"kladder: error: {report.start_error['message']}", file=sys.stderr)
    else:
        sys.stdout.write(render_text(report, color=_color(args.color), verbose=getattr(args, "verbose", False)))
    return report.exit_code                  # --golden=strict's failure in it (report.golden.fails)


def _write_html(path: str, report) -> bool:
    from .report.html import report_html
    from .report.jsonout import report_dict, strict, write_atomic
    try:
        write_atomic(path, report_html(strict(report_dict(report))))
    except OSError as e:
        print(f"kladder: error: --html {path!r}: could not write the report ({e.strerror or e}); give a file in a "
              "folder you can write to", file=sys.stderr)
        return False
    return True


def _golden_check(report, args) -> None:
    """--golden: each point's bits against the golden hashes (history/golden.check), kept in
    the report (report.golden: facts.GoldenFacts) before it is written."""
    report.golden = None
    if not getattr(args, "golden", None) or report.start_error:
        return
    from .history.commands import open_history
    from .history.golden import check, unreadable
    from .history.record import point_row
    rows = [point_row(o) for o in report.outcomes]
    try:
        h = open_history(args)
    except UsageProblem as e:
        print(f"kladder: --golden: {e}", file=sys.stderr)
        report.golden = unreadable(rows, strict=args.golden == "strict")
        return
    try:
        report.golden = check(h, report.spec, report.fingerprint, rows, strict=args.golden == "strict")
    finally:
        h.close()


def _write_json(path: str, report) -> bool:
    from .report.jsonout import write_report
    try:
        write_report(path, report)
    except OSError as e:
        print(f"kladder: error: --json {path!r}: could not write the report ({e.strerror or e}); give a file in a "
              "folder you can write to", file=sys.stderr)
        return False
    return True


def cmd_merge(args) -> int:
    """The shards' reports made one, printed as a climb prints its report; the exit status is
    the merged report's (computed again from its points)."""
    from .merge import merge
    from .report.terminal import render_text
    writable("--json", args.json)
    try:
        report, warnings = merge(args.reports)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    for w in warnings:
        print(f"kladder: warning: {w}", file=sys.stderr)
    if args.json and not _write_json(args.json, report):
        return EXIT_USAGE
    sys.stdout.write(render_text(report, color=_color(args.color)))
    return report.exit_code


def cmd_repro(args) -> int:
    # what needs no torch, no worker and no spec first: the device's word, the file, the point's text
    _device_word(args.device)
    _checked_ref(args.ref)
    point = _parsed_point(args.point)
    pool = _early_pool(args.ref, args.device)
    try:
        return _repro(args, pool, point)
    finally:
        if pool is not None:
            pool.close()


def _early_pool(ref: str, device: str):
    """With --device cpu, the point's worker started first, before this process imports torch
    and the spec: the two imports run side by side (a worker's start is most of a small
    repro's time). With auto, choosing the device imports torch first; nothing is gained."""
    if device != "cpu":
        return None
    from .run.isolation import Pool                     # the spec's file checked already (cmd_repro)
    os.environ.setdefault("TRITON_INTERPRET", "1")      # as device_of("cpu"), without importing the ladder first
    pool = Pool(ref, "cpu", spares=1)
    pool.warm(1)
    return pool


def _repro(args, pool, point) -> int:
    from .ladder import Runner
    from .report.terminal import render_outcome
    device = device_of(args.device)
    spec = _load(args.ref, device)
    if point.spec != spec.name:
        raise UsageProblem(f"POINT belongs to spec {point.spec!r}, not {spec.name!r}; check PATH::NAME.")
    from .pointcheck import PointError, check_point
    try:
        check_point(spec, point)
    except PointError as e:
        raise UsageProblem(str(e)) from None
    if args.sanitize:
        from .gaps.repetition import sanitized
        point = sanitized(point, args.sanitize)
    point = point.shifted(args.seed)
    runner = Runner(args.ref, spec, device, args.timeout, pool=pool)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        outcome = runner.run(point)          # as the climb ran it: replayed, and alone when it fails
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    finally:
        fp = runner.fingerprint
        runner.close()
    _record_repro(args, spec, device, started, outcome, fp)
    sys.stdout.write(render_outcome(outcome, fingerprint=fp, verbose=args.verbose))
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def _parsed_point(text: str):
    from .point import Point
    try:
        return Point.parse(text)
    except ValueError as e:
        raise UsageProblem(f"POINT: {e}") from None


def _record_repro(args, spec, device, started, outcome, fp) -> None:
    """A repro in the history too: a climb of kind 'repro' with its one point."""
    from .history.record import Recorder
    from .report.data import ClimbReport, RungReport
    rec = Recorder.from_args(args)
    report = ClimbReport(spec.name, args.ref, device, started=started, kladder_version=__version__, fingerprint=fp)
    report.rungs.append(RungReport(outcome.point.rung, "", [outcome]))
    rec.begin(report, kind="repro")
    rec.point(outcome)
    rec.end(report)


def cmd_points(args) -> int:
    from .ladder import parse_rungs, rung_points
    from .report.points import points_json, points_text
    from .sizes import budget_for
    _checked_early(args.ref, args)
    if args.json:
        writable("--json", args.json)
    device = device_of(args.device)
    spec = _load(args.ref, device)
    try:
        rungs = parse_rungs(args.rungs)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    from .shard import ShardError, Slicer, parse_shard
    try:
        shard = parse_shard(args.shard)
    except ShardError as e:
        raise UsageProblem(str(e)) from None
    budget = budget_for(device)
    slicer = Slicer(shard) if shard else None
    points = [p for r in rungs
              for p in (slicer.take(r, list(rung_points(spec, r, budget, args.seed))) if slicer
                        else rung_points(spec, r, budget, args.seed))]
    sys.stdout.write(points_text(spec, args.ref, device, points))
    if args.json:
        from .report.jsonout import write_atomic
        write_atomic(args.json, points_json(spec, args.ref, device, points))
    return EXIT_OK


def cmd_bisect(args) -> int:
    from .bisect import BisectProblem, bisect
    from .report.debugging import bisect_step, bisect_text
    writable("--json", args.json)
    _device_word(args.device)
    if args.point is not None:
        from .point import Point
        try:
            Point.parse(args.point)
        except ValueError as e:
            raise UsageProblem(f"--point: {e}") from None
    if args.rungs is not None:
        from .ladder import parse_rungs
        try:
            parse_rungs(args.rungs)
        except usage_errors() as e:
            raise UsageProblem(str(e)) from None
    device = device_of(args.device)
    try:
        result = bisect(args.good, args.bad, args.ref, point=args.point, rungs=args.rungs, device=device,
                        timeout_s=args.timeout, on_step=lambda s: print(bisect_step(s), flush=True))
    except BisectProblem as e:
        raise UsageProblem(str(e)) from None
    sys.stdout.write(bisect_text(result))
    _write_doc(args.json, result)
    return {"found": EXIT_OK, "interrupted": 130}.get(result["outcome"], EXIT_FAILED)


def cmd_bench(args) -> int:
    from .bench import BenchProblem, bench
    from .report.debugging import bench_text
    writable("--json", args.json)
    _device_word(args.device)
    for ref in (args.ref, args.against):
        if ref:
            _checked_ref(ref)
    if args.point is not None:
        from .point import Point
        try:
            Point.parse(args.point)
        except ValueError as e:
            raise UsageProblem(f"--point: {e}") from None
    device = device_of(args.device)
    try:
        result = bench(args.ref, args.against, point=args.point, device=device, rounds=args.rounds,
                       calls=args.calls, warmup=args.warmup, flops=args.flops)
    except BenchProblem as e:
        raise UsageProblem(str(e)) from None
    sys.stdout.write(bench_text(result))
    _write_doc(args.json, result)
    return EXIT_OK


def cmd_explore(args) -> int:
    from .explore import explore
    from .ladder import Runner, parse_rungs
    from .report.debugging import explore_point, explore_text
    from .sizes import budget_for
    writable("--json", args.json)
    _device_word(args.device)
    _checked_ref(args.ref)
    try:
        rungs = parse_rungs(args.rungs)
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    if not set(rungs) <= {1, 2, 3}:
        raise UsageProblem(f"--rungs {args.rungs!r}: explore draws sizes (1), values (2) and layouts (3); give rungs "
                           "from 1-3, e.g. --rungs 1-3")
    device = device_of(args.device)
    spec = _load(args.ref, device)
    runner = Runner(args.ref, spec, device, args.timeout)
    try:
        result = explore(args.ref, spec, runner, budget=budget_for(device), rungs=rungs, budget_s=args.budget_s,
                         shrink_s=args.shrink_s, seed=args.seed,
                         on_point=lambda e: print(explore_point(e), flush=True))
    except usage_errors() as e:
        raise UsageProblem(str(e)) from None
    finally:
        runner.close()
    sys.stdout.write(explore_text(result))
    _write_doc(args.json, result)
    return EXIT_FAILED if result["failure"] else EXIT_OK


def cmd_zoo_list() -> int:
    from .cases import case_modules
    cases = case_modules()
    width = max(map(len, cases)) + 1
    for name, mod in cases.items():
        c = mod.CASE
        print(f"{name:{width}} rung {c['rung']}  {c['gap']:16} needs {c['needs']:18} mirrors {c['mirrors']}")
    sys.stdout.flush()
    return EXIT_OK


def cmd_zoo_climb_all(args) -> int:
    from .zoo_run import climb_all
    for case in args.case:
        _case_ref(case, False)                  # an unknown case: a usage error before any climb
    if args.fixed:
        raise UsageProblem("--fixed climbs one case's twin (`kladder zoo climb CASE --fixed`); with several cases, or "
                           "none, each buggy kernel and its twin are climbed")
    writable("--json", args.json)
    return climb_all(args)


def _write_doc(path: str | None, doc: dict) -> None:
    """A command's --json document, strict JSON, written whole or not at all (report/jsonout.write_atomic)."""
    if path:
        from .report.jsonout import dumps, write_atomic
        write_atomic(path, dumps(doc, indent=1))


if __name__ == "__main__":
    sys.exit(main())
