"""Spec(grads=...): every listed input's gradient judged as one more output ("grad of w"),
with its pattern, against the float64 reference's autograd; upstream gradients as inputs
(rung 2's value kinds, rung 3's layouts); accumulation (rung 3's accumulate mode)."""
import pytest
import torch
import torch.nn.functional as F

import kladder as kl
from kladder.gen.gaps import backward as backward_gaps
from kladder.core.point import Point
from kladder.run.trial import run_point
from kladder.gen.upstream import laid_out, upstream


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


# ---------------------------------------------------------------------------- issue 22, items A and 3
import os                                                         # noqa: E402
import sys                                                        # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "specs"))
import grads_order as order                                       # noqa: E402
from kladder.report.words import message, reason                 # noqa: E402

SPECS = os.path.join(os.path.dirname(__file__), "specs")


def _ln_formula(noise):
    """A float32 layer norm backward written as Triton kernels write it, dx = (w dy - (xhat c1 + c2))
    x rstd, with `noise(c2)` standing in for the GPU's rounding of c2 = sum(w dy) / N."""
    class LN(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            n = x.shape[-1]
            xc = x - x.mean(-1, keepdim=True)
            rstd = torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)
            xhat, wdy = xc * rstd, w * dy
            c1, c2 = (xhat * wdy).sum(-1, keepdim=True) / n, noise(wdy.sum(-1, keepdim=True) / n)
            return (wdy - (xhat * c1 + c2)) * rstd, (dy * xhat).sum(0), dy.sum(0)
    return LN.apply


def _one_ulp_up_every_6th_row(c2):
    up = torch.nextafter(c2, torch.full_like(c2, float("inf")))
    return torch.where(torch.arange(c2.shape[0])[:, None] % 6 == 0, up, c2)


def test_n1_gradient_of_x_rounding_of_its_terms_passes_a_real_bug_fails():
    # N = 1: the true gradient of x is exactly 0, from two terms of size rstd |w dy| (rstd = 316);
    # one rounding of c2 leaves 316 x 1 ulp (the H200's 3.7e-05, over atol 1e-05): a correct kernel
    spec = order.ln_spec("ln", _ln_formula(_one_ulp_up_every_6th_row), n_min=1)
    o = run_point(spec, Point("ln", 1, (("M", 1024), ("N", 1))), "cpu").outcome
    assert o.status.value == "passed", o.findings
    # a backward that forgot the mean's term (c2 = 0) is 316 x |w dy| off: it still fails
    spec = order.ln_spec("ln", _ln_formula(lambda c2: c2 * 0), n_min=1)
    o = run_point(spec, Point("ln", 1, (("M", 1024), ("N", 1))), "cpu").outcome
    assert [f.output for f in o.findings] == ["grad of x"] and o.findings[0].mismatched == 1024


@pytest.mark.parametrize("N", [1, 2])
def test_torch_layer_norm_backward_passes_at_n_1_and_2(N):
    # torch's float32 layer_norm computes xhat as x rstd - mean rstd: at N = 1 not exactly 0 (its
    # grad of w is sqrt(M) x u x 316 off an exact 0), at N = 2 it cancels: both correct
    o = run_point(order.ln_spec("ln", ln, n_min=1), Point("ln", 1, (("M", 1024), ("N", N))), "cpu").outcome
    assert o.status.value == "passed", o.findings


def test_a_weight_gradient_summed_in_any_float32_order_passes_in_float16_fails():
    # 1,024 rows' shares of dw and db added one at a time in a random order (float32 atomics): before
    # the backward's rounding draws, this fixed order failed grad of w in 2 of 128 columns (pairwise
    # peer's budget); summed in float16 (the zoo's layernorm_dw_half_accum) it must still fail
    pt = Point("ln", 1, (("M", 1024), ("N", 128)))
    o = run_point(order.ln_spec("ln", order.layer_norm_atomic(seed=1)), pt, "cpu").outcome
    assert o.status.value == "passed", o.findings
    o = run_point(order.ln_spec("ln", order.layer_norm_atomic(torch.float16, seed=1)), pt, "cpu").outcome
    assert {f.output for f in o.findings} == {"grad of w", "grad of b"}


ABA = (("dims", (("M", 17), ("N", 8))),)


def test_aba_a_kernel_that_varies_run_to_run_passes_when_the_spec_allows_it():
    pt = Point("rowsum", 4, (("M", 256), ("N", 8)), mode="aba", partner=ABA)
    o = run_point(order.rowsum_any, pt, "cpu").outcome
    assert o.status.value == "passed" and o.note.kind.value == "run_to_run"
    assert o.note.facts.outputs == ["out"] and o.note.facts.differ > 0
    assert "judged against the reference" in reason(o) and "deterministic=False" in reason(o)
    # the spec says deterministic: A's own two calls differ before B ran, the kernel's nondeterminism, never B's
    o = run_point(order.rowsum_det, pt, "cpu").outcome
    (f,) = o.findings
    assert f.check.value == "not_bitwise" and f.facts.cause == "run_to_run" and "before B ran" in message(f)


def test_aba_with_grads_holds_the_gradients_bit_for_bit_unless_they_vary():
    pt = Point("ln", 4, (("M", 256), ("N", 8)), mode="aba", partner=ABA)
    o = run_point(order.ln_atomic, pt, "cpu").outcome
    assert o.status.value == "passed" and set(o.note.facts.outputs) == {"grad of w", "grad of b"}
    o = run_point(order.ln_atomic_det, pt, "cpu").outcome
    assert {f.output for f in o.findings} == {"grad of w", "grad of b"}
    assert all(f.facts.cause == "run_to_run" for f in o.findings)
    # torch's own backward is deterministic: held bit for bit after B, and passes
    o = run_point(ln_spec(ln, repetition=kl.Repetition(deterministic=True)), Point("ln", 4, (("M", 37), ("N", 129)), mode="aba",
                                                           partner=(("dims", (("M", 17), ("N", 64))),)), "cpu").outcome
    assert o.status.value == "passed" and o.note is None


def test_jitcache_runs_the_backward_and_allows_run_to_run_variation(monkeypatch):
    from kladder.run.modes.jitcache import REF_ENV
    monkeypatch.setenv(REF_ENV, os.path.join(SPECS, "grads_order.py") + "::ln_atomic")
    pt = Point("ln_atomic", 4, (("M", 64), ("N", 8)), mode="jitcache", partner=ABA)
    o = run_point(order.ln_atomic, pt, "cpu").outcome
    assert o.status.value == "passed", o.findings
    assert o.note.kind.value == "run_to_run" and set(o.note.facts.outputs) == {"grad of w", "grad of b"}
    assert o.note.facts.files is not None


def test_repeat_compares_the_gradients_bit_for_bit():
    pt = Point("ln", 5, (("M", 256), ("N", 8)), mode="repeat", repeat=(("calls", 16),))
    o = run_point(order.ln_atomic_det, pt, "cpu").outcome
    assert o.status.value == "failed" and {f.output for f in o.findings} <= {"grad of w", "grad of b"}
    assert all(f.check.value == "repeats" for f in o.findings)
    assert run_point(order.ln_atomic, pt, "cpu").outcome.status.value == "passed"
    assert run_point(ln_spec(ln, repetition=kl.Repetition(deterministic=True)), pt, "cpu").outcome.status.value == "passed"


def test_repeat_an_atomic_weight_gradient_varying_past_twice_the_default_is_a_warning_not_wrong():
    # 4,096 rows' shares in another float32 order each call: calls differ from the first by more
    # than twice the default (before: 9 of 16 calls "wrong"), while the worst call is right against
    # the reference with its honest budget: nondeterminism, which deterministic=False allows
    pt = Point("ln", 5, (("M", 4096), ("N", 16)), mode="repeat", repeat=(("calls", 16),))
    o = run_point(order.ln_atomic, pt, "cpu").outcome
    assert o.status.value == "passed", o.findings
    assert o.warnings and all(w.check.value == "nondeterministic" and w.facts.wrong == 0 for w in o.warnings)
    assert {w.output for w in o.warnings} <= {"grad of w", "grad of b"}


def test_a_backward_that_writes_its_upstream_gradient_fails_input_changed():
    class Scribbles(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                grads = torch.autograd.grad(ln(*leaves), leaves, g)
            g[-1].zero_()                     # the bug: the grad_output used as scratch
            return grads
    o = run_point(ln_spec(Scribbles.apply), _point(), "cpu").outcome
    (f,) = o.findings
    assert f.check.value == "input_changed" and f.output == "upstream out"
    assert f.pattern.rows == ("one", 36)


def test_a_backward_that_writes_past_its_upstream_gradient_fails_the_guard():
    class Overruns(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                grads = torch.autograd.grad(ln(*leaves), leaves, g)
            past = g.as_strided((g.numel() + 3,), (1,), g.storage_offset())
            past[g.numel():] = 0.0            # the bug: 3 floats past the end of grad_output
            return grads
    o = run_point(ln_spec(Overruns.apply), _point(), "cpu").outcome
    assert [(f.check.value, f.output) for f in o.findings] == [("guard", "upstream out")]


def test_graph_replays_copy_fresh_upstream_gradients_into_the_captured_buffers():
    from kladder.run.harness import Backward
    from kladder.run.modes.graph import _new_upstream
    static = Backward({"out": torch.zeros(1, 5).expand(3, 5)}, ref_extra=[1], snapshot={"out": 0})
    fresh = Backward({"out": torch.arange(5.0)[None].expand(3, 5)}, ref_extra=[2], snapshot={"out": 1})
    _new_upstream(static, fresh)
    assert torch.equal(static.upstream["out"], fresh.upstream["out"]) and static.ref_extra == [2]
    static = Backward({"out": torch.zeros(4, 6).t()})
    fresh = Backward({"out": torch.randn(6, 4)})
    _new_upstream(static, fresh)
    assert torch.equal(static.upstream["out"], fresh.upstream["out"])


def test_the_sanitizers_child_runs_the_backward():
    from kladder.run.modes.sanitize import KERNEL_RAISED, child
    # the point as the sanitize mode sends it (run/modes/sanitize._run: an eager point), and as given
    for mode in ("eager", "sanitize"):
        pt = Point("raises_in_backward", 5, (("M", 4), ("N", 8)), mode=mode)
        assert child([os.path.join(SPECS, "grads_order.py") + "::raises_in_backward", "cpu", pt.to_json()]) == KERNEL_RAISED


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs and graphed repetition need a GPU")


def _stale_upstream():
    """A backward that keeps the first upstream gradient it saw (per shape) and reuses it: right in
    every eager call on the first inputs, frozen into a CUDA graph's capture."""
    seen = {}

    class Stale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            return ln(x, w, b)

        @staticmethod
        def backward(ctx, g):
            kept = seen.setdefault(tuple(g.shape), g.clone())     # the bug: a host-side cache of grad_output
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in ctx.saved_tensors]
                return torch.autograd.grad(ln(*leaves), leaves, kept)
    return Stale.apply


@CUDA
def test_graph_mode_captures_the_backward_and_replays_it_with_new_upstream_gradients():
    pt = Point("ln", 4, (("M", 37), ("N", 129)), mode="graph")
    o = run_point(ln_spec(ln), pt, "cuda").outcome
    assert o.status.value == "passed", o.findings
    o = run_point(ln_spec(_stale_upstream()), pt, "cuda").outcome
    assert o.status.value == "failed" and {f.output for f in o.findings} >= {"grad of x"}
    assert all(f.call.startswith("replay") for f in o.findings)


@CUDA
def test_graphed_repetition_compares_the_gradients_bit_for_bit_on_cuda():
    # the atomic kernel's order is host-side: each captured call has its own, frozen into the graph
    pt = Point("ln", 5, (("M", 64), ("N", 8)), mode="repeat", repeat=(("calls", 64),))
    assert run_point(ln_spec(ln, repetition=kl.Repetition(deterministic=True)), pt, "cuda").outcome.status.value == "passed"
    o = run_point(order.ln_atomic_det, pt, "cuda").outcome
    assert o.status.value == "failed" and {f.output for f in o.findings} <= {"grad of w", "grad of b"}
