"""`kladder zoo list` and `kladder zoo climb`: the bundled cases, one climbed as `kladder climb` climbs, or
every one as a table."""
from __future__ import annotations

import sys

from ...core.errors import UsageProblem
from ...climbing.session import writable
from .climb import cmd_climb
from .common import EXIT_OK


def cmd_zoo(args) -> int:
    if args.zoo_cmd == "list":
        return cmd_zoo_list()
    if len(args.case) != 1:
        return cmd_zoo_climb_all(args)
    return cmd_climb(_case_ref(args.case[0], args.fixed), args)


def _case_ref(case: str, fixed: bool) -> str:
    from ..cases import case_modules, case_ref
    names = case_modules()
    if case not in names:
        raise UsageProblem(f"no zoo case {case!r}; `kladder zoo list` shows them: {', '.join(names)}.")
    return case_ref(case, fixed)


def cmd_zoo_list() -> int:
    from ..cases import case_modules
    cases = case_modules()
    width = max(map(len, cases)) + 1
    for name, mod in cases.items():
        c = mod.CASE
        print(f"{name:{width}} rung {c['rung']}  {c['gap']:16} needs {c['needs']:18} mirrors {c['mirrors']}")
    sys.stdout.flush()
    return EXIT_OK


def cmd_zoo_climb_all(args) -> int:
    from ..zoo_run import climb_all
    for case in args.case:
        _case_ref(case, False)                  # an unknown case: a usage error before any climb
    if args.fixed:
        raise UsageProblem("--fixed climbs one case's twin (`kladder zoo climb CASE --fixed`); with several cases, or "
                           "none, each buggy kernel and its twin are climbed")
    writable("--json", args.json)
    return climb_all(args)
