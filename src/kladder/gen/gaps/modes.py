"""Rung 4, execution modes: the same kernel called the ways production calls it.

Each mode runs at a few base points chosen from rung 1's territory (a shape with a tail in
every tiled dim, and one where every tile is full), under every config, so that a mode's
failure is the mode's and not a shape's. A-B-A pairs differ in shape, or in config at one
shape. Modes that need CUDA are generated everywhere and skipped with the reason on the CPU.
"""
from __future__ import annotations

from typing import Iterator

from ...core.notation import Mode, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import Budget, moderate
from ...core.spec import Spec
from .common import base_shapes, chosen_dtypes, config_text, dtype_rows, sizes_text

RUNG = number("modes")
WHY = {
    "reused": "the output buffers of the call before, holding its values, as an engine reuses them",
    "graph": "captured in a CUDA graph and replayed 3 times on new inputs, outputs poisoned before each replay",
    "stream": "called on a side stream, its inputs produced on that stream just before",
    "compiled": "under torch.compile (a torch op or custom op), called twice: compiling, then the cached graph",
}


def _configs(spec: Spec) -> list[tuple]:
    return [()] + [tuple(c.items()) for c in spec.configs]


def _text(sizes: dict, config: tuple) -> str:
    return f"{sizes_text(sizes)}, {config_text(config)}"


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    budget = moderate(budget)
    shapes = base_shapes(spec, budget)
    dtypes = chosen_dtypes(spec, dtype_rows(spec)[0])
    for mode in ("reused", "graph", "stream"):
        for sizes in shapes:
            for config in _configs(spec):
                yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, f"{mode}: {WHY[mode]}; {_text(sizes, config)}",
                            config=config, kind=PointKind.MODE, mode=mode)
    for sizes in shapes[:1]:
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, f"compiled: {WHY['compiled']}; {_text(sizes, ())}",
                    kind=PointKind.MODE, mode=Mode.COMPILED)
    yield from _aba_points(spec, shapes, dtypes)
    yield from _jitcache_points(spec, shapes, dtypes)


def _jitcache_points(spec: Spec, shapes: list[dict], dtypes: tuple) -> Iterator[Point]:
    """Cold cache (A then B) against warm cache (A): B is the next config, or another shape."""
    configs = _configs(spec)
    a = shapes[0]
    if len(configs) > 1:
        pairs = [(a, configs[i], a, configs[(i + 1) % len(configs)]) for i in range(len(configs))]
    else:
        pairs = [(a, configs[0], shapes[-1] if shapes[-1] != a else _small(spec), configs[0])]
    for sa, ca, sb, cb in pairs:
        why = (f"jitcache: a process on an empty cache runs A = {_text(sa, ca)}, then B = {_text(sb, cb)}; a process on "
               "the cache it left (a restart) runs A: both A right, and equal bit for bit")
        partner = (("dims", tuple(sb.items())),) + ((("config", cb),) if spec.configs else ())
        yield Point(spec.name, RUNG, tuple(sa.items()), dtypes, why, config=ca, kind=PointKind.MODE, mode=Mode.JITCACHE, partner=partner)


def _aba_points(spec: Spec, shapes: list[dict], dtypes: tuple) -> Iterator[Point]:
    """A, B, A: configs in a cycle, forwards and backwards, at one shape (each config follows
    and precedes each neighbour: a launcher cache keyed by shape alone), and each shape after
    the other under one config (state sized by the first call). Each point costs a new worker,
    so the cycles (2n points) stand in for all n(n-1) ordered pairs."""
    configs = _configs(spec)
    a_shape = shapes[0]
    n = len(configs)
    pairs = {(configs[i], configs[(i + 1) % n]) for i in range(n)} | {(configs[(i + 1) % n], configs[i]) for i in range(n)}
    for ca, cb in sorted((p for p in pairs if p[0] != p[1]), key=lambda p: (configs.index(p[0]), configs.index(p[1]))):
        yield _aba(spec, a_shape, ca, a_shape, cb, dtypes)
    for sa in shapes:
        for sb in shapes + [_small(spec)]:
            if sa != sb:
                yield _aba(spec, sa, configs[0], sb, configs[0], dtypes)


def _small(spec: Spec) -> dict[str, int]:
    return {d: max(dim.min, 1) for d, dim in spec.dims.items()}


def _aba(spec, sa, ca, sb, cb, dtypes) -> Point:
    why = f"A-B-A in one process: A = {_text(sa, ca)}; B = {_text(sb, cb)}; A again must match A bit for bit"
    partner = (("dims", tuple(sb.items())),) + ((("config", cb),) if spec.configs else ())
    return Point(spec.name, RUNG, tuple(sa.items()), dtypes, why, config=ca, kind=PointKind.MODE, mode=Mode.ABA, partner=partner)
