"""`kladder ...`. Imports are lazy so that --help answers at once."""
from __future__ import annotations

import argparse
import os
import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2

RUNGS_HELP = "rungs to climb: 1, 1,2 or 1-3 (default: every rung built)"
DEVICE_HELP = "auto (cuda when torch sees one), cpu (Triton interpreter) or cuda"
SEED_HELP = ("shift every point's seed by S (other inputs at the same points; false alarms are seed-dependent). "
             "The shifted seed is in each point, so its repro reproduces it")


def _climb_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rungs", help=RUNGS_HELP)
    p.add_argument("--device", default="auto", help=DEVICE_HELP)
    p.add_argument("--json", metavar="PATH", help="write the report as JSON to PATH")
    p.add_argument("--timeout", type=float, metavar="S", help="seconds a point may run before it is a hang")
    p.add_argument("--log", metavar="PATH", help="append outcomes as JSON lines to PATH as they arrive "
                   "(default .kladder/log/NAME-TIME.jsonl)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--replay", metavar="DIR", help="add rung-2 points made of the calls captured in DIR "
                   "(with kladder.capture(...)), each in its captured layout")
    p.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)


def build_parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kladder", description="Climb the validation ladder for GPU kernels.")
    sub = top.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("climb", help="climb a spec: PATH.py[::NAME] or module::NAME")
    c.add_argument("ref", metavar="PATH[::NAME]")
    _climb_options(c)
    r = sub.add_parser("repro", help="re-run one point exactly, as a report printed it")
    r.add_argument("ref", metavar="PATH[::NAME]")
    r.add_argument("point", help="the point, as JSON or as the dict the report prints")
    r.add_argument("--device", default="auto", help=DEVICE_HELP)
    r.add_argument("--timeout", type=float, metavar="S")
    r.add_argument("--seed", type=int, default=0, metavar="S", help="shift the point's seed by S")
    pts = sub.add_parser("points", help="list the points a climb would run, without running anything")
    pts.add_argument("ref", metavar="PATH[::NAME]")
    pts.add_argument("--rungs", help=RUNGS_HELP)
    pts.add_argument("--device", default="auto", help=DEVICE_HELP + " (the budget the points are sized for)")
    pts.add_argument("--seed", type=int, default=0, metavar="S", help=SEED_HELP)
    pts.add_argument("--json", metavar="FILE", help="write the points as JSON to FILE")
    z = sub.add_parser("zoo", help="the bundled buggy kernels and their fixed twins")
    zsub = z.add_subparsers(dest="zoo_cmd", required=True)
    zsub.add_parser("list", help="list the cases")
    zc = zsub.add_parser("climb", help="climb one case (or every case), the buggy kernel by default")
    zc.add_argument("case", nargs="?")
    zc.add_argument("--fixed", action="store_true", help="climb the fixed twin instead")
    zc.add_argument("-v", "--verbose", action="store_true", help="with every case: print each ladder too")
    _climb_options(zc)
    return top


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "climb":
            return cmd_climb(args.ref, args)
        if args.cmd == "repro":
            return cmd_repro(args)
        if args.cmd == "points":
            return cmd_points(args)
        if args.zoo_cmd == "list":
            return cmd_zoo_list()
        if args.case is None:
            return cmd_zoo_climb_all(args)
        return cmd_climb(_case_ref(args.case, args.fixed), args)
    except UsageProblem as e:
        print(f"kladder: error: {e}", file=sys.stderr)
        return EXIT_USAGE


class UsageProblem(Exception):
    pass


def _usage_errors():
    from .ladder import UsageError
    from .load import LoadError
    from .run.isolation import WorkerError
    from .spec import SpecError
    return (UsageError, LoadError, SpecError, WorkerError)


def _load(ref: str, device: str):
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from .ladder import resolve_device
    from .load import load_spec
    try:
        dev = resolve_device(device)
        if dev == "cpu":
            os.environ.setdefault("TRITON_INTERPRET", "1")
        return load_spec(ref), dev
    except _usage_errors() as e:
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
    from .ladder import Options, climb, default_log_path, parse_rungs
    from .report.jsonout import render_json
    from .report.terminal import render_text
    spec, device = _load(ref, args.device)
    try:
        if args.replay and not os.path.exists(os.path.join(args.replay, "manifest.json")):
            raise UsageProblem(f"--replay {args.replay!r}: no manifest.json there; record calls first with "
                               "`with kladder.capture('pkg.mod:fn', to=DIR): run()`")
        opts = Options(rungs=parse_rungs(args.rungs), device=device, timeout_s=args.timeout,
                       log_path=args.log or default_log_path(spec.name), replay=args.replay, seed=args.seed)
        report = climb(ref, spec, opts)
    except _usage_errors() as e:
        raise UsageProblem(str(e)) from None
    sys.stdout.write(render_text(report, color=_color(args.color)))
    if args.json:
        with open(args.json, "w") as f:
            f.write(render_json(report))
    return 130 if report.interrupted else report.exit_code


def cmd_repro(args) -> int:
    from .ladder import Runner
    from .point import Point
    from .report.terminal import render_outcome
    spec, device = _load(args.ref, args.device)
    try:
        point = Point.parse(args.point)
    except ValueError as e:
        raise UsageProblem(f"POINT: {e}") from None
    if point.spec != spec.name:
        raise UsageProblem(f"POINT belongs to spec {point.spec!r}, not {spec.name!r}; check PATH::NAME.")
    point = point.shifted(args.seed)
    runner = Runner(args.ref, spec, device, args.timeout)
    try:
        outcome = runner.run(point)          # as the climb ran it: replayed, and alone when it fails
    except _usage_errors() as e:
        raise UsageProblem(str(e)) from None
    finally:
        runner.close()
    sys.stdout.write(render_outcome(outcome))
    return EXIT_OK if outcome.status == "passed" else EXIT_FAILED


def cmd_points(args) -> int:
    from .ladder import parse_rungs, rung_points
    from .report.points import points_json, points_text
    from .sizes import budget_for
    spec, device = _load(args.ref, args.device)
    try:
        rungs = parse_rungs(args.rungs)
    except _usage_errors() as e:
        raise UsageProblem(str(e)) from None
    budget = budget_for(device)
    points = [p for r in rungs for p in rung_points(spec, r, budget, args.seed)]
    sys.stdout.write(points_text(spec, args.ref, device, points))
    if args.json:
        with open(args.json, "w") as f:
            f.write(points_json(spec, args.ref, device, points))
    return EXIT_OK


def cmd_zoo_list() -> int:
    from .cases import case_modules
    cases = case_modules()
    width = max(map(len, cases)) + 1
    for name, mod in cases.items():
        c = mod.CASE
        print(f"{name:{width}} rung {c['rung']}  {c['gap']:16} needs {c['needs']:18} mirrors {c['mirrors']}")
    return EXIT_OK


def cmd_zoo_climb_all(args) -> int:
    from .zoo_run import climb_all
    return climb_all(args)


if __name__ == "__main__":
    sys.exit(main())
