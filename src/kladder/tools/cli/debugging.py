"""`kladder bisect`, `kladder bench`, `kladder explore`: the debugging commands (their words in report/debugging.py)."""
from __future__ import annotations

import sys

from ...core.errors import UsageError, UsageProblem
from ...climbing.session import device_of, writable
from .common import EXIT_FAILED, EXIT_OK, checked_ref, device_word, load


def cmd_bisect(args) -> int:
    from ..bisect import BisectProblem, bisect
    from ...report.debugging import bisect_step, bisect_text
    writable("--json", args.json)
    device_word(args.device)
    if args.point is not None:
        from ...core.point import Point
        try:
            Point.parse(args.point)
        except ValueError as e:
            raise UsageProblem(f"--point: {e}") from None
    if args.rungs is not None:
        from ...climbing.session import parse_rungs
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
    _write_doc(args.json, result.to_dict())
    return {"found": EXIT_OK, "interrupted": 130}.get(result.outcome, EXIT_FAILED)


def cmd_bench(args) -> int:
    from ..bench import BenchProblem, bench
    from ...report.debugging import bench_text
    writable("--json", args.json)
    device_word(args.device)
    for ref in (args.ref, args.against):
        if ref:
            checked_ref(ref)
    if args.point is not None:
        from ...core.point import Point
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
    _write_doc(args.json, result.to_dict())
    return EXIT_OK


def cmd_explore(args) -> int:
    import time
    started = time.monotonic()                   # the budget counts the spec's import and the workers' start
    from ..explore import explore
    from ...climbing.ladder import Runner
    from ...climbing.session import parse_rungs
    from ...report.debugging import explore_point, explore_text
    from ...core.sizes import budget_for
    writable("--json", args.json)
    device_word(args.device)
    checked_ref(args.ref)
    try:
        rungs = parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if not set(rungs) <= {1, 2, 3}:
        raise UsageProblem(f"--rungs {args.rungs!r}: explore draws sizes (1), values (2) and layouts (3); give rungs "
                           "from 1-3, e.g. --rungs 1-3")
    device = device_of(args.device)
    from ...run.pool import Pool
    # two workers start now, importing torch and the spec while this process does: the first runs
    # the points, the second is ready for the first failure's run alone (ladder.Runner), which
    # would otherwise wait a worker's start (16 s on the loaded 2-core CI box) inside the budget
    pool = Pool(args.ref, device, spares=2)
    pool.warm(2)
    try:
        spec = load(args.ref, device)
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
    _write_doc(args.json, result.to_dict())
    return EXIT_FAILED if result.failure else EXIT_OK


def _write_doc(path: str | None, doc: dict) -> None:
    """A command's --json document, strict JSON, written whole or not at all (report/jsonout.write_atomic)."""
    if path:
        from ...report.jsonout import dumps, write_atomic
        write_atomic(path, dumps(doc, indent=1))
