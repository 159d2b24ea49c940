"""Rung 7, the toolchain: the software around the kernel that no test of the kernel covers.
A kernel is correct only as the code its toolchain emits, in the build
the engine runs: the path a dispatcher picks, the flags that reach code generation, the cache
that hands a restarted process its code, the names downstream code imports.

- dispatch points: which kernels really ran, at the base shapes under every config, at every
  production shape, and at every shape a `Spec(expect=...)` names in its `when`, there with
  contiguous inputs and with each input non-contiguous in turn (a dispatcher may choose by
  seq_len or by layout: a decode test at seq_len 1 with contiguous inputs ran the prefill
  kernel in Modular MAX's mha_decoding regression: zoo/wrong_path_dispatch.py);
- flag points: one per declared flag, run with each of its values;
- cache-key points: B on the cache A left, where B is another declared config, a flag's other
  value, or a compiler setting;
- one import point: the declared imports, and the ImportErrors the kernel's modules catch.
Never runs a kernel."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterator

from ..notation import Mode, Needs, PointKind
from ..point import Point
from ..rungs import number
from ..sizes import Budget, fits, moderate
from ..spec import Spec
from .common import base_shapes, chosen_dtypes, config_text, dtype_rows, sizes_text

RUNG = number("toolchain")
NONCONTIGUOUS = ("sliced", "transposed", "every_other")     # the first an input accepts stands for "not contiguous"
MAX_WHEN_SHAPES = 8


def _configs(spec: Spec) -> list[tuple]:
    return [()] + [tuple(c.items()) for c in spec.configs]


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    budget = moderate(budget)
    shapes = base_shapes(spec, budget)
    dtypes = chosen_dtypes(spec, dtype_rows(spec)[0])
    found = list(_dispatch_points(spec, budget, shapes, dtypes))
    found += _flag_points(spec, shapes[0], dtypes)
    found += _cachekey_points(spec, shapes[0], dtypes)
    found.append(Point(spec.name, RUNG, tuple(shapes[0].items()), dtypes,
                       "imports: the names downstream code imports resolve to what is tested"
                       + (f" ({', '.join(spec.imports)})" if spec.imports else " (none declared)")
                       + "; the kernel's modules imported afresh, every ImportError they catch reported",
                       kind=PointKind.TOOLCHAIN, mode=Mode.IMPORTS))
    for p in found:          # a base shape over the budget (a spec whose smallest shape is big) is a GPU point
        yield p if fits(spec, p.sizes, budget) else dataclasses.replace(p, needs=Needs.CUDA)


def _dispatch(spec, sizes, dtypes, config, why, layouts=()) -> Point:
    return Point(spec.name, RUNG, tuple(sizes.items()), dtypes, f"dispatch: {why}", config=config, kind=PointKind.DISPATCH,
                 mode=Mode.DISPATCH, layouts=layouts)


def _dispatch_points(spec: Spec, budget: Budget, shapes: list[dict], dtypes: tuple) -> Iterator[Point]:
    seen = set()

    def once(p: Point):
        key = (p.dims, p.config, p.layouts)
        if key not in seen:
            seen.add(key)
            yield p

    for sizes in shapes:
        for config in _configs(spec):
            yield from once(_dispatch(spec, sizes, dtypes, config, f"which kernels ran at {sizes_text(sizes)}, "
                                      f"{config_text(config)}"))
    for shape in spec.production:
        sizes = {d: shape[d] for d in spec.dims}
        if fits(spec, sizes, budget):
            yield from once(_dispatch(spec, sizes, dtypes, (), f"which kernels ran at the production shape "
                                      f"{sizes_text(sizes)}"))
    for sizes, config, label in _when_shapes(spec, shapes[0], budget):
        yield from once(_dispatch(spec, sizes, dtypes, config, f"{label} must run at {sizes_text(sizes)}, "
                                  f"{config_text(config)}; inputs contiguous"))
        for name, t in spec.input_args.items():
            layout = next((lay for lay in NONCONTIGUOUS if lay in t.layout_list()), None)
            if layout:
                yield from once(_dispatch(spec, sizes, dtypes, config, f"{label} must run at {sizes_text(sizes)}, "
                                          f"{config_text(config)}; {name} {layout} (not contiguous)",
                                          layouts=((name, layout),)))


def _when_shapes(spec: Spec, base: dict, budget: Budget) -> Iterator[tuple[dict, tuple, str]]:
    """Every shape and config an expectation's `when` names, on the first base shape."""
    count = 0
    for e in spec.expectations:
        if not e.when:
            continue
        dims = {k: v for k, v in e.when.items() if k in spec.dims}
        keys = {k: v for k, v in e.when.items() if k not in spec.dims}
        choices = [[(k, x) for x in (v if isinstance(v, (list, tuple)) else [v])] for k, v in dims.items()]
        configs = [tuple(c.items()) for c in spec.configs if all(
            c.get(k) in (v if isinstance(v, (list, tuple)) else [v]) for k, v in keys.items())] if keys else [()]
        label = e.label or f"`{e.kernel}`"
        for combo in itertools.product(*choices):
            sizes = {**base, **dict(combo)}
            if not fits(spec, sizes, budget):
                continue
            for config in configs:
                count += 1
                if count > MAX_WHEN_SHAPES:
                    return
                yield sizes, config, label


def _flag_points(spec: Spec, sizes: dict, dtypes: tuple) -> Iterator[Point]:
    for f in spec.flags:
        values = ", ".join(map(repr, f.values))
        what = f"the launcher keyword {f.name}" if f.name is not None else f"the environment variable {f.env}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                    f"flags: {what} must change the code: run with each of {values} at {sizes_text(sizes)}",
                    kind=PointKind.TOOLCHAIN, mode=Mode.FLAGS, variant=f.key)


def _cachekey_points(spec: Spec, sizes: dict, dtypes: tuple) -> Iterator[Point]:
    def why(b: str) -> str:
        return (f"cache key: a process on an empty cache runs A at {sizes_text(sizes)}; a process on the cache it "
                f"left runs B = A with {b}: the cache must miss, B right and bit-for-bit B on an empty cache")
    configs = _configs(spec)
    if len(configs) > 1:
        a, b = configs[0], configs[1]
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why(config_text(b) + f" (A: {config_text(a)})"),
                    config=a, kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY, partner=(("config", b),), variant="config")
    for f in spec.flags:
        other = f"{f.name}={f.values[1]!r}" if f.name is not None else f"{f.env}={f.values[1]}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why(other), kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY,
                    variant=f.key)
    yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                why("a compiler setting that changes the code (TRITON_DEFAULT_FP_FUSION=0)"),
                kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY, variant="compiler")
