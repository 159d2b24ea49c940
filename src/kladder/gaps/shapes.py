"""Rung 1, the shape gap: points where a kernel's behaviour changes with sizes.

A kernel computes full tiles fast and patches the tail; it computes addresses in 32 bits
because 64-bit address math costs registers on every load. Both are right inside a range
and fail silently outside it. These generators place points at the edges of those ranges:
tile tails, model widths the tile does not divide, every accepted config, production shapes
with no tuned entry, and tensors whose bytes straddle 2^31 and 2^32. They never run a kernel.
"""
from __future__ import annotations

import math
from typing import Iterator

from ..point import Point
from ..rungs import number
from ..sizes import CPU_BUDGET, ITEMSIZE, Budget, dtype_of, fits, human_bytes, shape_of
from ..spec import Spec
from .common import chosen_dtypes, dtype_factors, dtype_rows
from .pairwise import all_pairs

RUNG = number("shapes")
LAUNCHER_DEFAULT = "default"   # the config factor's value for "let the launcher choose"


# ---------------------------------------------------------------------------- per dim
def edge_values(name: str, dim) -> dict[int, str]:
    """Sizes where a dim's tiling changes, each with the reason it exists.

    yields 1; tile-1, tile, tile+1 (the only tile partial, exactly full, a second tile
    holding one element); the maximum; each model width and its neighbours.
    """
    out: dict[int, str] = {}

    def add(v: int, why: str) -> None:
        if dim.min <= v <= dim.max and v not in out:
            out[v] = why

    low = max(dim.min, 1)
    add(low, f"{name} = {low}: the smallest size" + ("; its only tile is the partial last tile" if dim.tiles else ""))
    if not dim.tiles:
        add(low + 1, f"{name} = {low + 1}: one more than the smallest (a loop over {name} runs twice)")
    for t in dim.tiles:
        add(t - 1, f"{name} = {t - 1}: one short of the tile ({t}); the only tile is partial")
        add(t, f"{name} = {t}: exactly one full tile ({t})")
        add(t + 1, f"{name} = {t + 1}: one past the tile ({t}); a second tile holds a single element")
    for w in dim.widths:
        add(w, _width_why(name, w, w, dim.tiles))
    for w in dim.widths:
        for v in (w - 1, w + 1):
            add(v, _width_why(name, v, w, dim.tiles))
    add(dim.max, f"{name} = {dim.max}: the declared maximum" + _tail_note(dim.max, dim.tiles))
    return dict(sorted(out.items()))


def _width_why(name: str, v: int, w: int, tiles: tuple[int, ...]) -> str:
    where = "a model width" if v == w else f"next to the model width {w}"
    return f"{name} = {v}: {where}" + _tail_note(v, tiles)


def _tail_note(v: int, tiles: tuple[int, ...]) -> str:
    odd = [t for t in tiles if v % t]
    if not odd:
        return f"; the tile ({tiles[0]}) divides it" if tiles else ""
    t = odd[0]
    return f" and the tile ({t}) does not divide it ({v} % {t} = {v % t})"


# ---------------------------------------------------------------------------- factors
def _config_values(spec: Spec) -> list:
    """Every accepted config, and the launcher's own choice (what production calls run)."""
    return [LAUNCHER_DEFAULT] + list(range(len(spec.configs))) if spec.configs else []


def _split(row: dict, spec: Spec) -> tuple[dict, dict, tuple]:
    sizes = {d: row[d] for d in spec.dims if d in row}
    dtypes = {k.split(":", 1)[1]: v for k, v in row.items() if k.startswith("dtype:")}
    cfg = row.get("config", LAUNCHER_DEFAULT)
    config = () if cfg == LAUNCHER_DEFAULT else tuple(spec.configs[cfg].items())
    return sizes, dtypes, config


def _cheapest(spec: Spec, row: dict) -> dict[str, int]:
    return {d: row.get(d, max(spec.dims[d].min, 1)) for d in spec.dims}


def tile_edge_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Edge values of every dim, every dtype and every config, combined pairwise.

    A pair that cannot fit the budget even with every other dim at its smallest (the max of
    M beside the max of N) is left out here; the big-point generator owns that territory."""
    edges = {d: edge_values(d, spec.dims[d]) for d in spec.dims}
    factors = [(d, list(edges[d])) for d in spec.dims]
    factors += dtype_factors(spec)
    if spec.configs:
        factors.append(("config", _config_values(spec)))
    rows, _ = all_pairs(factors, lambda row: fits(spec, _cheapest(spec, row), budget))
    for row in rows:
        sizes, dtypes, config = _split(row, spec)
        why = "; ".join(edges[d][v] for d, v in sizes.items())
        if spec.configs:
            why += f"; config {_config_text(config)}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, dtypes),
                    why or "every dim at an edge", config=config, kind="edge")


def unreachable_edge_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Edge values no small point can hold within the budget (M at its maximum when the CPU
    budget is a few hundred thousand elements), at their cheapest: GPU points, so that the
    report shows them as skipped with a reason instead of silently absent."""
    for d, dim in spec.dims.items():
        for v, why in edge_values(d, dim).items():
            sizes = _cheapest(spec, {d: v})
            if not fits(spec, sizes, budget):
                yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, {}),
                            f"{why}; every other dim at its smallest", kind="edge", needs="cuda")


def _config_text(config: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in config) if config else "left to the launcher (tuned table or fallback)"


def config_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Every config the launcher accepts, at a shape with a tail in every tiled dim:
    an accepted config that no tuned entry selects is still reachable by callers."""
    sizes = {}
    for d, dim in spec.dims.items():
        t = max(dim.tiles) if dim.tiles else 1
        sizes[d] = min(dim.max, max(dim.min, 2 * t + 1 if dim.tiles else dim.min))
    if not fits(spec, sizes, budget):
        sizes = _cheapest(spec, {})
    for cfg in spec.configs:
        for dt in dtype_rows(spec):
            yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, dt),
                        f"config {_config_text(tuple(cfg.items()))}: every config the launcher accepts runs, "
                        "tuned or not", config=tuple(cfg.items()), kind="config")


def production_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Every production shape with no tuned entry: such calls take the fallback config,
    often the least-tested code that production runs."""
    tuned = [{d: s[d] for d in spec.dims} for s in spec.tuned]
    for shape in spec.production:
        sizes = {d: shape[d] for d in spec.dims}
        if sizes in tuned:
            continue
        text = ", ".join(f"{d}={v}" for d, v in sizes.items())
        for dt in dtype_rows(spec):
            need = "" if fits(spec, sizes, budget) else "cuda"
            yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, dt),
                        f"production shape {text} has no tuned entry: the launcher's fallback config runs",
                        kind="production", needs=need)


# ---------------------------------------------------------------------------- big points
CLIFFS = ((1 << 31, "2^31 bytes", "signed 32-bit byte offsets wrap"),
          (1 << 32, "2^32 bytes", "unsigned 32-bit byte offsets wrap"))


def big_points(spec: Spec) -> Iterator[Point]:
    """For every tensor, sizes whose bytes sit just below and just above 2^31 and 2^32 (and
    whose elements straddle 2^31, where int32 element indices wrap), counting the padding
    of the last tile along the growing dim. GPU points: a few GiB each."""
    seen = set()
    for name in spec.all_tensors:
        for p in _big_points_for(spec, name):
            key = (p.dims, p.dtypes)
            if key not in seen:
                seen.add(key)
                yield p


def _growing_dim(spec: Spec, name: str) -> str | None:
    syms = [s for s in spec.all_tensors[name].symbols if not s.isdigit()]
    rows = [s for s in syms if s in spec.row_dims]
    return (rows or syms or [None])[0]


def _base_sizes(spec: Spec, name: str, grow: str) -> dict[str, int]:
    """Other dims of this tensor at a model width (else the max); dims it lacks at a tile."""
    syms = set(spec.all_tensors[name].symbols)
    sizes = {}
    for d, dim in spec.dims.items():
        if d in syms:
            sizes[d] = max(dim.widths) if dim.widths else dim.max
        else:
            sizes[d] = min(dim.max, max(dim.min, dim.tiles[0] if dim.tiles else 1))
    sizes[grow] = 1
    return sizes


def _big_points_for(spec: Spec, name: str) -> Iterator[Point]:
    grow = _growing_dim(spec, name)
    if grow is None:
        return
    dim = spec.dims[grow]
    dtypes = {n: spec.dtype_choices(n)[0] for n in spec.all_tensors if len(spec.dtype_choices(n)) > 1}
    dtype = dtype_of(spec, name, dtypes)
    itemsize = ITEMSIZE[dtype]
    sizes = _base_sizes(spec, name, grow)
    row_bytes = math.prod(shape_of(spec, name, sizes)) * itemsize
    tile = max(dim.tiles) if dim.tiles else 1
    cliffs = list(CLIFFS)
    if itemsize not in (1, 2):
        cliffs.append(((1 << 31) * itemsize, "2^31 elements", "signed 32-bit element indices wrap"))
    for cliff, label, mech in cliffs:
        last_fit = (cliff - 1) // row_bytes           # most rows whose bytes stay below the cliff
        candidates = [((last_fit // tile) * tile, "every tile, padded, stays below"),
                      (last_fit, "the tensor fits but its last tile, padded, crosses"),
                      (last_fit + 1, "the tensor crosses")]
        if -(-last_fit // tile) * tile * row_bytes < cliff:     # padding does not cross: one "below"
            candidates = [(last_fit, "the tensor, padded, stays below"), candidates[2]]
        for rows, what in candidates:
            if rows < max(dim.min, 1) or rows > dim.max:
                continue
            padded = -(-rows // tile) * tile * row_bytes
            pt_sizes = {**sizes, grow: rows}
            why = (f"{name} ({dtype}, {' x '.join(map(str, shape_of(spec, name, pt_sizes)))}) = "
                   f"{rows * row_bytes:,} bytes, last tile padded to {padded:,}: {what} {label} "
                   f"({mech}); {human_bytes(rows * row_bytes)}")
            yield Point(spec.name, RUNG, tuple(pt_sizes.items()), chosen_dtypes(spec, dtypes), why,
                        kind="big", needs="cuda")


def points(spec: Spec, budget: Budget = CPU_BUDGET) -> Iterator[Point]:
    """Rung 1, in order from cheap to costly: tile edges, configs, production, big."""
    seen = set()
    for gen in (tile_edge_points(spec, budget), config_points(spec, budget),
                production_points(spec, budget), unreachable_edge_points(spec, budget),
                big_points(spec)):
        for p in gen:
            key = (p.dims, p.dtypes, p.config)
            if key not in seen:
                seen.add(key)
                yield p
