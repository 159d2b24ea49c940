"""gen/upstream.py: each floating output's upstream gradient (its kind, its layout, seeded by
the point), and what `.grad` holds at an accumulation point."""
import math

import pytest
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.gen.upstream import LOSS_SCALE, fill_upstream, held, laid_out, upstream


def spec():
    return kl.Spec("g", lambda x, w: x, lambda x, w: x,
                   args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float16")},
                   returns={"y": kl.Tensor("M N", like="x"), "idx": kl.Tensor("M", dtype="int64"),
                            "loss": kl.Tensor("", dtype="float32")},
                   dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)}, grads=["x", "w"])


def point(**kw):
    return Point("g", 2, (("M", 6), ("N", 8)), (("x", "bfloat16"),), **kw)


def test_every_floating_output_gets_one_in_its_dtype_and_shape_and_a_loss_gets_one():
    got = upstream(spec(), point(), "cpu")
    assert set(got) == {"y", "loss"}                       # no gradient flows through an integer output
    assert got["y"].shape == (6, 8) and got["y"].dtype == torch.bfloat16 and got["y"].is_contiguous()
    assert got["loss"].shape == () and float(got["loss"]) == 1.0
    assert got["y"].float().std() > 0.5                     # normal, not ones


def test_the_upstream_gradient_is_seeded_by_the_point():
    a, b = upstream(spec(), point(), "cpu")["y"], upstream(spec(), point(), "cpu")["y"]
    other = upstream(spec(), point(seed=12345), "cpu")["y"]
    assert torch.equal(a, b) and not torch.equal(a, other)


def test_a_point_s_kind_and_layout_reach_their_output_only():
    p = point(values=(("upstream y", "ones"),), layouts=(("upstream y", "transposed"),))
    got = upstream(spec(), p, "cpu")
    assert (got["y"] == 1).all() and got["y"].stride() == (1, 6)
    assert float(got["loss"]) == 1.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_huge_is_sqrt_max_on_about_a_quarter_so_a_product_of_two_still_fits(dtype):
    t = torch.empty(64, 64, dtype=dtype)
    fill_upstream(t, "huge", str(dtype).removeprefix("torch."), torch.Generator().manual_seed(0))
    big = torch.tensor(torch.finfo(dtype).max ** 0.5).to(dtype)
    hit = t.abs() == big
    assert 0.15 < hit.float().mean() < 0.35 and (t[hit] > 0).any() and (t[hit] < 0).any()
    assert torch.isfinite(t * t).all()


@pytest.mark.parametrize("dtype,want", [("float32", LOSS_SCALE), ("bfloat16", LOSS_SCALE), ("float16", 2.0 ** 15)])
def test_scaled_is_the_loss_scale_the_dtype_holds(dtype, want):
    t = torch.empty(3, dtype=getattr(torch, dtype))
    fill_upstream(t, "scaled", dtype, torch.Generator())
    assert t.tolist() == [want] * 3 and math.isfinite(want)


def test_sparse_is_mostly_exact_zeros():
    t = torch.empty(100, 100)
    fill_upstream(t, "sparse", "float32", torch.Generator().manual_seed(1))
    zeros = (t == 0).float().mean()
    assert 0.85 < zeros < 0.95 and t.abs().max() > 0


def test_laid_out_keeps_the_values_and_changes_the_strides_where_the_rank_allows():
    t = torch.arange(12.0).reshape(3, 4)
    b = laid_out(t, "broadcast")
    assert b.stride() == (0, 1) and torch.equal(b, t[:1].expand(3, 4))
    tr = laid_out(t, "transposed")
    assert tr.stride() == (1, 3) and torch.equal(tr, t)
    v = torch.arange(3.0)
    assert laid_out(v, "transposed") is v and laid_out(v, "broadcast").stride() == (0,)
    s = torch.tensor(2.0)
    assert laid_out(s, "broadcast") is s and laid_out(t, "") is t


def test_held_gradients_are_normal_in_each_input_s_dtype_and_not_the_upstream_s_draw():
    got = held(spec(), point(), "cpu")
    assert set(got) == {"x", "w"} and got["x"].dtype == torch.bfloat16 and got["w"].dtype == torch.float16
    assert got["w"].shape == (8,)
    assert torch.equal(got["x"], held(spec(), point(), "cpu")["x"])
    assert not torch.equal(got["x"], upstream(spec(), point(), "cpu")["y"])
