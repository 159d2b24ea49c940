"""`kladder ...`. Imports are lazy so that --help answers at once.

A bad option or spec is one line on stderr that names it, what was given and the fix, with
exit status 2; a climb exits 0 (every point that ran passed), 1 (a point failed or could not
be judged), 2 (it could not start: a usage problem, a device others held), 5 (no point ran) or
130 (interrupted: SIGINT or SIGTERM, interrupts.py), and its JSON says the same. An output that
could not be written (a full disk) is said on stderr after the verdict, and the exit status
stays the verdict's: the verdict is the kernel's, the disk is not.

One module a command family (climb.py, merge.py, repro.py, points.py, zoo.py, debugging.py for
bisect, bench and explore; history's commands in history/commands.py), the parser in parser.py;
main() dispatches through COMMANDS."""
from __future__ import annotations

import os
import sys

from ...core.interrupts import install_early, python_defaults


def _as_program() -> bool:
    """This package imported as the program: the console script `kladder`, or `python -m
    kladder.tools.cli` (while runpy imports the package, argv[0] is '-m')."""
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0) == "kladder" or (argv0 == "-m" and __name__ in getattr(sys, "orig_argv", ()))


if _as_program():
    install_early()         # first of all, before the imports below: a Ctrl-C or SIGTERM meanwhile ends it at once

from ...core.errors import UsageProblem  # noqa: E402 - after the handlers, on purpose
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, INTERRUPTED  # noqa: E402,F401 - re-exported
from .parser import build_parser  # noqa: E402
from . import climb, debugging, merge, points, repro, zoo  # noqa: E402


def _history_command(args) -> int:
    from ...history import commands
    return getattr(commands, f"cmd_{args.cmd}")(args)


COMMANDS = {
    "climb": climb.cmd_climb_paths,
    "repro": repro.cmd_repro,
    "merge": merge.cmd_merge,
    "points": points.cmd_points,
    "bisect": debugging.cmd_bisect,
    "bench": debugging.cmd_bench,
    "explore": debugging.cmd_explore,
    "zoo": zoo.cmd_zoo,
    "history": _history_command,
    "diff": _history_command,
    "golden": _history_command,
    "report": _history_command,
}


def main(argv: list[str] | None = None) -> int:
    if argv is None:                        # the program (not a caller's main([...])): signals end it cleanly from here
        install_early()
    args = build_parser().parse_args(argv)
    if argv is None and not (args.cmd == "climb" or (args.cmd == "zoo" and args.zoo_cmd == "climb" and args.case)):
        python_defaults()                   # one climb takes the signals over itself (cmd_climb); others as they were
    try:
        return COMMANDS[args.cmd](args)
    except UsageProblem as e:
        print(f"kladder: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # `kladder zoo list | head`: the reader left; say nothing more, as a Unix tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
