"""gen/rows.py: which rows a big point's reference sees. Fat rows (RoPE's 2 GiB point: 16 rows of
2^26 elements) are sampled by an element budget, not 64 at a time (64 draws of 16 rows were all of
them, and the float64 reference of the whole 2 GiB ran on the host); a backward samples rows where
every gradient it judges is row-wise, and sees every row where one sums over them (a weight's)."""
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.gen import rows
from kladder.gen.rows import SAMPLED_ELEMENTS, SAMPLED_ROWS, plan_rows
from kladder.run.trial import run_point


def _fat():
    return kl.Spec("fat", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("B N", dtype="bfloat16")},
                   returns=kl.Tensor("B N", like="x"), dims={"B": kl.Dim(1, 64), "N": kl.Dim(1, 1 << 27)}, rows="B")


def test_fat_rows_are_sampled_within_the_element_budget_and_keep_every_boundary():
    pt = Point("fat", 1, (("B", 17), ("N", 1 << 26)))               # 17 rows of 128 MiB: 2.125 GiB
    _, ids, checked = plan_rows(_fat(), pt, "cpu")
    assert checked is not None and checked.rows == 17
    assert checked.sampled == max(1, SAMPLED_ELEMENTS >> 26) == 1
    assert {0, 15, 16} <= set(ids)              # the first row, the rows either side of byte 2^31 (row 16), the last
    assert len(ids) <= 4                        # those, and one sampled row: not all 17


def test_thin_rows_keep_the_whole_sample():
    spec = kl.Spec("thin", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="bfloat16")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 1 << 22), "N": kl.Dim(1, 16384)}, rows="M")
    _, ids, checked = plan_rows(spec, Point("thin", 1, (("M", 131073), ("N", 16384))), "cpu")
    assert checked.sampled == SAMPLED_ROWS and len(ids) < 200


class _Scale(torch.autograd.Function):
    """y = 3 x w; its backward writes dx into dy's buffer and returns it (liger's RoPE: no new buffer);
    `bad_row`: that row of dx off by one."""
    bad_row = None

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        return x * 3 * w

    @classmethod
    def backward(cls, ctx, dy):
        (w,) = ctx.saved_tensors
        dx = dy.mul_(3 * w)
        if cls.bad_row is not None:
            dx[cls.bad_row] += 1.0
        return dx, None


class _LastRowWrong(_Scale):
    bad_row = -1


def _scale_spec(kernel, grads=("x",), overwritten=True):
    args = {"x": kl.Tensor("M N", dtype="float32"), "w": kl.Tensor("N", like="x")}
    return kl.Spec("scale3", kernel=kernel, reference=lambda x, w: x * 3 * w, grads=list(grads), args=args,
                   returns=kl.Tensor("M N", like="x", grad_overwritten=overwritten),
                   dims={"M": kl.Dim(1, 512), "N": kl.Dim(1, 64)}, rows="M")


def test_a_backward_samples_rows_only_where_every_gradient_is_row_wise(monkeypatch):
    monkeypatch.setattr(rows, "is_big", lambda spec, sizes: True)
    pt = Point("scale3", 1, (("M", 300), ("N", 8)))
    select, ids, checked = plan_rows(_scale_spec(_Scale.apply), pt, "cpu", backward=True)
    assert checked is not None and ("out", "grad of x") in select and ("out", "out") in select
    assert 0 < len(ids) < 300
    # the gradient of w sums over every row: the backward sees them all
    assert plan_rows(_scale_spec(_Scale.apply, grads=("x", "w")), pt, "cpu", backward=True) == ({}, [], None)
    # the forward alone samples rows whatever the gradients are
    assert plan_rows(_scale_spec(_Scale.apply, grads=("x", "w")), pt, "cpu")[2] is not None


def test_a_sampled_backward_passes_a_correct_kernel_and_locates_a_wrong_row_by_its_own_id(monkeypatch):
    monkeypatch.setattr(rows, "is_big", lambda spec, sizes: True)
    pt = Point("scale3", 1, (("M", 300), ("N", 8)))
    for mode in ("eager", "accumulate"):
        o = run_point(_scale_spec(_Scale.apply), Point("scale3", 1, pt.dims, mode=mode), "cpu").outcome
        assert o.status == "passed", (mode, o.findings)
        assert o.rows is not None and o.rows.checked < 300
    o = run_point(_scale_spec(_LastRowWrong.apply), pt, "cpu").outcome
    (f,) = [f for f in o.findings if f.output == "grad of x"]
    assert o.status == "failed" and f.pattern.rows == ("one", 299), f.pattern     # its own id, not its place in the sample


def test_the_references_need_counts_a_sampled_gradient_by_its_rows(monkeypatch):
    from kladder.run import harness
    monkeypatch.setattr(rows, "is_big", lambda spec, sizes: True)
    spec, pt = _scale_spec(_Scale.apply), Point("scale3", 1, (("M", 300), ("N", 8)))
    select, ids, _ = plan_rows(spec, pt, "cpu", backward=True)
    assert harness._selected_numel(spec, pt, "grad of x", select) == len(ids) * 8
    assert harness._selected_numel(spec, pt, "grad of x", {}) == 300 * 8
