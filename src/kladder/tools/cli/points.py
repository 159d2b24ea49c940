"""`kladder points`: the points a climb would run, listed without running anything."""
from __future__ import annotations

import os
import sys

from ...core.errors import UsageError, UsageProblem
from ...climbing.session import device_of, writable
from .common import EXIT_OK, checked_early, load


def cmd_points(args) -> int:
    from ...climbing.ladder import rung_points
    from ...climbing.session import parse_rungs
    from ...report.points import points_json, points_text
    from ...core.sizes import budget_for
    checked_early(args.ref, args)
    if args.json:
        writable("--json", args.json)
    device, planned = planned_device(args.device)
    spec = load(args.ref, device)
    try:
        rungs = parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    from ...climbing.shard import ShardError, Slicer, parse_shard
    try:
        shard = parse_shard(args.shard)
    except ShardError as e:
        raise UsageProblem(str(e)) from None
    budget = budget_for(device)
    slicer = None
    if shard:
        from ...climbing.session import history_of
        from ...climbing.shard import history_costs
        slicer = Slicer(shard, spec, history_costs(history_of(args), spec.name, device))
    extra = {5: {"time_budget": args.budget}}           # the named time budget sizes rung 5's (budgets.py)
    points = [p for r in rungs
              for p in (slicer.take(r, list(rung_points(spec, r, budget, args.seed, **extra.get(r, {})))) if slicer
                        else rung_points(spec, r, budget, args.seed, **extra.get(r, {})))]
    sys.stdout.write(points_text(spec, args.ref, device, points, planned))
    if args.json:
        from ...report.jsonout import write_atomic
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
