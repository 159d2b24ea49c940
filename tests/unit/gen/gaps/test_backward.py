"""gen/gaps/backward.py: the backward's points: one floating output's upstream gradient moved
to a value kind (a scalar loss: scaled or normal) or a layout its rank allows, and the
accumulation point, at each shape; nothing without Spec.grads."""
import kladder as kl
from kladder.core.notation import Mode
from kladder.gen.gaps import backward
from kladder.gen.upstream import SCALAR_KINDS, UPSTREAM_KINDS

SHAPES = [{"M": 5, "N": 7}, {"M": 3, "N": 2}]


def spec(returns, grads=("x",)):
    return kl.Spec("g", lambda x: x, lambda x: x, args={"x": kl.Tensor("M N", dtype=["float32", "float16"])},
                   returns=returns, dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)}, grads=list(grads))


def moved(p):
    return (p.values or p.layouts)[0]


def test_no_grads_no_points():
    s = kl.Spec("g", lambda x: x, lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)})
    assert list(backward.value_points(s, 2, (), SHAPES)) == [] and list(backward.contract_points(s, 3, (), SHAPES)) == []


def test_each_floating_output_each_kind_each_shape_and_an_integer_output_none():
    s = spec({"y": kl.Tensor("M N", like="x"), "idx": kl.Tensor("M", dtype="int64"), "row": kl.Tensor("M", like="x")})
    pts = list(backward.value_points(s, 2, (("x", "float16"),), SHAPES))
    assert [(moved(p), p.sizes) for p in pts] == [(("upstream y", k), sh) for k in UPSTREAM_KINDS for sh in SHAPES] + [
        (("upstream row", k), sh) for k in UPSTREAM_KINDS for sh in SHAPES]
    assert all(p.rung == 2 and p.kind == "values" and p.dtypes == (("x", "float16"),) for p in pts)
    assert pts[0].why == f"upstream gradient of y: ones, {backward.WHY['ones']}; M=5, N=7"


def test_a_scalar_loss_is_scaled_then_normal():
    s = spec(kl.Tensor("", like="x"))
    assert [moved(p)[1] for p in backward.value_points(s, 2, (), SHAPES[:1])] == list(SCALAR_KINDS)


def test_layouts_by_rank_and_the_accumulation_point_at_each_shape():
    s = spec({"y": kl.Tensor("M N", like="x"), "row": kl.Tensor("M", like="x"), "loss": kl.Tensor("", like="x")})
    pts = list(backward.contract_points(s, 3, (), SHAPES[:1]))
    assert [moved(p) if p.layouts else p.mode for p in pts] == [
        ("upstream y", "broadcast"), ("upstream y", "transposed"), ("upstream row", "broadcast"), Mode.ACCUMULATE]
    acc = list(backward.contract_points(s, 3, (), SHAPES))[-2:]
    assert [p.sizes for p in acc] == SHAPES and all(p.kind == "accumulate" for p in acc)
    assert "every .grad of x already holds" in acc[0].why
