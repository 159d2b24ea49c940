"""Rung 3, the contract gap: what a kernel assumes about its inputs beyond their values.

A kernel tested on fresh contiguous tensors assumes a row stride equal to the row length, a
16-byte-aligned base, no stride-0 dims; a kernel reading packed rows assumes the padding is
zero (aiter #5195: 0xFF padding bytes decoded as NaN scales). Each point moves ONE input's
layout (a sliced view, every other element, transposed storage, an offset or a one-element
shift, a broadcast, channels-last), or poisons one input's padding bytes, or sweeps the dtype
combinations; one point per spec checks that the reference does not run the kernel itself
(two paths, one kernel: zoo/shared_kernel_reference.py).
"""
from __future__ import annotations

import itertools
from typing import Iterator

from ...core.notation import Mode, Padding, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import Budget, moderate
from ...core.spec import Spec
from . import backward
from .common import base_shapes, chosen_dtypes, dtype_rows, each_config, sizes_text

RUNG = number("contracts")
LAYOUT_WHY = {
    "sliced": "a view of a wider buffer: the row stride is larger than the row, the gap poisoned",
    "every_other": "every other element of a buffer twice as long (last-dim stride 2)",
    "transposed": "column-major storage, the same logical shape (the stride of the last dim is not 1)",
    "offset": "a view starting 64 elements into its storage (a non-zero storage offset)",
    "shifted": "a view starting one element into its storage: the base pointer is not 16-byte aligned",
    "broadcast": "stride 0 on the first dim: every row is the same storage (an expanded tensor)",
    "channels_last": "channels-last storage of a 4-d tensor",
}
PADDING_FILLS = ("0xFF", "0x7F", "0x80", "bytes", "random")
PADDING_WHY = {
    "0xFF": "every padding byte 0xFF (NaN as an e8m0 scale, -1 as int8)",
    "0x7F": "every padding byte 0x7F", "0x80": "every padding byte 0x80 (-0 / -128)",
    "bytes": "each padding byte its own offset (a per-byte pattern)", "random": "random padding bytes",
}


def layout_points(spec: Spec, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    for name, t in spec.input_args.items():
        for lay in t.layout_list():
            for sizes in shapes:
                yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                            f"{name}: {lay}, {LAYOUT_WHY[lay]}; {sizes_text(sizes)}", kind=PointKind.LAYOUT, layouts=((name, lay),))


def dtype_points(spec: Spec, shape: dict) -> Iterator[Point]:
    """Every combination of the declared dtypes (rung 1 sees each choice once)."""
    names = [n for n in spec.all_tensors if len(spec.dtype_choices(n)) > 1]
    if not names:
        return
    for combo in itertools.product(*(spec.dtype_choices(n) for n in names)):
        dtypes = tuple(zip(names, combo, strict=True))
        text = ", ".join(f"{n} {d}" for n, d in dtypes)
        yield Point(spec.name, RUNG, tuple(shape.items()), dtypes, f"dtype sweep: {text}; {sizes_text(shape)}", kind=PointKind.DTYPE)


def padding_points(spec: Spec, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    for name, t in spec.input_args.items():
        if t.valid is None:
            continue
        for fill in PADDING_FILLS:
            for sizes in shapes:
                yield Point(spec.name, RUNG, tuple(sizes.items()), dtypes,
                            f"{name}: padding past the {t.valid} valid elements of each row poisoned, {PADDING_WHY[fill]}; "
                            f"the outputs must stay bit for bit those of zero padding; {sizes_text(sizes)}",
                            kind=PointKind.PADDING, mode=Mode.PADDING, values=((name, Padding(fill).format()),))


def independence_point(spec: Spec, dtypes: tuple, shape: dict) -> Point:
    return Point(spec.name, RUNG, tuple(shape.items()), dtypes,
                 "reference independence: the reference must not run the kernel under test (two paths, one kernel)",
                 kind=PointKind.INDEPENDENCE, mode=Mode.INDEPENDENCE)


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    """Reference independence once; each layout and padding fill for each declared dtype (a
    layout bug may live in one dtype's path only), each declared config on each input's first
    layout (common.each_config); every dtype combination."""
    budget = moderate(budget)
    shapes = base_shapes(spec, budget)
    rows = [chosen_dtypes(spec, row) for row in dtype_rows(spec)]
    yield independence_point(spec, rows[0], shapes[0])
    for i, dtypes in enumerate(rows):
        layouts = list(layout_points(spec, dtypes, shapes))
        yield from layouts
        if i == 0:
            yield from each_config(spec, layouts, PointKind.LAYOUT)
        yield from padding_points(spec, dtypes, shapes)
        yield from backward.contract_points(spec, RUNG, dtypes, shapes)
    yield from dtype_points(spec, shapes[0])
