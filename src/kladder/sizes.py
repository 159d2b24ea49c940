"""Sizes of a spec's tensors at a point: shapes, dtypes, bytes. Shared by the generators
(which must know what a point costs) and the materialiser (which allocates it)."""
from __future__ import annotations

import math

from .spec import Spec

ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}


def shape_of(spec: Spec, name: str, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(int(s) if s.isdigit() else sizes[s] for s in spec.all_tensors[name].symbols)


def dtype_of(spec: Spec, name: str, chosen: dict[str, str]) -> str:
    """The dtype of a tensor: its chosen dtype, its only dtype, or its `like` model's."""
    t = spec.all_tensors[name]
    while t.like is not None:
        name, t = t.like, spec.all_tensors[t.like]
    return chosen.get(name, t.dtypes[0])


def nbytes_of(spec: Spec, name: str, sizes: dict[str, int], chosen: dict[str, str]) -> int:
    return math.prod(shape_of(spec, name, sizes)) * ITEMSIZE[dtype_of(spec, name, chosen)]


def numel_of(spec: Spec, name: str, sizes: dict[str, int]) -> int:
    return math.prod(shape_of(spec, name, sizes))


def largest_tensor(spec: Spec, sizes: dict[str, int], chosen: dict[str, str]) -> tuple[str, int, int]:
    """(name, elements, bytes) of the biggest tensor at these sizes."""
    best = max(spec.all_tensors, key=lambda n: nbytes_of(spec, n, sizes, chosen))
    return best, numel_of(spec, best, sizes), nbytes_of(spec, best, sizes, chosen)


def total_bytes(spec: Spec, sizes: dict[str, int], chosen: dict[str, str]) -> int:
    return sum(nbytes_of(spec, n, sizes, chosen) for n in spec.all_tensors)


def human_bytes(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"
