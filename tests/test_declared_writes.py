"""A mutation by design can be declared (issue 38, item 5): a backward that overwrites the upstream
gradient it is given (kl.Tensor(..., grad_overwritten=True) on the returned tensor, as liger's
RoPE backward does), a write only under some configs (mutated={"in_place": True}) or at some
points (a predicate of the point: SwiGLU's backward writes its gradients into its inputs only
when they are contiguous), a write in the backward (mutated="backward"). Declared writes are
judged; undeclared ones are still caught as input_changed."""
import pytest
import torch

import kladder as kl
from kladder.gen.gaps import contracts, shapes, values
from kladder.core.problems import SpecError
from kladder.report.words import message
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET


def _run(spec, rungs=(1, 2, 3), keep=lambda p: True):
    gens = {1: shapes, 2: values, 3: contracts}
    pts = [p for r in rungs for p in gens[r].points(spec, CPU_BUDGET) if keep(p)]
    return {p.id: run_point(spec, p, "cpu").outcome for p in pts}


def _failed(res):
    return {i: [(f.check, f.output, f.facts) for f in o.findings] for i, o in res.items() if o.status != "passed"
            and o.status != "skipped"}


# ------------------------------------------------------------------ the backward overwrites its upstream gradient
class _Scale(torch.autograd.Function):
    """y = 3x; its backward writes dx into dy's buffer and returns it (liger's RoPE: no new buffer)."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, dy):
        return dy.mul_(3)


class _ScaleWrong(_Scale):
    @staticmethod
    def backward(ctx, dy):
        dx = dy * 3
        dy.fill_(7)                        # scribbles on the upstream gradient it does not return
        return dx


def scale(x):
    return _Scale.apply(x)


def scale_wrong(x):
    return _ScaleWrong.apply(x)


def _scale_spec(kernel, overwritten):
    return kl.Spec("scale3", kernel=kernel, reference=lambda x: x * 3, grads=["x"],
                   args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x", grad_overwritten=overwritten),
                   dims={"M": kl.Dim(1, 16, tile=4), "N": kl.Dim(1, 64, tile=16)})


def test_a_declared_upstream_gradient_write_passes_every_point():
    res = _run(_scale_spec(scale, True))
    assert not _failed(res), _failed(res)
    assert any(o.point.mode == "accumulate" for o in res.values())          # backward twice, a fresh copy first


def test_the_same_kernel_without_the_declaration_fails_input_changed():
    res = _run(_scale_spec(scale, False), rungs=(1,))
    bad = _failed(res)
    assert bad and all(any(c == "input_changed" and out == "upstream out" for c, out, _ in fs) for fs in bad.values())
    o = next(o for o in res.values() if o.status == "failed")
    assert "grad_overwritten=True" in message(o.findings[0])


def test_a_declared_write_that_leaves_no_gradient_is_still_a_finding():
    res = _run(_scale_spec(scale_wrong, True), rungs=(1,))
    bad = _failed(res)
    assert bad and all(any(c == "input_changed" and f.declared == "gradient" for c, _, f in fs) for fs in bad.values())
    o = next(o for o in res.values() if o.status == "failed")
    assert "hold neither its data as passed nor a gradient" in message(o.findings[0])


# ------------------------------------------------------------------ a write in the backward, only when contiguous
class _Mul(torch.autograd.Function):
    """y = a * b; the backward writes da into a and db into b when both are contiguous (SwiGLU's
    in-place backward), and allocates them otherwise."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, dy):
        a, b = ctx.saved_tensors
        da, db = dy * b, dy * a
        if a.is_contiguous() and b.is_contiguous():
            a.copy_(da)
            b.copy_(db)
            return a, b
        return da, db


def mul(a, b):
    return _Mul.apply(a, b)


CONTIGUOUS = ("offset", "shifted")                  # rung 3's layouts that stay contiguous (a view into a buffer)


def contiguous_only(p):
    """The inputs are written in the backward only where rung 3 leaves both of them contiguous."""
    return "backward" if all(lay in CONTIGUOUS for n, lay in p.layouts if n in ("a", "b")) else False


def _mul_spec(mutated):
    return kl.Spec("mul", kernel=mul, reference=lambda a, b: a * b, grads=["a", "b"],
                   args={"a": kl.Tensor("M N", dtype="float32", mutated=mutated),
                         "b": kl.Tensor("M N", dtype="float32", mutated=mutated)},
                   returns=kl.Tensor("M N", like="a"), dims={"M": kl.Dim(1, 16, tile=4), "N": kl.Dim(1, 64, tile=16)})


def test_a_layout_dependent_declared_write_passes_and_undeclared_fails():
    laid_out = lambda p: p.rung != 3 or p.kind in ("layout", "accumulate")
    res = _run(_mul_spec(contiguous_only), keep=laid_out)
    assert not _failed(res), _failed(res)
    assert any(o.point.layouts and o.status == "passed" for o in res.values())      # not written there: unchanged
    skipped = [o for o in res.values() if o.point.mode == "accumulate"]
    assert skipped and all(o.status == "skipped" and o.note.facts.when == "accumulate" for o in skipped)
    res = _run(_mul_spec(False), rungs=(1, 3), keep=laid_out)
    bad = _failed(res)
    assert bad and all(contiguous_only(res[i].point) for i in bad)            # written only where contiguous
    # (undeclared, the accumulation point also fails its values: the second backward reads what the first wrote)
    assert all(any(c == "input_changed" and out in ("a", "b") for c, out, _ in fs) for i, fs in bad.items()
               if res[i].point.mode != "accumulate")


# ------------------------------------------------------------------ a forward write only under a config
def inplace_double(x, in_place=False):
    return x.mul_(2) if in_place else x * 2


def always_double(x, in_place=False):
    x.mul_(2)                                      # writes its input whatever in_place says
    return x.clone() if not in_place else x


def double_ref(x):
    return x.mul_(2)                               # the reference writes its own copy, as the kernel may


def _double_spec(kernel, mutated):
    return kl.Spec("double", kernel=kernel, reference=double_ref, configs=[{"in_place": False}, {"in_place": True}],
                   args={"x": kl.Tensor("M N", dtype="float32", mutated=mutated)},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 16, tile=4), "N": kl.Dim(1, 64, tile=16)})


def test_a_config_dependent_write_is_declared_by_the_configs_keywords():
    res = _run(_double_spec(inplace_double, {"in_place": True}), rungs=(1,))
    assert not _failed(res), _failed(res)
    res = _run(_double_spec(always_double, {"in_place": True}), rungs=(1,))
    bad = _failed(res)
    assert bad and all(any(c == "input_changed" for c, _, _ in fs) for fs in bad.values())
    assert all(res[i].point.kwargs.get("in_place") is not True for i in bad)          # undeclared there
    assert any(o.point.kwargs.get("in_place") is True and o.status == "passed" for o in res.values())


# ------------------------------------------------------------------ bad declarations: field, value, fix
@pytest.mark.parametrize("build, field, fix", [
    (lambda: _scale_spec(scale, "yes"), "grad_overwritten", "give True on an output whose upstream gradient"),
    (lambda: kl.Spec("s", kernel=scale, reference=lambda x: 3 * x, args={"x": kl.Tensor("N", dtype="float32")},
                     returns=kl.Tensor("N", like="x", grad_overwritten=True), dims={"N": kl.Dim(1, 8)}),
     "grad_overwritten", "Spec(grads=['x', ...])"),
    (lambda: kl.Spec("s", kernel=scale, reference=lambda x: 3 * x, grads=["x"],
                     args={"x": kl.Tensor("N", dtype="float32", grad_overwritten=True)},
                     returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)}), "grad_overwritten", "move it to the output"),
    (lambda: kl.Spec("s", kernel=scale, reference=lambda x: 3 * x, args={"x": kl.Tensor("N", dtype="float32",
                                                                                        mutated="backward")},
                     returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)}), "mutated", "add 'x' to Spec(grads=[...])"),
    (lambda: _double_spec(inplace_double, {"inplace": True}), "mutated", "name the launcher's keywords its configs set"),
])
def test_a_bad_declaration_names_the_field_the_value_and_the_fix(build, field, fix):
    with pytest.raises(SpecError) as e:
        build()
    assert field in str(e.value) and fix in str(e.value)
