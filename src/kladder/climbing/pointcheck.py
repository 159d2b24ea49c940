"""A point checked against its spec before it runs (`kladder repro` takes a point a user may
have edited by hand, or copied from someone else's report): every field is data the spec
declares, never an instruction. Every dim present, an int within its Dim's range, no dim the
spec does not declare; each dtype one its tensor declares; each config key and value one the
spec's configs (or an expectation's `when`, a keyword flag, the launcher's defaults) use; the
rung built and the mode one of that rung's; the seed a 32-bit one; values and layouts on the
spec's own tensors, each layout a layout; a variant one of the spec's flags; a collective's
ranks and a repetition's plan in their ranges; and an environment variable only where the spec
declares it (a kl.Flag(env=...) or an Expect(when={"$NAME": ...})) with a value it declares: a
point string that sets PYTHONPATH or LD_PRELOAD would run code of its author's choosing in the
worker's child. A wrong point is a usage error that names the field, what was given and the
fix; it never reaches a worker as a KeyError, and a point that does not belong to the spec
never runs silently as some other point."""
from __future__ import annotations

from ..core.errors import PointError
from ..core.notation import EnvSet, Mode
from ..core.point import Point
from ..run.modes import of_rung
from ..core.rungs import BY_NUMBER
from ..core.spec import LAYOUTS, Spec, launcher_defaults, upstream_name, when_keys

# Config keys of kladder's own: rung 8's model points say which dtype and how many problems.
MODEL_CONFIG = ("model_dtype", "problems")
SEED_LIMIT = 1 << 32           # seeds are 8 hex digits of a sha256 (Point._default_seed, Point.shifted)
SANITIZERS = ("memcheck", "racecheck", "initcheck", "synccheck")
# rung 5's plan: each key and the type its value has (gaps/repetition.py)
REPEAT_TYPES = {"calls": int, "seconds": (int, float), "inputs": str, "launch": str, "load": bool, "fresh": bool,
                "declared": bool, "pattern": str, "tool": str}
SCALARS = (str, int, float, bool, type(None))


def check_point(spec: Spec, point: Point) -> None:
    _check_rung(point)
    if point.mode != "model":              # the model sizes its own tensors: no dims
        _check_dims(spec, point.dims)
    _check_dtypes(spec, point)
    _check_config(spec, point, point.config)
    _check_seed(point)
    _check_inputs(spec, point)
    _check_partner(spec, point)
    _check_variant(spec, point)
    _check_env(spec, point)
    _check_ranks(point)
    _check_repeat(point)
    _check_replay(point)


def _check_rung(point: Point) -> None:
    if point.rung not in BY_NUMBER:
        raise PointError(f"POINT rung: {point.rung} is no rung of the ladder; give one of 1-8 (as the report prints it).")
    made = of_rung(point.rung)           # the modes each rung's generators make (each mode's `rungs`)
    if point.mode not in made:
        modes = ", ".join(sorted(made))
        raise PointError(f"POINT mode: {str(point.mode)!r} is not a mode of rung {point.rung} (its modes: {modes}); copy "
                         "the point from the report again.")


def _check_dims(spec: Spec, dims: tuple, field: str = "dims") -> None:
    given = dict(dims)
    if len(given) != len(dims):
        raise PointError(f"POINT {field}: a dim is given twice in {_shown(dims)}; give each of "
                         f"{', '.join(spec.dims)} once.")
    unknown = [d for d in given if d not in spec.dims]
    if unknown:
        raise PointError(f"POINT {field}: {unknown[0]!r} is not a dim of spec {spec.name!r}; its dims are "
                         f"{', '.join(spec.dims)}. Drop it, or copy the point from the report again.")
    missing = [d for d in spec.dims if d not in given]
    if missing:
        raise PointError(f"POINT {field}: {missing[0]!r} is missing (given {_shown(dims)}); give every dim of spec "
                         f"{spec.name!r}: {', '.join(spec.dims)}, e.g. {_example(spec)}.")
    for name, v in dims:
        dim = spec.dims[name]
        if isinstance(v, bool) or not isinstance(v, int):
            raise PointError(f"POINT {field}: {name!r} is {_short(v)}, a {type(v).__name__}; give an integer from "
                             f"{dim.min} to {dim.max}, e.g. [\"{name}\", {dim.min}].")
        if dim.sizes and v not in dim.sizes:
            raise PointError(f"POINT {field}: {name!r} is {v}, not one of the spec's sizes {list(dim.sizes)}; give one of "
                             "them (the spec's kl.Dim(sizes=...)).")
        if not dim.min <= v <= dim.max:
            raise PointError(f"POINT {field}: {name!r} is {v}, outside the spec's range {dim.min}..{dim.max}; give a size "
                             "within it (the spec's kl.Dim).")


def _check_dtypes(spec: Spec, point: Point) -> None:
    tensors = spec.all_tensors
    for name, dtype in point.dtypes:
        if name not in tensors:
            raise PointError(f"POINT dtypes: {name!r} is not a tensor of spec {spec.name!r}; its tensors are "
                             f"{', '.join(tensors)}. Drop it, or copy the point from the report again.")
        choices = spec.dtype_choices(name)
        if not choices:
            raise PointError(f"POINT dtypes: {name!r} takes the dtype of {tensors[name].like!r} (like=); drop "
                             f"{name!r} from dtypes and give {tensors[name].like!r} its dtype instead.")
        if dtype not in choices:
            raise PointError(f"POINT dtypes: {name!r} is {_short(dtype)}, which the spec does not declare for it; give "
                             f"one of {', '.join(choices)}.")


def _check_config(spec: Spec, point: Point, config: tuple, field: str = "config") -> None:
    declared = _config_values(spec) if point.mode != "model" else {}
    known = set(MODEL_CONFIG) if point.mode == "model" else set(declared)
    for key, v in config:
        if key not in known:
            shown = ", ".join(sorted(known)) if known else "none (the spec declares no configs)"
            raise PointError(f"POINT {field}: {key!r} is not a config key of spec {spec.name!r}; its keys: {shown}. "
                             "Drop it, or copy the point from the report again.")
        if not isinstance(v, SCALARS):
            raise PointError(f"POINT {field}: {key!r} is {_short(v)}; give a number, a string, true, false or null, as "
                             "the spec's configs write it.")
        values = declared.get(key)
        if values and not any(_same(v, w) for w in values):
            raise PointError(f"POINT {field}: {key!r} is {_short(v)}, a value the spec never gives it (it gives "
                             f"{', '.join(_short(w) for w in values)}); give one of those.")


def _config_values(spec: Spec) -> dict[str, list]:
    """Config key -> every value the spec gives it: its configs, production shapes and tuned
    entries, an expectation's `when`, a keyword flag's values, the launcher's default. An empty
    list: a key the spec names (rung 7's `when`, precise=False) without a value to hold it to."""
    out: dict[str, list] = {k: [] for k in when_keys(spec)}
    for c in (*spec.configs, *spec.production, *spec.tuned):
        for k, v in c.items():
            if k not in spec.dims:
                out.setdefault(k, []).append(v)
    for e in spec.expectations:
        for k, v in (e.when or {}).items():
            if k in out:
                out[k] += list(v) if isinstance(v, (list, tuple)) else [v]
    for f in spec.toolchain.flags:
        if f.name in out:
            out[f.name] += list(f.values)
    defaults = launcher_defaults(spec.kernel) if callable(spec.kernel) else {}
    for k, v in defaults.items():
        if out.get(k):
            out[k].append(v)
    return out


def _same(a, b) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def _check_seed(point: Point) -> None:
    if not 0 < point.seed < SEED_LIMIT:
        raise PointError(f"POINT seed: {point.seed} is outside 1..{SEED_LIMIT - 1} (a report's seeds are 32-bit); give "
                         "the seed the report printed, or leave seed out for the point's own.")


def _check_inputs(spec: Spec, point: Point) -> None:
    """values and layouts name the spec's tensors (or an output's upstream gradient); a layout is one of LAYOUTS."""
    names = set(spec.all_tensors) | {upstream_name(o) for o in spec.all_tensors}
    for field, pairs in (("values", point.values), ("layouts", point.layouts)):
        for name, _ in pairs:
            if name not in names:
                raise PointError(f"POINT {field}: {name!r} is not a tensor of spec {spec.name!r}; its tensors are "
                                 f"{', '.join(spec.all_tensors)}. Drop it, or copy the point from the report again.")
    for name, lay in point.layouts:
        if lay not in LAYOUTS:
            raise PointError(f"POINT layouts: {name!r} is {_short(lay)}, no layout kladder makes; give one of "
                             f"{', '.join(LAYOUTS)}.")


def _check_partner(spec: Spec, point: Point) -> None:
    """Rung 4's B point (A-B-A, a JIT cache's second process; rung 7's cache-key B): its dims and config."""
    for key, v in point.partner:
        if key == "dims":
            _check_dims(spec, v, "partner's dims")
        elif key == "config":
            _check_config(spec, point, v, "partner's config")
        else:
            raise PointError(f"POINT partner: {key!r} is neither dims nor config; give [[\"dims\", [...]], [\"config\", "
                             "[...]]] as the report prints it.")


def _check_variant(spec: Spec, point: Point) -> None:
    if not point.variant:
        return
    known = {f.key for f in spec.toolchain.flags} | ({"config", "compiler"} if point.mode == Mode.CACHEKEY else set())
    if point.mode not in (Mode.FLAGS, Mode.CACHEKEY) or point.variant not in known:
        shown = ", ".join(sorted(known)) or "none"
        raise PointError(f"POINT variant: {_short(point.variant)} is not a flag of spec {spec.name!r} that a "
                         f"{str(point.mode)} point varies (its flags: {shown}); copy the point from the report again.")


def declared_env(spec: Spec) -> dict[str, list]:
    """Variable -> the values the spec declares for it (None: unset): a kl.Flag(env=...)'s
    values and every Expect(when={"$NAME": ...})'s."""
    out: dict[str, list] = {}
    for f in spec.toolchain.flags:
        if f.env is not None:
            out.setdefault(f.env, []).extend(f.values)
    for e in spec.expectations:
        for k, v in (e.when or {}).items():
            if isinstance(k, str) and k.startswith("$"):
                out.setdefault(k[1:], []).extend(v if isinstance(v, (list, tuple)) else [v])
    return out


def _check_env(spec: Spec, point: Point) -> None:
    """A point sets only the variables its spec declares, to values it declares: anything else
    (PYTHONPATH, LD_PRELOAD, PATH) is code of the point's author run in the kernel's process."""
    after = {f.env for f in spec.toolchain.flags if f.env is not None and f.set == EnvSet.AFTER_IMPORT}
    if not point.env:                       # a flags point set after import names its variable as its variant
        if point.env_set and not (point.mode == Mode.FLAGS and point.variant[1:] in after):
            raise PointError("POINT env_set: given without env; drop it, or copy the point from the report again.")
        return
    declared = declared_env(spec)
    if point.mode != Mode.DISPATCH:
        raise PointError(f"POINT env: a {str(point.mode)} point sets no variables (rung 7's dispatch points do); drop "
                         "env, or copy the point from the report again.")
    if len(dict(point.env)) != len(point.env):
        raise PointError(f"POINT env: a variable is given twice in {_shown(point.env)}; give each once.")
    for name, v in point.env:
        if name not in declared:
            shown = ", ".join(sorted(declared)) or "none"
            raise PointError(f"POINT env: {_short(name)} is not a variable spec {spec.name!r} declares (a kl.Flag(env=...) "
                             f"or an Expect(when={{\"$NAME\": ...}}); it declares: {shown}); a point sets only those. "
                             "Drop it, or copy the point from the report again.")
        if v not in declared[name]:
            shown = ", ".join("unset (null)" if w is None else repr(w) for w in dict.fromkeys(declared[name]))
            raise PointError(f"POINT env: {name} is {_short(v)}, a value spec {spec.name!r} does not declare for it; give "
                             f"one of {shown}.")
    if point.env_set == EnvSet.AFTER_IMPORT and any(k not in after for k, _ in point.env):
        raise PointError("POINT env_set: after_import for a variable the spec does not set after import (a kl.Flag(env=..., "
                         "set=\"after_import\")); drop env_set.")


def _check_ranks(point: Point) -> None:
    if not point.ranks:
        return
    r = dict(point.ranks)
    if point.mode != Mode.COLLECTIVE or set(r) != {"world", "lag", "lag_us", "sizes"}:
        raise PointError(f"POINT ranks: {_shown(point.ranks)}; only rung 6's collective points have ranks, with world, "
                         "lag, lag_us and sizes: copy the point from the report again.")
    world, lag, lag_us, sizes = r["world"], r["lag"], r["lag_us"], r["sizes"]
    if not (_int(world) and 1 <= world <= 1024 and _int(lag) and 0 <= lag < world and _int(lag_us) and lag_us >= 0
            and isinstance(sizes, tuple) and sizes and all(_int(s) and s >= 1 for s in sizes)):
        raise PointError(f"POINT ranks: {_shown(point.ranks)}; give world 1-1024, lag a rank below it, lag_us 0 or more "
                         "and sizes a list of positive integers, as the report prints them.")


def _check_repeat(point: Point) -> None:
    for key, v in point.repeat:
        kind = REPEAT_TYPES.get(key)
        if kind is None or point.mode not in (Mode.REPEAT, Mode.CALLS, Mode.SANITIZE):
            raise PointError(f"POINT repeat: {key!r} is not part of a rung-5 plan (its keys: "
                             f"{', '.join(REPEAT_TYPES)}, on repeat, calls and sanitize points); copy the point again.")
        ok = isinstance(v, kind) and (kind is bool or not isinstance(v, bool))
        if not ok or (key in ("calls", "seconds") and not v > 0) or (key == "tool" and v not in SANITIZERS):
            raise PointError(f"POINT repeat: {key} is {_short(v)}; give "
                             + ("one of " + ", ".join(SANITIZERS) if key == "tool" else
                                "a number more than 0" if key in ("calls", "seconds") else f"a {_type_name(kind)}")
                             + ", as the report prints it.")


def _check_replay(point: Point) -> None:
    if point.replay and (point.rung != 2 or "\0" in point.replay):
        raise PointError(f"POINT replay: {_short(point.replay)}; only rung 2's captured points replay a call (a folder "
                         "kladder.capture wrote); copy the point from the report again.")


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_name(kind) -> str:
    return {bool: "true or false", str: "string", int: "integer"}.get(kind, "number")


def _example(spec: Spec) -> str:
    return "[" + ", ".join(f"[\"{d}\", {dim.min}]" for d, dim in spec.dims.items()) + "]"


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _shown(v) -> str:
    text = repr([list(p) for p in v]) if isinstance(v, tuple) else repr(v)
    return text if len(text) <= 120 else text[:117] + "..."
