"""Rung 7, the toolchain: the software around the kernel that no test of the kernel covers.
A kernel is correct only as the code its toolchain emits, in the build
the engine runs: the path a dispatcher picks, the flags that reach code generation, the cache
that hands a restarted process its code, the names downstream code imports.

- dispatch points: which kernels really ran, at the base shapes under every config, at every
  production shape, and at every shape a `Spec(expect=...)` names in its `when` (every one: the
  budget decides the other dims, shrunk to their least when the named shape is big; a shape
  still over the budget is a GPU point, listed and skipped with its bytes, never left out),
  there with contiguous inputs and with each input non-contiguous in turn (a dispatcher may
  choose by seq_len or by layout: a decode test at seq_len 1 with contiguous inputs ran the
  prefill kernel in Modular MAX's mha_decoding regression: zoo/wrong_path_dispatch.py). A
  `when` on a config key is met by the declared configs that set it and by the launcher's own
  call where its default is the value; on an environment variable ("$NAME") the point sets it,
  at the process's start and, for a kl.Flag(env=..., set="after_import"), after the kernel's
  module was imported and the kernel called once;
- flag points: one per declared flag, run with each of its values (a variable set after import:
  a second point, each value set after import and one call);
- cache-key points: B on the cache A left, where B is another declared config (one that makes
  another call than A: the launcher's defaults resolved), a flag's other value, or a compiler
  setting;
- one import point: the declared imports, and the ImportErrors the kernel's modules catch.
Never runs a kernel."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterator

from ...core.notation import EnvSet, Mode, Needs, PointKind, Toolchain
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import Budget, fits, moderate
from ...core.spec import Spec, launcher_defaults, when_holds, when_sizes
from .common import base_shapes, chosen_dtypes, config_text, dtype_rows, resolved, sizes_text

RUNG = number("toolchain")
NONCONTIGUOUS = ("sliced", "transposed", "every_other")     # the first an input accepts stands for "not contiguous"


def _configs(spec: Spec) -> list[tuple]:
    return [()] + [tuple(c.items()) for c in spec.configs]


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    budget = moderate(budget)
    shapes = base_shapes(spec, budget)
    dtypes = chosen_dtypes(spec, dtype_rows(spec)[0])
    defaults = launcher_defaults(spec.kernel)
    found = list(_dispatch_points(spec, budget, shapes, dtypes, defaults))
    found += _flag_points(spec, shapes[0], dtypes)
    found += _cachekey_points(spec, shapes[0], dtypes, defaults)
    found.append(Point(spec.name, RUNG, tuple(shapes[0].items()), dtypes,
                       "imports: the names downstream code imports resolve to what is tested"
                       + (f" ({', '.join(spec.toolchain.imports)})" if spec.toolchain.imports else " (none declared)")
                       + "; the kernel's modules imported afresh, every ImportError they catch reported",
                       kind=PointKind.TOOLCHAIN, mode=Mode.IMPORTS))
    for p in found:          # a shape over the budget (a spec whose smallest shape is big, a big named shape) is a GPU point
        yield p if fits(spec, p.sizes, budget) else dataclasses.replace(p, needs=Needs.CUDA)


def _dispatch(spec, sizes, dtypes, config, why, layouts=(), env=(), env_set="") -> Point:
    return Point(spec.name, RUNG, tuple(sizes.items()), dtypes, f"dispatch: {why}", config=config, kind=PointKind.DISPATCH,
                 mode=Mode.DISPATCH, layouts=layouts, env=env, env_set=env_set)


def _dispatch_points(spec: Spec, budget: Budget, shapes: list[dict], dtypes: tuple, defaults: dict) -> Iterator[Point]:
    seen = set()

    def once(p: Point):
        key = (p.dims, resolved(spec, p.config, defaults), p.layouts, p.env, p.env_set)
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
    for sizes, config, env, env_set, label, inside, runs in _when_points(spec, shapes[0], budget, defaults):
        where = f"{sizes_text(sizes)}, {config_text(config)}"
        verb = "must run" if runs else "must not run (a call that raises passes)"
        must = f"{label} {verb} at {where}" if inside else \
            f"just outside where {label} {verb.split(' (')[0]}: {where} (judged by what applies there)"
        if env:
            yield from once(_dispatch(spec, sizes, dtypes, config, f"{must}, {env_text(spec, env, env_set)}"
                                      "; inputs contiguous", env=env, env_set=env_set))
            continue
        yield from once(_dispatch(spec, sizes, dtypes, config, f"{must}; inputs contiguous"))
        for name, t in spec.input_args.items():
            layout = next((lay for lay in NONCONTIGUOUS if lay in t.layout_list()), None)
            if layout:
                yield from once(_dispatch(spec, sizes, dtypes, config, f"{must}; {name} {layout} "
                                          "(not contiguous)", layouts=((name, layout),)))


def env_text(spec: Spec, env: tuple, env_set: str) -> str:
    """How a point sets its variables, as its why says it."""
    if env_set != EnvSet.AFTER_IMPORT:
        values = ", ".join(f"{k} unset" if v is None else f"{k}={v}" for k, v in env)
        return f"with {values} in the environment from the process's start"
    values = ", ".join(f"{k} removed" if v is None else f"{k}={v} set" for k, v in env)
    flags = {f.env: f for f in spec.toolchain.flags if f.env is not None}
    started = ", ".join(f"{k} unset" if flags[k].before(v) is None else f"{k}={flags[k].before(v)}" for k, v in env)
    return (f"with {values} after the kernel's module was imported and the kernel called once (the process "
            f"started with {started})")


def _listed(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _config_choices(spec: Spec, keys: dict, defaults: dict) -> list[tuple]:
    """The calls a `when`'s config keys name: the declared configs that set them (or leave them
    at a default that is the value), the launcher's own call where its defaults are the values;
    when neither, the named values themselves (the author says such a call happens)."""
    if not keys:
        return [()]

    def meets(config: tuple) -> bool:
        call = {**defaults, **dict(config)}
        return all(k in call and any(call[k] == w and isinstance(call[k], bool) == isinstance(w, bool) for w in _listed(v))
                   for k, v in keys.items())
    found = [c for c in _configs(spec) if meets(c)]
    if found:
        return found
    return [tuple(combo) for combo in itertools.product(*[[(k, w) for w in _listed(v)] for k, v in keys.items()])]


def _when_points(spec: Spec, base: dict, budget: Budget, defaults: dict) -> Iterator[tuple]:
    """Every shape, config and environment an expectation's `when` names, the other dims at the
    first base shape (at their least where the named shape does not fit so; still over the
    budget, the point is a GPU point): (sizes, config, env, env_set, label, inside, runs). A predicate
    over a dim names its edges (spec.when_sizes): `inside` is False at a size just outside it."""
    least = {d: dim.snap(1) for d, dim in spec.dims.items()}
    after = {f.env for f in spec.toolchain.flags if f.env is not None and f.set == EnvSet.AFTER_IMPORT}
    for e in spec.expectations:
        if not e.when:
            continue
        dims = {k: v for k, v in e.when.items() if k in spec.dims}
        envs = {k[1:]: v for k, v in e.when.items() if k.startswith("$")}
        keys = {k: v for k, v in e.when.items() if k not in spec.dims and not k.startswith("$") and not Toolchain.has(k)}
        label = (e.label or f"`{e.kernel}`") + toolchain_text(e)
        env_choices = [tuple(combo) for combo in itertools.product(*[[(k, w) for w in _listed(v)] for k, v in envs.items()])]
        for combo in itertools.product(*[[(k, x) for x in when_sizes(spec.dims[k], v)] for k, v in dims.items()]):
            inside = all(when_holds(dims[k], x) for k, x in combo)
            sizes = {**base, **dict(combo)}
            if not fits(spec, sizes, budget):
                sizes = {**least, **dict(combo)}          # the budget decides the other dims, not whether the shape is tried
            for config in _config_choices(spec, keys, defaults):
                for env in env_choices:
                    yield sizes, config, env, "", label, inside, e.runs
                    if env and all(k in after for k, _ in env):
                        yield sizes, config, env, EnvSet.AFTER_IMPORT, label, inside, e.runs


def toolchain_text(e) -> str:
    """An expectation's toolchain conditions as a why says them, with what this process has
    where it can tell without importing anything (torch, triton: their installed versions)."""
    from ...core.versions import holds, installed
    parts = []
    for k, want in (e.when or {}).items():
        if not Toolchain.has(k):
            continue
        have = installed(str(k)) if k in (Toolchain.TORCH, Toolchain.TRITON) else None
        if have is None:
            parts.append(f"{k} {want} (judged where the point runs)")
        else:
            parts.append(f"{k} {want} (here {have}: " + ("met)" if holds(want, have) else "not met, so not judged here)"))
    return f", where {' and '.join(parts)}," if parts else ""


def _flag_points(spec: Spec, sizes: dict, dtypes: tuple) -> Iterator[Point]:
    for f in spec.toolchain.flags:
        values = ", ".join("unset" if v is None and f.env is not None else repr(v) for v in f.values)
        what = f"the launcher keyword {f.name}" if f.name is not None else f"the environment variable {f.env}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                    f"flags: {what} must change the code: run with each of {values} at {sizes_text(sizes)}"
                    + (", each set at the process's start" if f.env is not None else ""),
                    kind=PointKind.TOOLCHAIN, mode=Mode.FLAGS, variant=f.key)
        if f.env is not None and f.set == EnvSet.AFTER_IMPORT:
            yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                        f"flags: {what} must change the code when set after the kernel's module was imported and the "
                        f"kernel called once (as a serving launcher sets it from its config): each of {values} at "
                        f"{sizes_text(sizes)}, in processes that all started with "
                        + (f"{f.env} unset" if f.values[0] is None else f"{f.env}={f.values[0]}"),
                        kind=PointKind.TOOLCHAIN, mode=Mode.FLAGS, variant=f.key, env_set=EnvSet.AFTER_IMPORT)


def _cachekey_points(spec: Spec, sizes: dict, dtypes: tuple, defaults: dict) -> Iterator[Point]:
    def why(b: str) -> str:
        return (f"cache key: a process on an empty cache runs A at {sizes_text(sizes)}; a process on the cache it "
                f"left runs B = A with {b}: the cache must miss, B right and bit-for-bit B on an empty cache")
    configs = _configs(spec)
    a = configs[0]
    b = next((c for c in configs[1:] if resolved(spec, c, defaults) != resolved(spec, a, defaults)), None)
    if b is not None:                  # two calls that differ (a config that is the launcher's defaults is no other call)
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why(config_text(b) + f" (A: {config_text(a)})"),
                    config=a, kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY, partner=(("config", b),), variant="config")
    for f in spec.toolchain.flags:
        other = f.values[1]
        text = f"{f.name}={other!r}" if f.name is not None else f"{f.env} unset" if other is None else f"{f.env}={other}"
        yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes, why(text), kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY,
                    variant=f.key)
    yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                why("a compiler setting that changes the code (TRITON_DEFAULT_FP_FUSION=0)"),
                kind=PointKind.TOOLCHAIN, mode=Mode.CACHEKEY, variant="compiler")
