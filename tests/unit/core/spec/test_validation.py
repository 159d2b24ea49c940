"""core/spec/validation.py, directly: its Rule and _Found machinery, the helpers that judge one
value (tolerances, shape symbols, declared writes, plain configs, representable ranges) and the
rules tests/test_malformed_specs.py does not reach (Dim(sizes=), collectives, flags, kl.Calls
budgets, `when` keys, grads, kl.Config, kl.Size, grad_overwritten, the early exit on a part that
is not one). Each refusal is checked for its exact location, the value it shows and its fix."""
from __future__ import annotations


import pytest
from hypothesis import settings

import kladder as kl
from kladder.core.problems import SpecError, where_text

settings.register_profile("unit", max_examples=50, deadline=None)


def _k(x, w, **kw):
    return x


def _ref(x, w):
    return x


def make(**over):
    d = dict(kernel=_k, reference=_ref,
             args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32")},
             returns=kl.Tensor("M N", like="x"),
             dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=8)})
    d.update(over)
    return kl.Spec(d.pop("name", "t"), **d)


def problems(**over) -> list[tuple[str, object, str]]:
    with pytest.raises(SpecError) as e:
        make(**over)
    return [(where_text(p.where), p.given, p.fix) for p in e.value.problems]


def one(**over) -> tuple[str, object, str]:
    found = problems(**over)
    assert len(found) == 1, found
    return found[0]


def args(**over):
    d = {"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32")}
    d.update(over)
    return {k: t for k, t in d.items() if t is not None}


def test_a_three_tensor_like_cycle_is_one_problem():
    found = problems(args=args(x=kl.Tensor("M N", like="w"), w=kl.Tensor("N", like="y"), y=kl.Tensor("N", like="x")),
                     kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    assert [(w, g) for w, g, _ in found] == [("Spec('t').args['x'].like", "w")]     # x's own like, as written
    found = problems(args=args(x=kl.Tensor("M N", like="w"), w=kl.Tensor("N", like="x")))
    assert [(w, g) for w, g, _ in found] == [("Spec('t').args['x'].like", "w")]
