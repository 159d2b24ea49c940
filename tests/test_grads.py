"""Spec(grads=...): every listed input's gradient judged as one more output ("grad of w"),
with its pattern, against the float64 reference's autograd; upstream gradients as inputs
(rung 2's value kinds, rung 3's layouts); accumulation (rung 3's accumulate mode)."""
import pytest
import torch
import torch.nn.functional as F

import kladder as kl
from kladder.gaps import backward as backward_gaps
from kladder.point import Point
from kladder.run.trial import run_point
from kladder.upstream import laid_out, upstream


def ln_ref(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def ln(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)


def ln_spec(kernel, **extra):
    return kl.Spec("ln", kernel=kernel, reference=ln_ref,
                   args={"x": kl.Tensor("M N", dtype="float32"), "w": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x")},
                   dims={"M": kl.Dim(1, 512), "N": kl.Dim(3, 4096, tile=64)}, returns=kl.Tensor("M N", like="x"),
                   grads=["x", "w", "b"], **extra)


def _planted(grad_fix):
    """F.layer_norm with its backward's gradients passed through `grad_fix(gx, gw, gb)`."""
    class Planted(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                grads = torch.autograd.grad(ln(*leaves), leaves, g)
            return grad_fix(*[t.clone() for t in grads])
    return Planted.apply


def _point(rung=1, M=37, N=129, **kw):
    return Point("ln", rung, (("M", M), ("N", N)), **kw)


def _last7(gx, gw, gb):
    gw[-7:] += 1.0                  # the last 7 columns of the weight's gradient: a last-tile bug
    return gx, gw, gb


def test_wrong_weight_gradient_in_the_last_tile_is_found_and_located():
    o = run_point(ln_spec(_planted(_last7)), _point(), "cpu").outcome
    assert o.status.value == "failed"
    (f,) = o.findings
    assert f.output == "grad of w" and f.check.value == "values"
    assert f.pattern.kind == "elements" and (f.pattern.cols.first, f.pattern.cols.last) == (122, 128)
    assert f.mismatched == 7 and f.total == 129


def test_every_listed_gradient_is_judged():
    def wrong_x(gx, gw, gb):
        gx[3] *= 2                  # one whole row of the input's gradient
        gb[0] = 0.0
        return gx, gw, gb
    o = run_point(ln_spec(_planted(wrong_x)), _point(), "cpu").outcome
    by = {f.output: f for f in o.findings}
    assert set(by) == {"grad of x", "grad of b"}
    p = by["grad of x"].pattern
    assert p.kind == "block" and p.rows == ("one", 3) and p.cols is None      # row 3, every column


def test_a_gradient_the_kernel_does_not_compute_is_a_contract_failure():
    o = run_point(ln_spec(_planted(lambda gx, gw, gb: (gx, None, gb))), _point(), "cpu").outcome
    (f,) = o.findings
    assert f.output == "grad of w" and f.check.value == "contract"


def test_a_launcher_without_autograd_raises_as_the_kernels():
    o = run_point(ln_spec(lambda x, w, b: ln(x, w, b).detach()), _point(), "cpu").outcome
    assert o.status.value == "failed" and o.findings[0].check.value == "raised"


@pytest.mark.parametrize("values,layouts,mode", [
    ((), (), "eager"),
    ((("upstream out", "sparse"),), (), "eager"),
    ((("upstream out", "huge"),), (), "eager"),
    ((("upstream out", "tiny"),), (), "eager"),
    ((), (("upstream out", "broadcast"),), "eager"),
    ((), (("upstream out", "transposed"),), "eager"),
    ((), (), "accumulate"),
])
def test_torch_layer_norm_backward_passes(values, layouts, mode):
    o = run_point(ln_spec(ln), _point(values=values, layouts=layouts, mode=mode), "cpu").outcome
    assert o.status.value == "passed", o.findings


def test_torch_linear_and_softmax_backward_pass():
    lin = kl.Spec("lin", kernel=F.linear, reference=lambda x, w, b: x @ w.T + b,
                  args={"x": kl.Tensor("M K", dtype="float32"), "w": kl.Tensor("N K", like="x"), "b": kl.Tensor("N", like="x")},
                  dims={"M": kl.Dim(1, 256), "N": kl.Dim(1, 256), "K": kl.Dim(1, 256)},
                  returns=kl.Tensor("M N", like="x"), grads=["x", "w", "b"])
    o = run_point(lin, Point("lin", 1, (("M", 33), ("N", 65), ("K", 129))), "cpu").outcome
    assert o.status.value == "passed", o.findings
    sm = kl.Spec("sm", kernel=lambda x: torch.softmax(x, -1),
                 reference=lambda x: torch.exp(x - torch.logsumexp(x, -1, keepdim=True)),
                 args={"x": kl.Tensor("M N", dtype="float32")}, dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 512)},
                 returns=kl.Tensor("M N", like="x"), grads=["x"])
    o = run_point(sm, Point("sm", 2, (("M", 17), ("N", 257)), values=(("x", "peaked/10"),)), "cpu").outcome
    assert o.status.value == "passed", o.findings


def test_gradient_overwritten_instead_of_accumulated_fails_only_at_accumulate():
    class Overwrites(torch.autograd.Function):
        """A backward that writes w.grad itself (a fused optimizer-style kernel) instead of returning it."""
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            ctx.w = w
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                gx, gw, gb = torch.autograd.grad(ln(*leaves), leaves, g)
            ctx.w.grad = gw                  # the bug: assigned, so what .grad held is lost
            return gx, None, gb
    spec = ln_spec(Overwrites.apply)
    assert run_point(spec, _point(), "cpu").outcome.status.value == "passed"
    o = run_point(spec, _point(rung=3, mode="accumulate"), "cpu").outcome
    assert [f.output for f in o.findings] == ["grad of w"]


def test_a_backward_that_frees_what_it_saved_fails_on_the_retained_graph():
    class Frees(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.saved = [x, w, b]
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            x, w, b = ctx.saved
            ctx.saved = [x * 0, w * 0, b * 0]      # the bug: its buffers reused, the second backward reads zeros
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in (x, w, b)]
                return torch.autograd.grad(ln(*leaves), leaves, g)
    o = run_point(ln_spec(Frees.apply), _point(rung=3, mode="accumulate"), "cpu").outcome
    assert o.status.value == "failed"
    assert {f.output for f in o.findings} >= {"grad of x", "grad of w"}


def test_upstream_gradients_kinds_and_layouts():
    spec = ln_spec(ln)
    pt = _point(values=(("upstream out", "sparse"),))
    (g,) = upstream(spec, pt, "cpu").values()
    assert g.shape == (37, 129) and 0.8 < float((g == 0).float().mean()) < 0.97
    t = torch.randn(4, 6)
    assert laid_out(t, "broadcast").stride(0) == 0 and laid_out(t, "transposed").stride() == (1, 4)
    assert torch.equal(laid_out(t, "transposed"), t)


def test_a_scalar_loss_gets_one_then_a_scaled_value():
    spec = kl.Spec("loss", kernel=lambda x: (x * x).mean(), reference=lambda x: (x * x).mean(),
                   args={"x": kl.Tensor("M", dtype="float16")}, dims={"M": kl.Dim(1, 64)},
                   returns=kl.Tensor("", like="x"), grads=["x"])
    assert float(upstream(spec, Point("loss", 1, (("M", 5),)), "cpu")["out"]) == 1.0
    scaled = float(upstream(spec, Point("loss", 2, (("M", 5),), values=(("upstream out", "scaled"),)), "cpu")["out"])
    assert scaled == 2.0 ** 15                   # 2^16 does not fit float16
    kinds = [dict(p.values)["upstream out"] for p in backward_gaps.value_points(spec, 2, (), [{"M": 5}])]
    assert kinds == ["scaled", "normal"]


def test_generators_add_backward_points_only_with_grads():
    spec = ln_spec(ln)
    pts = list(backward_gaps.contract_points(spec, 3, (), [{"M": 16, "N": 64}]))
    assert [(p.mode, dict(p.layouts)) for p in pts] == [
        ("eager", {"upstream out": "broadcast"}), ("eager", {"upstream out": "transposed"}), ("accumulate", {})]
    plain = kl.Spec("ln", kernel=ln, reference=ln_ref, args=spec.args, dims=spec.dims, returns=spec.returns)
    assert not list(backward_gaps.contract_points(plain, 3, (), [{"M": 16, "N": 64}]))
    assert not list(backward_gaps.value_points(plain, 2, (), [{"M": 16, "N": 64}]))


@pytest.mark.parametrize("grads,fix", [
    (["xx"], "did you mean 'x'?"),
    (["out"], "'out' is an output"),
    (["n"], "'n' is a scalar argument"),
    (["i"], "not of a floating dtype"),
    (["x", "x"], "name each input once"),
    ([3], "name the tensor inputs"),
])
def test_bad_grads_name_the_field_and_the_fix(grads, fix):
    with pytest.raises(kl.SpecError) as e:
        kl.Spec("s", kernel=ln, reference=ln_ref,
                args={"x": kl.Tensor("N", dtype="float32"), "i": kl.Tensor("N", dtype="int32"), "n": 3},
                dims={"N": kl.Dim(1, 64)}, returns=kl.Tensor("N", like="x"), grads=grads)
    assert e.value.where == "Spec('s').grads" and fix in e.value.fix
