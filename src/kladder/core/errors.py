"""The usage errors, one family: what a user gave is wrong (a spec, a path, an option, a point,
a request), said in one line naming the field, what was given and the fix; the CLI exits 2 on
any of them (`except UsageError`). Each keeps the builtin base it always had (a ValueError; the
worker's start a RuntimeError too), so that no `except` elsewhere changes what it catches.

SpecError, with its problems, lives in problems.py; it is a UsageError too."""
from __future__ import annotations


class UsageError(ValueError):
    """A bad request (rung, device, path, option): exit status 2."""


class UsageProblem(UsageError):
    """A bad option or spec, as the command line says it: one line on stderr, exit status 2."""


class LoadError(UsageError):
    """A spec reference that does not load (no such file, module or name; its import raised)."""


class WorkerError(UsageError, RuntimeError):
    """The worker could not start (the spec failed to import, say): a usage problem."""


class PointError(UsageError):
    """A point that does not fit its spec: a usage error (exit 2)."""


class ShardError(UsageError):
    """A bad --shard value: a usage error (exit 2)."""


class MergeError(UsageError):
    """Reports that are not the shards of one climb: exit status 2."""


class BenchProblem(UsageError):
    """A bad request (specs whose args differ, a FLOPs expression that names no dim): exit 2."""


class BisectProblem(UsageError):
    """A bad request (not a git repository, an unknown commit, GOOD not before BAD): exit 2."""
