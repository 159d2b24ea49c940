"""Rung 8, the model: the kernel swapped into a real model and judged by the model's score.

Kernel-level rungs check elements against a tolerance; a model compounds what they let
through (Modular MAX's mha_decoding at group 16: every kernel test green, Llama-3.1-405B
scoring 0.0; zoo/decode_group16.py). With
`Spec(slot="rmsnorm")` the kernel takes that slot of kladder's small trained model
(kladder.model: 5-digit addition, grouped-query attention with 16 query heads per KV head);
with `Spec(slot=kl.model.Adapter(target, evaluate))` it replaces a function of the user's own
model. One point per model dtype the kernel declares; the score is compared with the
baseline's (the model's own ops) under `Spec.model_tolerance`."""
from __future__ import annotations

from typing import Iterator

from ...core.notation import Mode, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import Budget
from ...core.spec import Spec

RUNG = number("end_to_end")
PROBLEMS = {"cpu": 64, "cuda": 512}
MODEL_DTYPES = {"cpu": ("bfloat16", "float32"), "cuda": ("bfloat16", "float16", "float32")}


def _kernel_dtypes(spec: Spec) -> list[tuple]:
    """The dtype choices of the kernel's first multi-dtype tensor, or its first tensor's."""
    for name in spec.input_args:
        choices = spec.dtype_choices(name)
        if choices:
            return [((name, d),) if len(choices) > 1 else () for d in choices]
    return [()]


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    if spec.model.slot is None:
        return
    device = budget.device
    slot, _ = spec.slot_target()
    if isinstance(slot, str):
        seen = set()
        for dtypes in _kernel_dtypes(spec):
            dt = dtypes[0][1] if dtypes else next(iter(spec.dtype_choices(n)[0] for n in spec.input_args if spec.dtype_choices(n)), "float32")
            if dt not in MODEL_DTYPES[device] or dt in seen:
                continue
            seen.add(dt)
            n = PROBLEMS[device]
            yield Point(spec.name, RUNG, (), dtypes,
                        f"the kernel in the `{slot}` slot of kladder's trained model ({dt}): exact match on {n} "
                        f"held-out additions (prefill, then token-by-token decode over a KV cache) against the model's own ops",
                        config=(("model_dtype", dt), ("problems", n)), kind=PointKind.MODEL, mode=Mode.MODEL)
    else:
        yield Point(spec.name, RUNG, (), (), f"the kernel in {getattr(slot, 'target', 'the user model')}: the user's "
                    "evaluation with and without it", kind=PointKind.MODEL, mode=Mode.MODEL)
