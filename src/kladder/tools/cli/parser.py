"""`kladder`'s argument parser: every command's options and their help, the argument types."""
from __future__ import annotations

import argparse


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
    from ...history.commands import add_climb_options
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
    from ...history.commands import add_store_options
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
    from ...history.commands import add_parsers
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
