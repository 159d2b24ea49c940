"""The backward's points (Spec.grads), one generator a rung, each called by that rung's module:
rung 2 moves ONE output's upstream gradient to a value kind (upstream.UPSTREAM_KINDS; a scalar
loss, handed 1.0 elsewhere: a loss-scaled 2^16 and a random normal), rung 3 lays ONE upstream gradient out as a consumer hands it
(an expand-ed tensor from `out.sum()`, a transposed view), and adds the accumulation point: every
`.grad` already holding an earlier micro-batch's gradient and the backward run twice on a
retained graph (run/modes/accumulate.py). Every other point runs the backward too, with a
normal contiguous upstream gradient."""
from __future__ import annotations

from typing import Iterator

from ...core.point import Point
from ...core.sizes import dtype_of
from ...core.spec import FLOAT_DTYPES, Spec, upstream_name
from ..upstream import SCALAR_KINDS, UPSTREAM_KINDS, UPSTREAM_LAYOUTS
from .common import sizes_text

WHY = {
    "ones": "all ones (the libraries' own tests: out.sum().backward())",
    "sparse": "90% exact zeros (a masked loss, ignored tokens)",
    "huge": "a quarter of the elements +-big",
    "tiny": "a quarter of the elements subnormal, smallest-normal or +-0",
    "normal": "random normal (a weighted loss), not the 1.0 every other point hands a loss",
    "scaled": "2^16 (2^15 in float16, the largest power of two it holds), a loss scaler's gradient (torch.amp.GradScaler's initial scale)",
    "broadcast": "an expand-ed tensor (stride 0 on the first dim), as out.sum()'s backward hands it",
    "transposed": "a transposed view (the stride of the last dim is not 1)",
}


def _floating_outputs(spec: Spec, dtypes: tuple) -> list:
    chosen = dict(dtypes)
    return [n for n in spec.outputs if dtype_of(spec, n, chosen) in FLOAT_DTYPES]


def value_points(spec: Spec, rung: int, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    """Rung 2: each floating output's upstream gradient in each value kind, at each shape."""
    if not spec.grads:
        return
    for out in _floating_outputs(spec, dtypes):
        kinds = SCALAR_KINDS if not spec.outputs[out].symbols else UPSTREAM_KINDS
        for kind in kinds:
            for sizes in shapes:
                yield Point(spec.name, rung, tuple(sizes.items()), dtypes,
                            f"upstream gradient of {out}: {kind}, {WHY[kind]}; {sizes_text(sizes)}",
                            kind="values", values=((upstream_name(out), kind),))


def contract_points(spec: Spec, rung: int, dtypes: tuple, shapes: list[dict]) -> Iterator[Point]:
    """Rung 3: each upstream gradient of rank 2 or more in each layout (of rank 1: broadcast
    only), and the accumulation point at each shape."""
    if not spec.grads:
        return
    for out in _floating_outputs(spec, dtypes):
        rank = len(spec.outputs[out].symbols)
        for lay in UPSTREAM_LAYOUTS:
            if rank < (2 if lay == "transposed" else 1):
                continue
            for sizes in shapes:
                yield Point(spec.name, rung, tuple(sizes.items()), dtypes,
                            f"upstream gradient of {out}: {lay}, {WHY[lay]}; {sizes_text(sizes)}",
                            kind="layout", layouts=((upstream_name(out), lay),))
    for sizes in shapes:
        yield Point(spec.name, rung, tuple(sizes.items()), dtypes,
                    f"gradient accumulation: every .grad of {', '.join(spec.grads)} already holds an earlier micro-batch's "
                    f"gradient, and the backward runs twice on a retained graph: each must add, never overwrite; "
                    f"{sizes_text(sizes)}", kind="accumulate", mode="accumulate")
