"""The terminal's and the HTML's grouping keys, from the facts' data (the climb's results as data:
results.py)."""
from __future__ import annotations

import dataclasses
from collections import defaultdict

from ..core.facts import BiasFacts, ContractFacts, GpuPointFacts, GuardFacts, NondeterministicFacts
from ..core.outcome import Check, Finding, Note, Outcome


# ---------------------------------------------------------------------------- grouping keys (from the facts' data)
_SHAPE_FIELDS = {Check.RAISED: ("error", "text"), Check.DEVICE_FAULT: ("error", "text"), Check.CAPTURE: ("error", "text"),
                 Check.UNCAPTURED: ("error", "text"), Check.INPUT_CHANGED: ("how",),
                 Check.CRASHED: ("signal", "exit_status"), Check.NOT_BITWISE: ("cause",), Check.INVARIANT: ("name",),
                 Check.MODEL: ("metric",), Check.INVALID_REFERENCE: ("functions", "gpu_kernels")}


def pattern_shape(f: Finding) -> tuple:
    """What a finding's pattern looks like, its numbers left out: failures with one shape
    are one bug seen at several points (the terminal groups them)."""
    p, x = f.pattern, f.facts
    if p is not None:
        cols = None
        if p.cols is not None:
            at = "last" if p.cols.last == p.cols.n - 1 else "first" if p.cols.first == 0 else "range"
            cols = (at, p.cols.tile_note[:2] if p.cols.tile_note else None)
        return (p.kind, cols, p.rows[0] if p.rows else None, p.most)
    if isinstance(x, GuardFacts):
        return (bool(x.n_after), bool(x.n_before))
    if isinstance(x, ContractFacts):
        given = x.to_dict()
        return tuple(sorted(k for k in given if k != "problems")) + tuple(p[0] for p in x.problems or [])
    return tuple(str(getattr(x, k, None)) for k in _SHAPE_FIELDS.get(f.check, ()))


def failure_key(o: Outcome) -> tuple:
    """Failures with one key are one bug seen at several points: the same status, rung and mode,
    and the headline's check, output, call and pattern shape. The terminal and the HTML group by it."""
    head = o.headline
    return (o.status, o.point.rung, o.point.mode) + (
        (head.check, head.output, head.call, pattern_shape(head)) if head else (id(o),))


def failure_groups(failures: list[Outcome]) -> list[list[Outcome]]:
    """Failures grouped by failure_key, in order of their first member."""
    groups: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in failures:
        groups[failure_key(o)].append(o)
    return list(groups.values())


def note_key(n: Note | None) -> tuple:
    """A note as data: notes with one key say the same."""
    if n is None:
        return ()
    return (n.kind, tuple(sorted((k, str(v)) for k, v in n.facts.to_dict().items())))


def note_group(n: Note) -> tuple:
    """Skips whose notes differ only in a point's size are one group."""
    if isinstance(n.facts, GpuPointFacts):
        return note_key(Note(n.kind, dataclasses.replace(n.facts, need_bytes=0)))
    return note_key(n)


def reason_group(o: Outcome) -> tuple:
    """Points that could not be judged for one reason (a replay's, else the note's) are one group."""
    return (o.status, o.replay, o.replay_status, () if o.replay is not None else note_key(o.note))


def bias_group(w: Finding) -> tuple:
    """Warnings that differ only in their numbers are shown once, with the points that showed them."""
    x = w.facts
    if isinstance(x, NondeterministicFacts):      # a rate differs point by point: one line per output
        return (str(w.check), w.output, getattr(x, "tool", ""), getattr(x, "kind", ""))
    if not isinstance(x, BiasFacts):
        return (str(w.check), tuple(sorted((k, str(v)) for k, v in x.to_dict().items())))
    return (w.output, x.lean, x.up > x.down, x.dtype)
