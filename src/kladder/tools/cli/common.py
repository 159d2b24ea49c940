"""What several commands share: the exit statuses, the checks that need neither torch nor a
worker (the device's word, the spec's file, --rungs and --shard), a spec loaded as a usage
problem, --color, --json written whole."""
from __future__ import annotations

import sys

from ...core.errors import UsageError, UsageProblem
from ...climbing.session import device_of

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
INTERRUPTED = 130           # results.INTERRUPTED


def load(ref: str, device: str):
    from ...gen.load import load_spec
    try:
        return load_spec(ref)
    except UsageError as e:
        raise UsageProblem(str(e)) from None


def color(choice: str) -> bool:
    return choice == "always" or (choice == "auto" and sys.stdout.isatty())


def device_word(device: str) -> None:
    """A --device that is none of auto, cpu, cuda: its usage error at once (resolve_device
    says it before it imports torch to look for CUDA)."""
    if device not in ("auto", "cpu", "cuda"):
        device_of(device)


def checked_ref(ref: str) -> None:
    from ...gen.load import check_ref
    try:
        check_ref(ref)
    except UsageError as e:
        raise UsageProblem(str(e)) from None


def _checked_rungs_and_shard(args) -> None:
    """--rungs and --shard read (climb_options and cmd_points read them again, as cheaply)."""
    from ...climbing.session import parse_rungs
    from ...climbing.shard import ShardError, parse_shard
    try:
        parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    try:
        parse_shard(getattr(args, "shard", None))
    except ShardError as e:
        raise UsageProblem(str(e)) from None


def checked_early(ref: str, args) -> None:
    """The checks that need neither torch nor a worker, before either: a usage error (a spec
    file that does not exist, --rungs 9, --shard 4/3, --device tpu) exits 2 in a fraction of
    a second instead of after torch's import and a worker's start (~4 CPU s)."""
    device_word(args.device)
    checked_ref(ref)
    _checked_rungs_and_shard(args)


def write_json(path: str, report, failed: dict | None = None) -> bool:
    """--json written whole; a write that fails is kept in `failed` (said after the verdict), or
    said at once where no verdict follows (`failed` None)."""
    from ...report.jsonout import write_report
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
