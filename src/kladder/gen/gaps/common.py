"""What the generators share: the dtypes a point chooses, and the base shapes that rungs 2-4
move values, layouts and modes around. Never runs a kernel."""
from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator

from ...core.notation import DtypeFactor, Mode
from ...core.point import Point
from ...core.sizes import Budget, fits
from ...core.spec import Spec, launcher_defaults


def dtype_factors(spec: Spec) -> list[tuple[str, list[str]]]:
    """("dtype:NAME" (a DtypeFactor's text), choices) for every tensor with more than one dtype."""
    return [(DtypeFactor(n).format(), list(spec.dtype_choices(n))) for n in spec.all_tensors
            if len(spec.dtype_choices(n)) > 1]


def chosen_dtypes(spec: Spec, dtypes: dict[str, str]) -> tuple:
    """The dtype of every tensor that has a choice (the rest follow from the spec)."""
    return tuple((n, dtypes.get(n, spec.dtype_choices(n)[0])) for n in spec.all_tensors
                 if len(spec.dtype_choices(n)) > 1)


def dtype_rows(spec: Spec) -> list[dict]:
    """One row per dtype of each multi-dtype tensor (each choice once, not the product)."""
    factors = dtype_factors(spec)
    if not factors:
        return [{}]
    width = max(len(v) for _, v in factors)
    return [{DtypeFactor.parse(n).tensor: v[i % len(v)] for n, v in factors} for i in range(width)]


def base_shapes(spec: Spec, budget: Budget) -> list[dict[str, int]]:
    """A tail in every tiled dim (2 tiles + 1), and every tile full (2 tiles), within budget.
    A dim's chunks count as tiles (2 chunks + 1: past the short path). When that does not fit,
    untiled dims (batch, heads) shrink to their minimum first, then tiled dims to one tile."""
    def unit(dim) -> int | None:
        units = tuple(dim.tiles) + tuple(dim.chunks)
        return max(units) if units else None

    def clamp(dim, v: int) -> int:
        return dim.snap(v)

    shapes = []
    for extra in (1, 0):
        sizes = {d: clamp(dim, 2 * (unit(dim) or 8) + extra) for d, dim in spec.dims.items()}
        if not fits(spec, sizes, budget):
            sizes.update({d: clamp(dim, 1) for d, dim in spec.dims.items() if unit(dim) is None})
        if not fits(spec, sizes, budget):
            sizes.update({d: clamp(dim, unit(dim) + extra) for d, dim in spec.dims.items() if unit(dim) is not None})
        if fits(spec, sizes, budget) and sizes not in shapes:
            shapes.append(sizes)
    if not shapes:
        shapes.append({d: max(dim.min, 1) for d, dim in spec.dims.items()})
    return shapes


def sizes_text(sizes: dict) -> str:
    return ", ".join(f"{d}={v}" for d, v in sizes.items())


OWN_CONFIG = "the launcher's own config"


def config_text(config: tuple, empty: str = OWN_CONFIG) -> str:
    """A point's launcher config as its why says it (`config BLOCK=64, num_warps=4`), or
    `empty` where the point leaves the config to the launcher."""
    return "config " + ", ".join(f"{k}={v}" for k, v in config) if config else empty


def resolved(spec: Spec, config: tuple, defaults: dict) -> tuple:
    """The call a config makes: its keys over the launcher's defaults for every config key (a
    key with no default the config leaves out stays out: the call is another)."""
    keys = {k for c in spec.configs for k in c}
    call = {**{k: defaults[k] for k in keys if k in defaults}, **dict(config)}
    return tuple(sorted(((k, repr(v)) for k, v in call.items())))


def each_config(spec: Spec, pts: Iterable[Point], kind: str) -> Iterator[Point]:
    """Rungs 2-3 run every declared config at least once: for each config that is another call
    than the launcher's own, a copy of the first eager point of `kind` of each input (its first
    value kind, its first layout) with that config. The launcher's own call keeps every point."""
    defaults = launcher_defaults(spec.kernel)
    own = resolved(spec, (), defaults)
    firsts: dict = {}
    for p in pts:
        moved = p.values or p.layouts
        if p.kind == kind and p.mode == Mode.EAGER and not p.config and moved and moved[0][0] not in firsts:
            firsts[moved[0][0]] = p
    seen = {own}
    for c in spec.configs:
        config = tuple(c.items())
        call = resolved(spec, config, defaults)
        if call in seen:
            continue
        seen.add(call)
        for p in firsts.values():
            yield dataclasses.replace(p, config=config, why=f"{p.why}; {config_text(config)}")
