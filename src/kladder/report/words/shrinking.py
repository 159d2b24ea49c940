"""The words of a shrunk failure (shrink.py's facts; the cause is facts.ShrinkCauseFacts): the
smallest failing point, the size below it that passed, and what decides the failure: its
values, a shape edge, the inputs, or nothing a shrink can name."""
from __future__ import annotations

from ...core.facts import EdgeFacts, ShrinkCauseFacts


def dims_text(dims) -> str:
    return ", ".join(f"{k} = {v}" for k, v in dims)


def _values(c: ShrinkCauseFacts) -> str:
    return ", ".join(f"{n}: {k}" for n, k in c.values)


def _layouts(c: ShrinkCauseFacts) -> str:
    return ", ".join(f"{n}: {k}" for n, k in c.layouts)


def _needed(c: ShrinkCauseFacts) -> str:
    """The value kinds and layouts the failure needs (those whose plain form passed)."""
    parts = ([_values(c)] if c.values and c.milder == "passed" else [])
    parts += [_layouts(c)] if c.layouts and c.contiguous == "passed" else []
    return ", ".join(parts)


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


def edge_moves_text(e: EdgeFacts) -> str:
    """How an edge moved with the inputs: the runs under other seeds that did not keep it."""
    parts = []
    if e.moved_down:
        parts.append(f"a smaller {e.dim} failed under another seed {_times(e.moved_down)}")
    if e.fails_under < e.seeds:
        parts.append(f"{e.dim} = {e.fails:,} failed under {e.fails_under} of {e.seeds} seeds")
    if e.passes_under < e.seeds:
        parts.append(f"{e.dim} = {e.passes:,} passed under {e.passes_under} of {e.seeds}")
    return "; ".join(parts)


def _held(e: EdgeFacts) -> bool:
    return e.fails_under == e.passes_under == e.seeds


def _milder(c: ShrinkCauseFacts) -> str:
    parts = [f"with normal values it passes at {dims_text(c.milder_at)}"] if c.milder == "passed" else []
    parts += [f"with contiguous inputs it passes at {dims_text(c.milder_at)}"] if c.layouts and c.contiguous == "passed" else []
    return "".join(f"; {p}" for p in parts)


def cause_text(c: ShrinkCauseFacts, smallest_dims) -> str:
    """What decides the failure, in one sentence."""
    at = dims_text(smallest_dims)
    moving = "; ".join(m for m in (edge_moves_text(e) for e in c.edges if not _held(e)) if m)
    moves = f"; where it starts moves with the inputs ({moving})" if moving else ""
    if c.kind == "values":
        where = f"at every shape tried ({c.shapes}), down to {at}" if c.every_shape else f"down to {at}"
        return f"fails for {_values(c)} {where}{_milder(c)}{moves}: the values decide it, not a shape edge"
    if c.kind == "layout":
        where = f"at every shape tried ({c.shapes}), down to {at}" if c.every_shape else f"down to {at}"
        return f"fails for {_layouts(c)} {where}{_milder(c)}{moves}: the layout decides it, not a shape edge"
    if c.kind == "shape":
        e = next(e for e in c.edges if _held(e))
        needed = _needed(c)
        return (f"a shape edge{f' with {needed}' if needed else ''}: {e.dim} = {e.fails:,} fails and {e.dim} = "
                f"{e.passes:,} passes, under {e.seeds} seeds each{_milder(c)}")
    if c.kind == "inputs":
        return f"the values decide it, not a shape edge: where it starts moves with the inputs ({moving})"
    if c.kind == "floor":
        if c.floors:
            return (f"fails at the floor of every dim ({at}) with normal values: no value kind is needed, and no smaller "
                    "shape can show an edge")
        return f"fails down to {at} with normal values, and no edge was found"
    return "what decides it is not settled: the shrink budget ran out first"


def _passes_text(s: dict) -> str:
    """Each shrunk dim's size one below the smallest failing one, and what it gave."""
    return "; ".join(f"{d} = {p['size']}: {p['status']}" for d, p in s["passes_at"].items())


def _cause_line(s: dict) -> list[str]:
    c = s.get("cause")
    if not c:
        return []
    return [f"  cause: {cause_text(ShrinkCauseFacts.from_dict(c), s['smallest']['dims'])}"]


def shrunk_lines(s: dict, repro: bool = True) -> list[str]:
    """A climb's shrunk failure (shrink.py's facts), as the terminal and the HTML say it; without
    `repro`, the smallest point's repro line is left out (the HTML shows it in a box of its own)."""
    head = f"rung {s['rung']}, from {s['failed_id']}"
    if s.get("cannot_shrink"):
        return [f"{head}: cannot shrink: {s['cannot_shrink']}"]
    if s.get("check") is None:
        return [f"{head}: not shrunk (its replay did not fail)"]
    if not s.get("smallest"):
        return [f"{head}: not shrunk (the shrink budget was spent before it began)"]
    if s["smallest_id"] == s["failed_id"]:
        found = "no smaller point fails the same way" if s["complete"] else "no smaller failing point found before the budget ran out"
        return [f"{head}: {found} ({s['runs']} runs)", *_cause_line(s)]
    passes = _passes_text(s)
    done = "" if s["complete"] else " (the shrink budget ran out first: it may shrink further)"
    return [f"{head}: fails down to {dims_text(s['smallest']['dims'])}, the same check ({s['check']}), after "
            f"{s['runs']} runs{done}" + (f"; one below: {passes}" if passes else ""),
            *_cause_line(s), *([f"  repro: {s['repro']}"] if repro else [])]


def explore_shrunk_lines(s: dict, hypothesis_dims) -> list[str]:
    """`kladder explore`'s shrunk failure: what Hypothesis shrank it to (None: it shrank nothing,
    the failure was a replayed or swept point), then the plain search."""
    if s.get("cannot_shrink"):
        return [f"  cannot shrink: {s['cannot_shrink']}"]
    if not s.get("smallest"):
        return []
    passes = _passes_text(s)
    done = "" if s["complete"] else " (the shrink budget ran out first)"
    return [*([f"  Hypothesis shrank it to {dims_text(hypothesis_dims)}"] if hypothesis_dims is not None else []),
            f"  smallest failing point: {dims_text(s['smallest']['dims'])}, the same check ({s['check']}), after "
            f"{s['runs']} runs of a plain search{done}" + (f"; one below: {passes}" if passes else ""),
            *[line.replace("  cause:", "  what decides it:") for line in _cause_line(s)]]
