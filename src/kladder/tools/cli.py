"""`kladder ...`. Imports are lazy so that --help answers at once.

A bad option or spec is one line on stderr that names it, what was given and the fix, with
exit status 2; a climb exits 0 (every point that ran passed), 1 (a point failed or could not
be judged), 2 (it could not start: a usage problem, a device others held), 5 (no point ran) or
130 (interrupted: SIGINT or SIGTERM, interrupts.py), and its JSON says the same. An output that
could not be written (a full disk) is said on stderr after the verdict, and the exit status
stays the verdict's: the verdict is the kernel's, the disk is not."""
from __future__ import annotations

import os
import sys

from ..core.interrupts import install_early, python_defaults

if __name__ == "__main__" or os.path.basename(sys.argv[0] if sys.argv else "") == "kladder":
    install_early()         # first of all, before the imports below: a Ctrl-C or SIGTERM meanwhile ends it at once

import argparse
import contextlib
import datetime

from ..run.devicestart import DeviceStartError
from ..core.errors import UsageError, UsageProblem
from ..climbing.session import climb_options, device_of, log_path, writable
from ..version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
INTERRUPTED = 130           # results.INTERRUPTED

RUNGS_HELP = "rungs to climb: 1, 1,2 or 1-3 (default: every rung built)"
SANITIZERS = ("memcheck", "racecheck", "initcheck", "synccheck")


DEVICE_HELP = "auto (cuda when torch sees one), cpu (Triton interpreter) or cuda"
JOBS_HELP = ("points run side by side, each in a worker of its own (default: the CPU's cores on the CPU; on "
             "CUDA four per GPU, big points alone); from 2 on, the points that start processes of their own "
             "start with the climb, on lanes of their own")


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


BUDGET_HELP = ("the time budget of rung 5's repetition points, its stream of calls and the compute-sanitizer tools: "
               "commit (default; a small kernel's climb ends in seconds, for every change: a repetition point 2 s on "
               "a GPU, the stream 1 s, memcheck) or release (the long ones: 10 s a repetition point on a GPU, the stream "
               "3 s, all four sanitizer tools). The report says which ran and what the longer one would add")
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
                   help="rung 5: seconds each repetition point may repeat for (default 5 on the CPU; on a GPU 2 at --budget commit, 10 at release)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)
    p.add_argument("--budget", choices=("commit", "release"), default="commit", help=BUDGET_HELP)
    p.add_argument("--shrink-s", type=_positive(float, "seconds, e.g. --shrink-s 60 (0: do not shrink)", zero=True), default=SHRINK_S,
                   metavar="S", help=f"seconds to shrink the failures after the rungs: the smallest point that fails "
                   f"the same way, per rung (default {SHRINK_S:g}; 0: none)")
    from ..history.commands import add_climb_options
    add_climb_options(p)


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kladder", description="Climb the validation ladder for GPU kernels.")
    sub = top.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("climb", help="climb specs: PATH.py[::NAME], module[::NAME], or a folder (every kl.Spec found)")
    c.add_argument("refs", nargs="+", metavar="PATH[::NAME]", help="a spec file (each spec in it, or ::NAME), a module, a "
                   "package or a folder (each spec of each .py file under it that mentions kladder); several climb one "
                   "after another on this machine's workers, one line each, then the totals")
    c.add_argument("-v", "--verbose", action="store_true", help="under each failure's budget line, how the budget was set")
    _climb_options(c)
    from ..history.commands import add_store_options
    add_store_options(c)
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
    r.add_argument("--pdb", action="store_true", help="run the point once in this process and stop in pdb at the "
                   "kernel's exception (post-mortem), or right after a call whose judgement failed, with `inputs`, "
                   "`outputs`, `expected`, `mask`, `finding` and `kernel` in scope (docs/report.md: From a failure to the fix)")
    r.add_argument("--save", metavar="DIR", help="run the point once in this process and write its inputs, outputs, "
                   "the reference's outputs and the mismatch masks to DIR as safetensors, with a README.md of each")
    pts = sub.add_parser("points", help="list the points a climb would run, without running anything")
    pts.add_argument("ref", metavar="PATH[::NAME]")
    pts.add_argument("--rungs", help=RUNGS_HELP)
    pts.add_argument("--device", default="auto", help=DEVICE_HELP + " (the budget the points are sized for)")
    pts.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)
    pts.add_argument("--budget", choices=("commit", "release"), default="commit", help=BUDGET_HELP)
    pts.add_argument("--json", metavar="FILE", help="write the points as JSON to FILE")
    pts.add_argument("--shard", metavar="I/N", help="only the points `kladder climb --shard I/N` deals to shard I")
    pts.add_argument("--history", metavar="PATH", help="with --shard: the history the deal reads each point's cost from, "
                     "as the climb's (default .kladder/history.sqlite, or $KLADDER_HISTORY)")
    pts.add_argument("--no-history", action="store_true", help="with --shard: deal by the points' bytes alone")
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
    from ..history.commands import add_parsers
    add_parsers(sub)
    return top


def _explore_parser(sub) -> None:
    e = sub.add_parser("explore", help="points drawn by Hypothesis from the spec, between the ladder's edges; failures "
                       "shrunk and replayed first next time")
    e.add_argument("ref", metavar="PATH[::NAME]")
    e.add_argument("--budget-s", type=_positive(float, "seconds, e.g. 60"), default=60.0, metavar="S",
                   help="seconds for the whole run, search and shrinking (default 60; kept within a tenth): cheap "
                   "points first, and a failure found is shrunk with what is left (at least a tenth of S)")
    e.add_argument("--shrink-s", type=_positive(float, "seconds, e.g. 60"), default=None, metavar="S",
                   help="at most this many of the budget's seconds to shrink a failure (default: what is left)")
    e.add_argument("--rungs", default="1-2", help="what to vary: 1 sizes, dtypes and configs; 2 also value kinds; 3 also "
                   "layouts (default 1-2)")
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
    if argv is None:                        # the program (not a caller's main([...])): signals end it cleanly from here
        install_early()
    args = build_parser().parse_args(argv)
    if argv is None and not (args.cmd == "climb" or (args.cmd == "zoo" and args.zoo_cmd == "climb" and args.case)):
        python_defaults()                   # one climb takes the signals over itself (cmd_climb); others as they were
    try:
        if args.cmd == "climb":
            return cmd_climb_paths(args)
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
            from ..history import commands
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
    from ..gen.load import load_spec
    try:
        return load_spec(ref)
    except UsageError as e:
        raise UsageProblem(str(e)) from None


def _case_ref(case: str, fixed: bool) -> str:
    from .cases import case_modules, case_ref
    names = case_modules()
    if case not in names:
        raise UsageProblem(f"no zoo case {case!r}; `kladder zoo list` shows them: {', '.join(names)}.")
    return case_ref(case, fixed)


def _color(choice: str) -> bool:
    return choice == "always" or (choice == "auto" and sys.stdout.isatty())


def cmd_climb_paths(args) -> int:
    """`kladder climb PATH...`: one spec as it always was; several (several paths, a folder, a
    package, a file holding several specs) through many.py."""
    from ..gen.load import ManySpecs, is_many, refs_in
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
    from .many import climb_many
    return climb_many(refs, args)


def cmd_climb(ref: str, args) -> int:
    """A climb, and its report whatever happens: every outcome below ends with the --json
    file written whole (atomically) and the text printed, marked interrupted (Ctrl-C at any
    moment), or marked with start_error (a usage problem, or a device others held), exit 2."""
    from ..core.interrupts import Interrupts
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
        from ..report.words import device_start_error
        report.start_error = device_start_error(e.facts)
    except _many_specs():                   # the file holds several specs: climbed as many (cmd_climb_paths)
        started["recorder"].close()
        raise
    except Exception as e:  # kladder's own bug mid-climb: the points so far still get their report
        if report is None:
            raise
        import traceback
        from ..core.outcome import error_facts
        report.kladder_error = {**error_facts(e), "trace": "".join(traceback.format_exception(e)[-8:])}
    finally:
        for pool in started["pools"]:
            pool.close()
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
    from ..history.record import Recorder
    r = Recorder.from_args(args)
    r.report = report
    return r


def _new_report(ref: str, args):
    from ..gen.load import split_ref
    from ..core.results import ClimbReport
    target, name = split_ref(ref)
    guess = name or os.path.splitext(os.path.basename(target))[0] or ref
    device = args.device if args.device in ("cpu", "cuda") else "auto"
    return ClimbReport(guess, ref, device, started=datetime.datetime.now().isoformat(timespec="seconds"),
                       kladder_version=__version__)


def _climb_started(ref: str, args, report, started: dict) -> None:
    from ..climbing.ladder import climb
    _checked_early(ref, args)
    device = _climb_device(args)
    report.device = device
    opts = climb_options(args, ref, device, keep=started["pools"])
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
    from ..gen.load import ManySpecs
    return ManySpecs


def _load_one(ref: str):
    """The spec `ref` names; a file or module holding several (no ::NAME) raises ManySpecs."""
    from ..gen.load import ManySpecs, load_spec, specs_in, split_ref
    if split_ref(ref)[1] is not None:
        return load_spec(ref)
    found = specs_in(ref)
    if len(found) > 1:
        raise ManySpecs([r for r, _ in found])
    return found[0][1]


def _history_options(args, opts, spec, ref: str, started: dict | None = None) -> None:
    """The options the history gives a climb: the outcome store, and --lf's failures first."""
    from ..history.commands import last_failures, outcome_store
    opts.store = outcome_store(args)
    if started is not None:
        started["store"] = opts.store
    if getattr(args, "lf", False):
        opts.first = frozenset(last_failures(args, spec.name, ref)[1])


def _device_word(device: str) -> None:
    """A --device that is none of auto, cpu, cuda: its usage error at once (resolve_device
    says it before it imports torch to look for CUDA)."""
    if device not in ("auto", "cpu", "cuda"):
        device_of(device)


def _checked_ref(ref: str) -> None:
    from ..gen.load import check_ref
    try:
        check_ref(ref)
    except UsageError as e:
        raise UsageProblem(str(e)) from None


def _checked_rungs_and_shard(args) -> None:
    """--rungs and --shard read (climb_options and cmd_points read them again, as cheaply)."""
    from ..climbing.ladder import parse_rungs
    from ..climbing.shard import ShardError, parse_shard
    try:
        parse_rungs(args.rungs)
    except UsageError as e:
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
    from ..run.ray_lanes import cluster_device
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
    from ..climbing.ladder import BUILT, end_climb
    from ..report.terminal import render_text
    if problem is not None:
        report.start_error = {"kind": "usage", "message": str(problem)}
    if not report.fingerprint:               # no worker started: the environment as this process sees it
        from ..core.fingerprint import fingerprint, source_file
        report.fingerprint = fingerprint(source_file(report.ref), None)
    failed: dict[str, str] = {}
    seen = None
    while seen != guard.seen:
        seen = guard.seen
        end_climb(report, rungs or BUILT, seen)
        if report.golden is None:            # the climb's on_end made it, unless no climb ran
            _golden_check(report, args)      # in the report (--json, --html) as typed data
        if args.json:
            _write_json(args.json, report, failed)
    guard.ignore()                           # written: from here on no signal ends the process mid-way
    if recorder is not None:
        recorder.end(report)
    if args.html:
        _write_html(args.html, report, failed)
    if report.kladder_error:
        x = report.kladder_error
        print(f"{x['trace']}kladder: kladder's own error ended the climb (not the kernel's): {x['error']}: {x['text']}; "
              "the report holds the points run before it", file=sys.stderr)
    if report.start_error:
        print(f"kladder: error: {report.start_error['message']}", file=sys.stderr)
    else:
        _say(lambda: sys.stdout.write(render_text(report, color=_color(args.color), verbose=getattr(args, "verbose", False))))
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
    from ..report.html import report_html
    from ..report.jsonout import report_dict, strict, write_atomic
    try:
        write_atomic(path, report_html(strict(report_dict(report))))
    except OSError as e:
        failed["--html"] = (f"kladder: error: --html {path!r}: could not write the report ({e.strerror or e}); the "
                            "verdict above stands; write it again with `kladder report REPORT.json --html FILE` from "
                            "--json, or climb again with a file in a folder you can write to")


def _golden_check(report, args) -> None:
    from ..history.commands import golden_check
    golden_check(report, args)


def _write_json(path: str, report, failed: dict | None = None) -> bool:
    """--json written whole; a write that fails is kept in `failed` (said after the verdict), or
    said at once where no verdict follows (`failed` None)."""
    from ..report.jsonout import write_report
    try:
        write_report(path, report)
    except OSError as e:
        line = (f"kladder: error: --json {path!r}: could not write the report ({e.strerror or e}); give a file in a "
                "folder you can write to")
        if failed is None:
            print(line, file=sys.stderr)
        else:
            failed["--json"] = line + " (the verdict above stands)"
        return False
    if failed is not None:
        failed.pop("--json", None)           # written again whole after a Ctrl-C: the earlier failure is gone
    return True


def cmd_merge(args) -> int:
    """The shards' reports made one, printed as a climb prints its report; the exit status is
    the merged report's (computed again from its points)."""
    from ..climbing.merge import merge
    from ..report.terminal import render_text
    writable("--json", args.json)
    try:
        report, warnings = merge(args.reports)
    except UsageError as e:
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
    if args.save:
        _checked_dir("--save", args.save)
    if args.pdb or args.save:
        return _debug_repro(args, point)
    return _repro(args, point)


def _cpu_first(device: str) -> None:
    """On the CPU, this process as a worker's: Triton interpreted, no CUDA device (run/isolation.worker_env),
    set before torch and the spec are imported."""
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def _repro_spec(args, point, here: bool = False):
    """The device, the spec and the point checked against it (and shifted, sanitized as asked).
    This process set up as a worker is (torch's settings) where it runs the point itself (`here`:
    --pdb, --save) or forks the CPU's workers from itself."""
    _cpu_first(args.device)
    device = device_of(args.device)
    _cpu_first(device)
    spec = _load(args.ref, device)
    if point.spec != spec.name:
        raise UsageProblem(f"POINT belongs to spec {point.spec!r}, not {spec.name!r}; check PATH::NAME.")
    from ..climbing.pointcheck import PointError, check_point
    try:
        check_point(spec, point)
    except PointError as e:
        raise UsageProblem(str(e)) from None
    if device == "cpu" or here:              # this process runs the point (--pdb, --save) or forks its workers
        from ..run.worker import setup_torch
        setup_torch(device)
    if args.sanitize:
        from ..gen.gaps.repetition import sanitized
        point = sanitized(point, args.sanitize)
    return device, spec, point.shifted(args.seed)


def _repro(args, point) -> int:
    """The point through the climb's Runner (replayed, re-run alone, judged as the climb judged it).
    On the CPU its workers are forks of this process, which imported torch and the spec once
    (run/forked.py): a small point's repro costs little more than torch's import."""
    from ..climbing.ladder import Runner
    from ..report.terminal import render_outcome
    device, spec, point = _repro_spec(args, point)
    pool = None
    if device == "cpu":
        from ..run.forked import ForkPool
        pool = ForkPool(args.ref, spec, device, {"device_name": "cpu"})
    runner = Runner(args.ref, spec, device, args.timeout, pool=pool)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        outcome = runner.run(point)          # as the climb ran it: replayed, and alone when it fails
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    finally:
        fp = runner.fingerprint
        runner.close()
    _record_repro(args, spec, device, started, outcome, fp)
    sys.stdout.write(render_outcome(outcome, fingerprint=fp, verbose=args.verbose))
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def _debug_repro(args, point) -> int:
    """--pdb / --save: the point run once in this process (no worker, no replay, no timeout), a
    debugger at its failure and its tensors written as asked (run/debug.py)."""
    import bdb

    from ..climbing.ladder import repro_command
    from ..report.terminal import render_outcome
    from .debug import debug_run
    device, spec, point = _repro_spec(args, point, here=True)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    try:
        outcome, fp = debug_run(spec, point, device, args.ref, pdb=args.pdb, save=args.save)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    except bdb.BdbQuit:
        print("kladder: quit in the debugger: the point's run ended there, no verdict", file=sys.stderr)
        return EXIT_FAILED
    outcome.repro = repro_command(args.ref, device, point)
    _record_repro(args, spec, device, started, outcome, fp)
    sys.stdout.write(render_outcome(outcome, fingerprint=fp, verbose=args.verbose))
    sys.stdout.write(f"(run once in this process for {'--pdb' if args.pdb else '--save'}: no replay, no run alone, "
                     "no timeout; without it the repro judges as the climb does)\n")
    if args.save:
        sys.stdout.write(f"saved: {args.save} (README.md says what each file holds)\n")
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def _checked_dir(option: str, path: str) -> None:
    """An output folder: made if missing, refused if it is a file or cannot be written."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageProblem(f"{option} {path!r}: a file is there; give a folder (made if missing).")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageProblem(f"{option} {path!r}: cannot make the folder ({e.strerror}); give a folder you can write.") from None
    if not os.access(path, os.W_OK):
        raise UsageProblem(f"{option} {path!r}: the folder is not writable; give a folder you can write.")


def _parsed_point(text: str):
    from ..core.point import Point
    try:
        return Point.parse(text)
    except ValueError as e:
        raise UsageProblem(f"POINT: {e}") from None


def _record_repro(args, spec, device, started, outcome, fp) -> None:
    """A repro in the history too: a climb of kind 'repro' with its one point."""
    from ..history.record import Recorder
    from ..core.results import ClimbReport, RungReport
    rec = Recorder.from_args(args)
    report = ClimbReport(spec.name, args.ref, device, started=started, kladder_version=__version__, fingerprint=fp)
    report.rungs.append(RungReport(outcome.point.rung, "", [outcome]))
    rec.begin(report, kind="repro")
    rec.point(outcome)
    rec.end(report)


def cmd_points(args) -> int:
    from ..climbing.ladder import parse_rungs, rung_points
    from ..report.points import points_json, points_text
    from ..core.sizes import budget_for
    _checked_early(args.ref, args)
    if args.json:
        writable("--json", args.json)
    device, planned = planned_device(args.device)
    spec = _load(args.ref, device)
    try:
        rungs = parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    from ..climbing.shard import ShardError, Slicer, parse_shard
    try:
        shard = parse_shard(args.shard)
    except ShardError as e:
        raise UsageProblem(str(e)) from None
    budget = budget_for(device)
    slicer = None
    if shard:
        from ..climbing.session import history_of
        from ..climbing.shard import history_costs
        slicer = Slicer(shard, spec, history_costs(history_of(args), spec.name, device))
    extra = {5: {"time_budget": args.budget}}           # the named time budget sizes rung 5's (budgets.py)
    points = [p for r in rungs
              for p in (slicer.take(r, list(rung_points(spec, r, budget, args.seed, **extra.get(r, {})))) if slicer
                        else rung_points(spec, r, budget, args.seed, **extra.get(r, {})))]
    sys.stdout.write(points_text(spec, args.ref, device, points, planned))
    if args.json:
        from ..report.jsonout import write_atomic
        write_atomic(args.json, points_json(spec, args.ref, device, points, planned))
    return EXIT_OK


def planned_device(device: str) -> tuple[str, bool]:
    """The device `kladder points` sizes the points for, and whether it is only planned: listing
    runs nothing, so --device cuda lists a GPU's points (its budgets, its modes) on a machine
    without one, and a climb can be planned and reviewed anywhere."""
    if device == "cuda":
        import torch
        if not torch.cuda.is_available():
            os.environ.setdefault("TRITON_INTERPRET", "1")      # the spec's Triton module imports; nothing runs
            return "cuda", True
    return device_of(device), False


def cmd_bisect(args) -> int:
    from .bisect import BisectProblem, bisect
    from ..report.debugging import bisect_step, bisect_text
    writable("--json", args.json)
    _device_word(args.device)
    if args.point is not None:
        from ..core.point import Point
        try:
            Point.parse(args.point)
        except ValueError as e:
            raise UsageProblem(f"--point: {e}") from None
    if args.rungs is not None:
        from ..climbing.ladder import parse_rungs
        try:
            parse_rungs(args.rungs)
        except UsageError as e:
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
    from ..report.debugging import bench_text
    writable("--json", args.json)
    _device_word(args.device)
    for ref in (args.ref, args.against):
        if ref:
            _checked_ref(ref)
    if args.point is not None:
        from ..core.point import Point
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
    import time
    started = time.monotonic()                   # the budget counts the spec's import and the workers' start
    from .explore import explore
    from ..climbing.ladder import Runner, parse_rungs
    from ..report.debugging import explore_point, explore_text
    from ..core.sizes import budget_for
    writable("--json", args.json)
    _device_word(args.device)
    _checked_ref(args.ref)
    try:
        rungs = parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if not set(rungs) <= {1, 2, 3}:
        raise UsageProblem(f"--rungs {args.rungs!r}: explore draws sizes (1), values (2) and layouts (3); give rungs "
                           "from 1-3, e.g. --rungs 1-3")
    device = device_of(args.device)
    from ..run.isolation import Pool
    # two workers start now, importing torch and the spec while this process does: the first runs
    # the points, the second is ready for the first failure's run alone (ladder.Runner), which
    # would otherwise wait a worker's start (16 s on the loaded 2-core CI box) inside the budget
    pool = Pool(args.ref, device, spares=2)
    pool.warm(2)
    try:
        spec = _load(args.ref, device)
    except BaseException:
        pool.close()
        raise
    runner = Runner(args.ref, spec, device, args.timeout, pool=pool)
    try:
        result = explore(args.ref, spec, runner, budget=budget_for(device), rungs=rungs, budget_s=args.budget_s,
                         shrink_s=args.shrink_s, seed=args.seed, started=started,
                         on_point=lambda e: print(explore_point(e), flush=True))
    except UsageError as e:
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
        from ..report.jsonout import dumps, write_atomic
        write_atomic(path, dumps(doc, indent=1))


if __name__ == "__main__":
    sys.exit(main())
