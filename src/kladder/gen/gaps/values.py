"""Rung 2, the value gap: the distributions a model feeds a kernel, moved on purpose.

Random normal inputs hide a class of bugs: a model feeds peaked
attention logits, near-tied router scores, identical warm-up tokens, biases that differ from
tile to tile, extremes and, now and then, NaN; prompts shorter than a chunk. Each point here
gives ONE input one value kind (the others stay normal), so a failure names the value kind
that caused it, at two shapes: a tail in every tiled dim, and the longest rows the budget
allows (peaked logits only bite over many keys). Lengths sit on both sides of every declared
chunk. Inputs captured from a real run (`--replay DIR`) become points that keep their layout.
"""
from __future__ import annotations

from typing import Iterator

from .. import idfill
from ...core.notation import PointKind, ValueKind, Values
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import Budget, dtype_of, fits, moderate
from ...core.spec import Spec
from . import backward
from .common import base_shapes, chosen_dtypes, dtype_rows, each_config, sizes_text

RUNG = number("values")
TEMPERATURES = (3, 10, 30)
WHY = {
    "peaked": "normal x {t}: a softmax over such a row is near one-hot (peaked attention)",
    "ties": "values a few ulps apart in every row (near-tied router scores)",
    "identical": "every row the same (identical tokens: a warm-up batch, a repeated prompt)",
    "distinct": "non-negligible values that differ along the last dim, tile to tile (per-channel biases)",
    "tiny": "a quarter of the elements subnormal, smallest-normal or +-0",
    "huge": "a quarter of the elements +-big: the largest magnitude whose squares summed over a row still fit float32",
    "nonfinite": "NaN, +Inf and -Inf at a few positions (policy: {policy})",
    "lengths": "lengths at the edges of their range and on both sides of every chunk",
    "masked": "whole rows masked",
    "ones": "all ones",
}


def kind_labels(kind: str, t=None) -> list[str]:
    """A value kind's points (as Point.values holds them): peaked at each temperature, ids at each id kind
    (`ids/ignored` too where the input `t` declares a sentinel), the others once."""
    if kind == idfill.KIND:
        return list(idfill.labels(getattr(t, "ignore", None)))
    kinds = [ValueKind(Values.PEAKED, str(t)) for t in TEMPERATURES] if kind == Values.PEAKED else [ValueKind(kind)]
    return [k.format() for k in kinds]


def why_of(spec: Spec, name: str, label: str) -> str:
    kind = ValueKind.parse(label)
    if kind.kind == idfill.KIND:
        return f"{name}: {kind.format()}, {idfill.why(label, spec.all_tensors[name].ignore)}"
    text = WHY.get(kind.kind, kind.kind).format(t=kind.arg, policy=spec.nonfinite)
    return f"{name}: {kind.format()}, {text}"


def long_shape(spec: Spec, budget: Budget, start: dict[str, int]) -> dict[str, int]:
    """From `start`, grow the dims a kernel reduces over (in an input, in no output: the keys
    of an attention, a GEMM's K), then the last dim of each input, to the largest declared
    width or maximum that fits the budget: peaked logits only bite over many keys."""
    sizes = dict(start)
    out_syms = {s for t in spec.outputs.values() for s in t.symbols}
    order = []
    for t in spec.input_args.values():
        for sym in t.symbols:
            if sym in spec.dims and sym not in out_syms and sym not in order:
                order.append(sym)
    lasts = []
    for t in spec.input_args.values():
        if t.symbols and t.symbols[-1] in spec.dims and t.symbols[-1] not in order + lasts:
            lasts.append(t.symbols[-1])
    order += list(reversed(lasts))
    for d in order:
        dim = spec.dims[d]
        for target in sorted(set(dim.widths) | {dim.max}, reverse=True):
            if target <= sizes[d]:                 # a width at or below the start would shorten the row
                continue
            trial = {**sizes, d: target}
            if fits(spec, trial, budget):
                sizes = trial
                break
        else:
            lo, hi = sizes[d], dim.max
            while lo < hi:                          # the largest that fits
                mid = (lo + hi + 1) // 2
                if fits(spec, {**sizes, d: mid}, budget):
                    lo = mid
                else:
                    hi = mid - 1
            sizes[d] = dim.snap(lo)
    return sizes


def shapes_for(spec: Spec, budget: Budget) -> list[dict[str, int]]:
    base = base_shapes(spec, budget)[0]
    out = [base]
    wide = long_shape(spec, budget, base)
    if wide != base:
        out.append(wide)
    return out


def value_points(spec: Spec, budget: Budget, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    chosen = dict(dtypes)
    for name, t in spec.input_args.items():
        for kind in t.value_kinds(dtype_of(spec, name, chosen), spec.nonfinite):
            if kind == "identical" and len(t.symbols) < 2 and t.values is None:
                continue                                   # one row: nothing to repeat
            for label in kind_labels(kind, t):
                for sizes in shapes:
                    yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                                f"{why_of(spec, name, label)}; {sizes_text(sizes)}",
                                kind=PointKind.VALUES, values=((name, label),))


def chunk_points(spec: Spec, budget: Budget, dtypes: tuple, base: dict) -> Iterator[Point]:
    """Lengths at 1 and on both sides of every declared chunk (a prompt shorter than a chunk,
    exactly one, one token into the next)."""
    for d, dim in spec.dims.items():
        seen = set()
        for c in dim.chunks:
            for v, why in ((1, "shorter than any chunk"), (c - 1, f"one short of the chunk ({c})"),
                           (c, f"exactly one chunk ({c})"), (c + 1, f"one past the chunk ({c}): a second chunk of one")):
                if not dim.allows(v) or v in seen:
                    continue
                seen.add(v)
                sizes = {**base, d: v}
                if not fits(spec, sizes, budget):
                    continue
                values = tuple((n, "lengths") for n, t in spec.input_args.items()
                               if "lengths" in t.value_kinds(dtype_of(spec, n, dict(dtypes)), spec.nonfinite))
                yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, f"{d} = {v}: {why}; {sizes_text(sizes)}",
                            kind=PointKind.CHUNK, values=values)


def invariant_points(spec: Spec, budget: Budget, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    """An invariant with its own values (V = 1), alone and with each other input's kinds."""
    chosen = dict(dtypes)
    for inv in spec.invariants:
        if not inv.values:
            continue
        fixed = tuple(inv.values.items())
        combos = [()]
        for name, t in spec.input_args.items():
            if name in inv.values:
                continue
            for kind in t.value_kinds(dtype_of(spec, name, chosen), spec.nonfinite):
                if kind != "nonfinite":
                    combos += [((name, label),) for label in kind_labels(kind, t)]
        for extra in combos:
            for sizes in shapes:
                what = ", ".join(f"{n}: {k}" for n, k in fixed + extra)
                yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                            f"invariant '{inv.name}' with {what}; {sizes_text(sizes)}", kind=PointKind.INVARIANT, values=fixed + extra)


def points(spec: Spec, budget: Budget, replay: str | None = None) -> Iterator[Point]:
    """Every value kind, chunk length and invariant, once for each declared dtype (a value that
    is harmless in float32 may overflow float16 or tie in bfloat16); each declared config on each
    input's first value kind (common.each_config)."""
    budget = moderate(budget)
    shapes = shapes_for(spec, budget)
    seen, made = set(), []
    for row in dtype_rows(spec):
        dtypes = chosen_dtypes(spec, row)
        for gen in (value_points(spec, budget, dtypes, shapes), chunk_points(spec, budget, dtypes, shapes[0]),
                    invariant_points(spec, budget, dtypes, shapes), backward.value_points(spec, RUNG, dtypes, shapes)):
            for p in gen:
                key = (p.dims, p.dtypes, p.values)
                if key not in seen:
                    seen.add(key)
                    made.append(p)
                    yield p
    yield from each_config(spec, made, PointKind.VALUES)
    if replay:
        from ..capturing import replay_points
        yield from replay_points(spec, replay, RUNG)
