"""`kladder merge`: the shards' reports made one."""
from __future__ import annotations

import sys

from ...core.errors import UsageError, UsageProblem
from ...climbing.session import writable
from .common import EXIT_USAGE, color, write_json


def cmd_merge(args) -> int:
    """The shards' reports made one, printed as a climb prints its report; the exit status is
    the merged report's (computed again from its points)."""
    from ...climbing.merge import merge
    from ...report.terminal import render_text
    writable("--json", args.json)
    try:
        report, warnings = merge(args.reports)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    for w in warnings:
        print(f"kladder: warning: {w}", file=sys.stderr)
    if args.json and not write_json(args.json, report):
        return EXIT_USAGE
    sys.stdout.write(render_text(report, color=color(args.color)))
    return report.exit_code
