"""A point checked against its spec before it runs (`kladder repro` takes a point a user may
have edited by hand): every dim present, an int within its Dim's range, no dim the spec does
not declare, each dtype one its tensor declares, each config key one the spec's configs use.
A wrong point is a usage error that names the field, what was given and the fix; it never
reaches a worker as a KeyError, and a point that does not belong to the spec never runs
silently as some other point."""
from __future__ import annotations

from .point import Point
from .spec import Spec, when_keys

# Config keys of kladder's own: rung 8's model points say which dtype and how many problems.
MODEL_CONFIG = ("model_dtype", "problems")


class PointError(ValueError):
    """A point that does not fit its spec: a usage error (exit 2)."""


def check_point(spec: Spec, point: Point) -> None:
    if point.mode != "model":              # the model sizes its own tensors: no dims
        _check_dims(spec, point)
    _check_dtypes(spec, point)
    _check_config(spec, point)


def _check_dims(spec: Spec, point: Point) -> None:
    given = dict(point.dims)
    if len(given) != len(point.dims):
        raise PointError(f"POINT dims: a dim is given twice in {_shown(point.dims)}; give each of "
                         f"{', '.join(spec.dims)} once.")
    unknown = [d for d in given if d not in spec.dims]
    if unknown:
        raise PointError(f"POINT dims: {unknown[0]!r} is not a dim of spec {spec.name!r}; its dims are "
                         f"{', '.join(spec.dims)}. Drop it, or copy the point from the report again.")
    missing = [d for d in spec.dims if d not in given]
    if missing:
        raise PointError(f"POINT dims: {missing[0]!r} is missing (given {_shown(point.dims)}); give every dim of spec "
                         f"{spec.name!r}: {', '.join(spec.dims)}, e.g. {_example(spec)}.")
    for name, v in point.dims:
        dim = spec.dims[name]
        if isinstance(v, bool) or not isinstance(v, int):
            raise PointError(f"POINT dims: {name!r} is {v!r}, a {type(v).__name__}; give an integer from {dim.min} to "
                             f"{dim.max}, e.g. [\"{name}\", {dim.min}].")
        if dim.sizes and v not in dim.sizes:
            raise PointError(f"POINT dims: {name!r} is {v}, not one of the spec's sizes {list(dim.sizes)}; give one of "
                             "them (the spec's kl.Dim(sizes=...)).")
        if not dim.min <= v <= dim.max:
            raise PointError(f"POINT dims: {name!r} is {v}, outside the spec's range {dim.min}..{dim.max}; give a size "
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
            raise PointError(f"POINT dtypes: {name!r} is {dtype!r}, which the spec does not declare for it; give one of "
                             f"{', '.join(choices)}.")


def _check_config(spec: Spec, point: Point) -> None:
    known = set(MODEL_CONFIG) if point.mode == "model" else {
        k for c in (*spec.configs, *spec.production, *spec.tuned) for k in c if k not in spec.dims}
    if point.mode != "model":
        known |= set(when_keys(spec))        # rung 7: a launcher keyword an expectation's `when` names (precise=False)
    for key, _ in point.config:
        if key not in known:
            shown = ", ".join(sorted(known)) if known else "none (the spec declares no configs)"
            raise PointError(f"POINT config: {key!r} is not a config key of spec {spec.name!r}; its keys: {shown}. "
                             "Drop it, or copy the point from the report again.")


def _example(spec: Spec) -> str:
    return "[" + ", ".join(f"[\"{d}\", {dim.min}]" for d, dim in spec.dims.items()) + "]"


def _shown(v) -> str:
    text = repr([list(p) for p in v]) if isinstance(v, tuple) else repr(v)
    return text if len(text) <= 120 else text[:117] + "..."
