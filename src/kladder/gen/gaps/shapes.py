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

from ...core.notation import DtypeFactor, Needs, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import CPU_BUDGET, ITEMSIZE, Budget, cheap, dtype_of, fits, human_bytes, nbytes_of, shape_of
from ...core.spec import Spec
from .common import chosen_dtypes, config_text, dtype_factors, dtype_rows
from .pairwise import all_pairs

RUNG = number("shapes")
LAUNCHER_DEFAULT = "default"   # the config factor's value for "let the launcher choose"
LAUNCHER_CHOOSES = "config left to the launcher (tuned table or fallback)"


# ---------------------------------------------------------------------------- per dim
def edge_values(name: str, dim) -> dict[int, str]:
    """Sizes where a dim's tiling changes, each with the reason it exists.

    yields 1; tile-1, tile, tile+1 (the only tile partial, exactly full, a second tile
    holding one element); 3 x tile + 1 (a first, a middle and a last, partial tile: state
    carried from tile to tile, a scan or a split reduction, is wrong from the third tile on
    in ways one and two tiles never show); the maximum; each model width and its neighbours;
    tails at the top of the range (top_tails: 4095 and 4089 for max 4096, tile 8), where a
    launcher's looped path for rows past one block runs; with `sizes`, each declared size.
    """
    out: dict[int, str] = {}

    def add(v: int, why: str) -> None:
        if dim.allows(v) and v not in out:
            out[v] = why

    low = max(dim.min, 1)
    add(low, f"{name} = {low}: the smallest size" + ("; its only tile is the partial last tile" if dim.tiles else ""))
    if not dim.tiles:
        add(low + 1, f"{name} = {low + 1}: one more than the smallest (a loop over {name} runs twice)")
    for t in dim.tiles:
        add(t - 1, f"{name} = {t - 1}: one short of the tile ({t}); the only tile is partial")
        add(t, f"{name} = {t}: exactly one full tile ({t})")
        add(t + 1, f"{name} = {t + 1}: one past the tile ({t}); a second tile holds a single element")
    if dim.tiles:
        t = max(dim.tiles)
        add(3 * t + 1, f"{name} = {3 * t + 1}: three full tiles ({t}) and a tail of one; the first, a middle "
                       "and the last tile all differ")
    for w in dim.widths:
        add(w, _width_why(name, w, w, dim.tiles))
    for w in dim.widths:
        for v in (w - 1, w + 1):
            add(v, _width_why(name, v, w, dim.tiles))
    add(dim.max, f"{name} = {dim.max}: the declared maximum" + _tail_note(dim.max, dim.tiles))
    for v, why in top_tails(name, dim).items():
        add(v, why)
    for v in dim.sizes:
        add(v, f"{name} = {v}: one of the declared sizes {list(dim.sizes)}" + _tail_note(v, dim.tiles))
    return dict(sorted(out.items()))


def top_tails(name: str, dim) -> dict[int, str]:
    """Tails at the top of a tiled range, where a launcher takes its looped path (a row that no
    longer fits one block): the largest size the tile does not divide (max - 1 when it divides
    the maximum), and max - tile + 1, a last tile of one element past the largest whole tiles
    below the maximum. With `sizes`, the largest declared sizes with a tail instead."""
    if not dim.tiles:
        return {}
    t = max(dim.tiles)
    if dim.sizes:
        tailed = [v for v in dim.sizes if any(v % u for u in dim.tiles)]
        return {v: f"{name} = {v}: the largest declared size with a tail" + _tail_note(v, dim.tiles) for v in tailed[-1:]}
    out = {}
    top = dim.max if any(dim.max % u for u in dim.tiles) else dim.max - 1
    out[top] = f"{name} = {top}: the largest size with a tail" + _tail_note(top, dim.tiles)
    one = dim.max - t + 1
    out.setdefault(one, f"{name} = {one}: the top of the range with a last tile of one element (max - tile + 1)"
                   + _tail_note(one, dim.tiles))
    return {v: why for v, why in out.items() if v > 3 * t + 1}


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
    dtypes = {DtypeFactor.parse(k).tensor: v for k, v in row.items() if DtypeFactor.is_one(k)}
    cfg = row.get("config", LAUNCHER_DEFAULT)
    config = () if cfg == LAUNCHER_DEFAULT else tuple(spec.configs[cfg].items())
    return sizes, dtypes, config


def _cheapest(spec: Spec, row: dict) -> dict[str, int]:
    return {d: row.get(d, max(spec.dims[d].min, 1)) for d in spec.dims}


def tile_edge_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Edge values of every dim, every dtype and every config, combined pairwise.

    A pair that cannot fit the budget even with every other dim at its smallest (the max of
    M beside the max of N) is left out here; the big-point generator owns that territory. On
    the CPU a pair too dear to repeat (thousands of rows: the interpreter runs a program per
    row) is left out too: `dear_edge_points` runs each such value once."""
    edges = {d: edge_values(d, spec.dims[d]) for d in spec.dims}
    factors = [(d, list(edges[d])) for d in spec.dims]
    factors += dtype_factors(spec)
    if spec.configs:
        factors.append(("config", _config_values(spec)))
    rows, _ = all_pairs(factors, lambda row: cheap(spec, _cheapest(spec, row), budget))
    for row in rows:
        sizes, dtypes, config = _split(row, spec)
        why = "; ".join(edges[d][v] for d, v in sizes.items())
        if spec.configs:
            why += f"; {config_text(config, LAUNCHER_CHOOSES)}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, dtypes),
                    why or "every dim at an edge", config=config, kind=PointKind.EDGE)


def dear_edge_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Edge values that fit the budget but cost too much to pair with every edge of the other
    dims (M at its declared maximum of 4096 rows under the interpreter: ~20 s a point), each
    once, at their cheapest: every edge value still runs, without paying for it once per
    partner."""
    for d, dim in spec.dims.items():
        for v, why in edge_values(d, dim).items():
            sizes = _cheapest(spec, {d: v})
            if fits(spec, sizes, budget) and not cheap(spec, sizes, budget):
                yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, {}),
                            f"{why}; every other dim at its smallest (too dear to pair with every other edge)",
                            kind=PointKind.EDGE)


def unreachable_edge_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Edge values no small point can hold within the budget (M at its maximum when the CPU
    budget is a few hundred thousand elements), at their cheapest: GPU points, so that the
    report shows them as skipped with a reason instead of silently absent."""
    for d, dim in spec.dims.items():
        for v, why in edge_values(d, dim).items():
            sizes = _cheapest(spec, {d: v})
            if not fits(spec, sizes, budget):
                yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, {}),
                            f"{why}; every other dim at its smallest", kind=PointKind.EDGE, needs=Needs.CUDA)


def config_points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Every config the launcher accepts, at a shape with a tail in every tiled dim:
    an accepted config that no tuned entry selects is still reachable by callers."""
    sizes = {}
    for d, dim in spec.dims.items():
        t = max(dim.tiles) if dim.tiles else 1
        sizes[d] = dim.snap(2 * t + 1 if dim.tiles else dim.min)
    if not fits(spec, sizes, budget):
        sizes = _cheapest(spec, {})
    for cfg in spec.configs:
        for dt in dtype_rows(spec):
            yield Point(spec.name, RUNG, tuple(sizes.items()), chosen_dtypes(spec, dt),
                        f"{config_text(tuple(cfg.items()), LAUNCHER_CHOOSES)}: every config the launcher accepts runs, "
                        "tuned or not", config=tuple(cfg.items()), kind=PointKind.CONFIG)


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
                        kind=PointKind.PRODUCTION, needs=need)


# ---------------------------------------------------------------------------- big points
MECHANISM = {(31, "bytes"): "signed 32-bit byte offsets wrap", (32, "bytes"): "unsigned 32-bit byte offsets wrap",
             (31, "elements"): "signed 32-bit element indices wrap",
             (32, "elements"): "unsigned 32-bit element indices wrap"}


def big_points(spec: Spec) -> Iterator[Point]:
    """For every tensor, inputs and outputs, the sizes around 2^31 and 2^32, in bytes and in
    elements, along each dim the spec lets grow that far (its rows, and each inner dim with the
    dims before it at their smallest: an index along it times its stride wraps on its own, in a
    sparsemax over dim 1 or an expert dim of a fused MoE), counting the padding of the last tile:

    below: the most rows whose last element stays below the cliff (a tensor of exactly 2^32
           bytes ends at byte 2^32 - 1: no offset wraps);
    padded: the most rows whose every tile, padded, stays below (when the tile does not divide);
    above: at least one whole row AND one whole tile start past the cliff (an int32
           `row * stride` wraps only for rows that start past it: M = 131072 rows of 32 KiB end
           exactly at 2^32 and pass; the first to fault is M = 131073).

    Each point's `why` gives the offset of the first element past the cliff. GPU points: a few
    GiB each; with `rows=` declared the rows that start past each cliff are among those checked."""
    seen = set()
    for name in spec.all_tensors:
        for p in _big_points_for(spec, name):
            key = (p.dims, p.dtypes)
            if key not in seen:
                seen.add(key)
                yield p


def _growing_dims(spec: Spec, name: str) -> list[str]:
    """The tensor's dims, each of which may grow past a cliff: its leading dim (one more of it is
    one more contiguous row) and every other dim of its shape (a slice along it)."""
    syms = spec.all_tensors[name].symbols
    return list(dict.fromkeys(s for s in syms if s in spec.dims))


def _base_sizes(spec: Spec, name: str, grow: str) -> dict[str, int]:
    """The dims of this tensor after `grow` at a model width (else the max), those before it at
    their smallest (so that an index along `grow` crosses the cliff, not the rows before it);
    dims it lacks at a tile."""
    syms = spec.all_tensors[name].symbols
    before = set(syms[:syms.index(grow)]) - {grow}
    sizes = {}
    for d, dim in spec.dims.items():
        if d in before:
            sizes[d] = dim.snap(1)
        elif d in syms:
            sizes[d] = max(dim.widths) if dim.widths else dim.max
        else:
            sizes[d] = dim.snap(dim.tiles[0] if dim.tiles else 1)
    sizes[grow] = 1
    return sizes


def cliff_rows(per_row: int, cliff: int, tile: int) -> dict[str, int]:
    """Rows of `per_row` units (bytes or elements) around `cliff`, tiles of `tile` rows:
    below, padded (see big_points), first (the first row that starts at or past the cliff)
    and above (one real row in the first tile that starts past it)."""
    below = cliff // per_row
    first = -(-cliff // per_row)
    return {"padded": below // tile * tile, "below": below, "first": first, "above": -(-first // tile) * tile + 1}


def _cliff_text(bits: int, unit: str, role: str, rows: int, per_row: int, tile: int, itemsize: int,
                row: str = "row") -> str:
    cliff, label, one = 1 << bits, f"2^{bits}", unit[:-1]
    if role == "above":
        first, last_tile = cliff_rows(per_row, cliff, tile)["first"], (rows - 1) // tile * tile
        elem = -(-cliff // itemsize) if unit == "bytes" else cliff
        which = f"{row} {first}" if first == rows - 1 else f"{row}s {first}..{rows - 1}"
        tiles = f"; the last tile starts at {row} {last_tile}" if tile > 1 else ""
        return (f"{which} start{'s' if first == rows - 1 else ''} past it ({row} {first} at {one} {first * per_row:,} "
                f"= {label} + {first * per_row - cliff:,}{tiles}); the first element past the cliff is element "
                f"{elem:,}, at byte {elem * itemsize:,}: {MECHANISM[(bits, unit)]}")
    if role == "padded":
        return f"every tile, padded to {-(-rows // tile) * tile * per_row:,} {unit}, stays below it"
    end = rows * per_row
    padded = -(-rows // tile) * tile * per_row
    cross = f", but its last tile, padded to {padded:,} {unit}, crosses it" if padded > cliff else ""
    where = "exactly" if end == cliff else f"{cliff - end:,} short of it"
    return f"its {unit} end {where}: no element at or past {label} {unit}{cross}"


# An inner dim grown past a cliff of one tensor may grow another tensor that holds it far more
# (a GEMM's K for A = M x K makes B = K x N thousands of times larger): past this many times the
# grown tensor's bytes, the point is the other tensor's, and that tensor's own points cover it.
OUTGROWN = 4


def _outgrown(spec: Spec, name: str, sizes: dict[str, int], dtypes: dict) -> bool:
    own = nbytes_of(spec, name, sizes, dtypes)
    return any(nbytes_of(spec, n, sizes, dtypes) > OUTGROWN * own for n in spec.all_tensors if n != name)


def _big_points_for(spec: Spec, name: str) -> Iterator[Point]:
    for grow in _growing_dims(spec, name):
        yield from _big_points_along(spec, name, grow)


def _big_points_along(spec: Spec, name: str, grow: str) -> Iterator[Point]:
    dim = spec.dims[grow]
    leading = spec.all_tensors[name].symbols[0] == grow
    row = "row" if leading else f"{grow} slice"
    dtypes = {n: spec.dtype_choices(n)[0] for n in spec.all_tensors if len(spec.dtype_choices(n)) > 1}
    dtype = dtype_of(spec, name, dtypes)
    itemsize = ITEMSIZE[dtype]
    sizes = _base_sizes(spec, name, grow)
    row_elems = math.prod(shape_of(spec, name, sizes))
    tile = max(dim.tiles) if dim.tiles else 1
    roles: dict[int, list[str]] = {}
    for bits, unit in MECHANISM:
        per_row = row_elems * (itemsize if unit == "bytes" else 1)
        at = cliff_rows(per_row, 1 << bits, tile)
        for role in ("padded", "below", "above"):
            rows = at[role]
            if role == "padded" and rows == at["below"]:
                continue
            if rows >= 1 and dim.allows(rows):
                roles.setdefault(rows, []).append(f"{'above' if role == 'above' else 'below'} 2^{bits} {unit}: "
                                                  + _cliff_text(bits, unit, role, rows, per_row, tile, itemsize, row))
    for rows in sorted(roles):
        pt_sizes = {**sizes, grow: rows}
        if not leading and _outgrown(spec, name, pt_sizes, dtypes):
            continue
        shape = shape_of(spec, name, pt_sizes)
        along = "" if leading else f"{grow} grows (the dims before it at their smallest); "
        why = (f"{name} ({dtype}, {' x '.join(map(str, shape))}) = {rows * row_elems * itemsize:,} bytes, "
               f"{rows * row_elems:,} elements; {along}" + "; ".join(roles[rows])
               + f"; {human_bytes(rows * row_elems * itemsize)}")
        yield Point(spec.name, RUNG, tuple(pt_sizes.items()), chosen_dtypes(spec, dtypes), why,
                    kind=PointKind.BIG, needs=Needs.CUDA)


def points(spec: Spec, budget: Budget = CPU_BUDGET) -> Iterator[Point]:
    """Rung 1, in order from cheap to costly: tile edges, configs, production, big."""
    seen = set()
    for gen in (tile_edge_points(spec, budget), dear_edge_points(spec, budget), config_points(spec, budget),
                production_points(spec, budget), unreachable_edge_points(spec, budget),
                big_points(spec)):
        for p in gen:
            key = (p.dims, p.dtypes, p.config)
            if key not in seen:
                seen.add(key)
                yield p
