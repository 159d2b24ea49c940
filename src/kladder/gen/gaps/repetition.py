"""Rung 5, repetition: a test that calls a kernel once samples a probability.
Each point here is one call repeated many times (the budget, calls and seconds, lives in
the point, so `kladder repro` repeats exactly it), every output compared bit for bit with the
first call's on the same inputs; and compute-sanitizer's four tools on the smallest shape.

Where: the widest rows the budget allows, then as many rows as fit (a split reduction's race
was measured wrong in 0.74% of rows at 64 x 65536 and in none of 800K rows at 8 x 2^20: wide
rows and many programs are where timing changes), under every config; and a base shape with a
tail in every tiled dim. How: the same inputs (determinism), fresh inputs from a pool (a race
whose stale read shows only when the data changed), on CUDA captured in a graph, eagerly (the
launcher's host code runs on every call), and beside a second stream of work (load).
Generators never run kernels: the points that failed earlier rungs reach this one as data, and
the smallest of them gets memcheck and initcheck on CUDA."""
from __future__ import annotations

import dataclasses
from typing import Iterator

from ...core.notation import Inputs, Launch, Mode, Needs, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.budgets import DEFAULT, CallBudget, call_budget, named
from ...core.sizes import Budget, fits, repetition, total_bytes
from ...core.spec import POINT_TIMEOUT_S, Spec
from .common import base_shapes, chosen_dtypes, config_text, dtype_rows, sizes_text

RUNG = number("repetition")
ON_FAILED = ("memcheck", "initcheck")
SANITIZE_S = 600.0           # a child under compute-sanitizer: torch's start-up alone takes tens of seconds there
# Rung 5's stream: without kl.Repetition(calls=) one stream in the pattern "A" within the named time budget's
# calls and seconds (budgets.py: 1 s at commit, 3 s at release); with it the declared count, within a
# wider budget (kl.Calls(seconds=) widens it).
STREAM_DECLARED_S = {"cpu": 30.0, "cuda": 60.0}
WHY_TOOL = {
    "memcheck": "out-of-bounds and misaligned accesses, the caching allocator off",
    "racecheck": "shared-memory hazards between the threads of a program",
    "initcheck": "reads of global memory nothing wrote",
    "synccheck": "barriers used wrongly (divergent, invalid)",
}


def points(spec: Spec, budget: Budget, repeat: int | None = None, repeat_s: float | None = None,
           failed: tuple = (), time_budget: str = DEFAULT) -> Iterator[Point]:
    """Rung 5's points; `time_budget` names how long the time-budgeted ones run (budgets.py), and
    which compute-sanitizer tools run on every climb."""
    calls = call_budget(budget.device, repeat, repeat_s, time_budget)
    room = repetition(budget)
    dtypes = chosen_dtypes(spec, dtype_rows(spec)[0])
    wide, base = widest(spec, room), tailed(spec, room)
    launch = Launch.GRAPH if budget.device == "cuda" else Launch.EAGER
    for config in [()] + [tuple(c.items()) for c in spec.configs]:
        yield _repeat(spec, wide, dtypes, config, calls, Inputs.SAME, launch, "the widest rows the budget allows")
    yield _repeat(spec, wide, dtypes, (), calls, Inputs.FRESH, launch, "the widest rows the budget allows")
    if budget.device == "cuda":
        yield _repeat(spec, wide, dtypes, (), calls, Inputs.SAME, Launch.EAGER, "the widest rows the budget allows")
    yield _repeat(spec, wide, dtypes, (), calls, Inputs.SAME, launch, "the widest rows the budget allows", load=True)
    if base != wide:
        for inputs in Inputs:
            yield _repeat(spec, base, dtypes, (), calls, inputs, launch, "a tail in every tiled dim")
    past = past_edges(spec)
    if past is not None and past != wide:
        # eagerly on every device: the launcher's host code picks the split on every call
        yield _repeat(spec, past, dtypes, (), calls, Inputs.SAME, Launch.EAGER, "past every declared chunk and width "
                      "edge, where the kernel splits its work", needs=Needs.NOTHING if fits(spec, past, budget) else Needs.CUDA)
    small = smallest(spec, room)
    yield stream(spec, small, dtypes, budget.device, repeat, repeat_s, time_budget)
    for tool in named(time_budget).tools:
        yield _sanitize(spec, small, dtypes, tool)
    if budget.device == "cuda":
        yield from _on_failed(spec, failed)


def stream(spec: Spec, sizes: dict, dtypes: tuple, device: str, repeat: int | None = None,
           repeat_s: float | None = None, time_budget: str = DEFAULT) -> Point:
    """Rung 5's stream of calls: the model's pattern (kl.Repetition(calls=)) or "A" (new inputs every call),
    each call on its own inputs against its own reference, up to its count or its time budget
    (--repeat N and --repeat-s S override them); at the smallest shape: thousands of calls."""
    declared = spec.repetition.calls is not None
    kind = "cpu" if device == "cpu" else "cuda"
    plain = named(time_budget)
    calls, pattern, fresh = (spec.repetition.calls.count, spec.repetition.calls.pattern, spec.repetition.calls.fresh) if declared else \
        (plain.stream_calls[kind], "A", True)
    seconds = spec.repetition.calls.seconds if declared and spec.repetition.calls.seconds else \
        min((STREAM_DECLARED_S if declared else plain.stream_s)[kind], (spec.timeout_s or POINT_TIMEOUT_S) / 2)
    calls, seconds = repeat or calls, repeat_s or seconds
    plan = (("calls", calls), ("seconds", seconds), ("pattern", pattern), ("fresh", fresh), ("declared", declared))
    how = (f"the model's pattern {pattern!r} (kl.Repetition(calls=))" if declared else "new inputs every call (pattern 'A'; "
           "Spec(calls=kl.Calls(...)) says how the model calls it)")
    steps = "new input sets every step" if fresh else "the same input sets every step"
    where = "in a fresh process" if declared else "in a worker as it comes"
    why = (f"a stream of calls, {how}, {steps}, each call against the reference of its own inputs: {calls:,} calls or "
           f"{seconds:g} s, {where}; the smallest shape: {sizes_text(sizes)}")
    return Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why, kind=PointKind.REPEAT, mode=Mode.CALLS, repeat=plan)


def widest(spec: Spec, budget: Budget) -> dict[str, int]:
    """The widest rows first: the last dims of the outputs and inputs doubled in turn while the
    tensors fit (a GEMM's N and K grow together), then each as large as fits, in whole tiles;
    then every other dim (the rows, the grid) as large as fits."""
    sizes = {d: max(dim.min, 1) for d, dim in spec.dims.items()}
    last = [spec.all_tensors[n].symbols[-1] for n in list(spec.outputs) + list(spec.input_args)
            if spec.all_tensors[n].symbols]
    width = list(dict.fromkeys(s for s in last if s in spec.dims))
    grew = True
    while grew:
        grew = False
        for d in width:
            v = spec.dims[d].snap(sizes[d] * 2)
            if v > sizes[d] and fits(spec, {**sizes, d: v}, budget):
                sizes[d], grew = v, True
    for d in width + [d for d in spec.dims if d not in width]:
        sizes[d] = _largest(spec, sizes, d, budget)
    return sizes


def _largest(spec: Spec, sizes: dict, d: str, budget: Budget) -> int:
    dim = spec.dims[d]
    lo, hi = sizes[d], dim.max
    while lo < hi:                                    # bisect: fits is monotonic in each dim
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(spec, {**sizes, d: mid}, budget) else (lo, mid - 1)
    tile = max(dim.tiles, default=0)
    return dim.snap(lo - lo % tile if tile and lo >= tile and lo - lo % tile >= dim.min else lo)


def past_edges(spec: Spec) -> dict[str, int] | None:
    """A shape past every declared chunk and width edge, where a kernel's code changes (a split-K
    GEMV past its chunk, a wide-row path past the model widths): each dim with chunks at twice its
    largest chunk plus one (two whole chunks and one element of a third: K = 16,385 for
    chunks=[8192]), or past its largest width, whichever is further, within its range; every other
    dim at its smallest. None when no dim declares an edge it can pass."""
    sizes, past = {d: max(dim.min, 1) for d, dim in spec.dims.items()}, False
    for d, dim in spec.dims.items():
        edges = (*dim.chunks, *dim.widths)
        if not edges:
            continue
        v = dim.snap(max([2 * c + 1 for c in dim.chunks] + [w + 1 for w in dim.widths]))
        if v > max(edges):
            sizes[d], past = v, True
    return sizes if past else None


def tailed(spec: Spec, budget: Budget) -> dict[str, int]:
    """Rungs 2-4's base shape with tails (2 tiles + 1) where it fits; else a partial last tile in
    every tiled dim, the rows (every dim but the last of each output) shrunk first to fit (the
    CPU's budget has room for 4 rows)."""
    first = base_shapes(spec, budget)[0]
    if fits(spec, first, budget) and any(v > 1 for v in first.values()):
        return first
    sizes = smallest(spec, Budget(1 << 62, 1 << 62, budget.device))
    width = {spec.all_tensors[n].symbols[-1] for n in spec.outputs if spec.all_tensors[n].symbols}
    for d, dim in spec.dims.items():
        if not fits(spec, sizes, budget) and d not in width:
            sizes[d] = max(dim.min, 1)
    return sizes if fits(spec, sizes, budget) else first


def smallest(spec: Spec, budget: Budget) -> dict[str, int]:
    """A partial last tile in every tiled dim (tile + 1) and two of everything else: masks at
    work, at the size a sanitizer (tens of times slower than the kernel) gets through."""
    def clamp(dim, v: int) -> int:
        return dim.snap(v)
    sizes = {d: clamp(dim, max(tuple(dim.tiles) + tuple(dim.chunks)) + 1 if dim.tiles or dim.chunks else 2)
             for d, dim in spec.dims.items()}
    return sizes if fits(spec, sizes, budget) else {d: max(dim.min, 1) for d, dim in spec.dims.items()}


def sanitized(point: Point, tool: str) -> Point:
    """`point`'s calls under compute-sanitizer's `tool` (kladder repro --sanitize TOOL)."""
    return dataclasses.replace(point, mode=Mode.SANITIZE, kind=PointKind.SANITIZE, repeat=(("tool", tool), ("seconds", SANITIZE_S)),
                               why=f"compute-sanitizer {tool} ({WHY_TOOL[tool]}) on this point's calls: {point.why}")


def _repeat(spec, sizes: dict, dtypes: tuple, config: tuple, calls: CallBudget, inputs: Inputs, launch: Launch,
            where: str, load: bool = False, needs: Needs = Needs.NOTHING) -> Point:
    plan = (("calls", calls.calls), ("seconds", calls.seconds), ("inputs", inputs), ("launch", launch))
    plan += (("load", True),) if load else ()
    how = {Launch.GRAPH: "captured in a CUDA graph and replayed", Launch.EAGER: "called eagerly, the launcher's host code on every call"}
    what = ("the same inputs every call: every output bit for bit the first call's" if inputs == Inputs.SAME else
            "fresh inputs each call from a pool: every output bit for bit the first call's on its inputs")
    budget = f"{calls.calls:,} calls or {calls.seconds:g} s" if calls.calls else f"{calls.seconds:g} s of calls"
    why = (f"repeat: {budget}, {how[launch]}{', beside a second stream of work' if load else ''}; {what}; {where}: "
           f"{sizes_text(sizes)}" + (f", {config_text(config)}" if config else ""))
    return Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why, config=config, kind=PointKind.REPEAT, mode=Mode.REPEAT,
                 repeat=plan, needs=needs)


def _sanitize(spec, sizes: dict, dtypes: tuple, tool: str) -> Point:
    why = f"compute-sanitizer {tool}: {WHY_TOOL[tool]}; a partial last tile in every tiled dim: {sizes_text(sizes)}"
    return Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why, kind=PointKind.SANITIZE, mode=Mode.SANITIZE,
                 repeat=(("tool", tool), ("seconds", SANITIZE_S)))


def _on_failed(spec, failed: tuple) -> Iterator[Point]:
    """memcheck and initcheck on the smallest point that failed an earlier rung: a wrong value
    may have an out-of-bounds access or an uninitialised read behind it, named with its line."""
    runnable = [p for p in failed if p.kind != "model" and p.mode not in ("sanitize", "repeat", "calls")]
    if not runnable:
        return
    p = min(runnable, key=lambda q: total_bytes(spec, q.sizes, q.dtype_of))
    for tool in ON_FAILED:
        s = sanitized(dataclasses.replace(p, rung=RUNG, seed=p.seed), tool)
        yield dataclasses.replace(s, why=f"compute-sanitizer {tool} ({WHY_TOOL[tool]}) on the smallest point that "
                                         f"failed rung {p.rung} ({p.id})")
