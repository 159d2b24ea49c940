"""Rungs 2 and 3 in process: each value kind, layout, padding fill, chain, invariant, NaN
policy and the bias warning, on small plain-torch kernels; each generator proven by a kernel
with the bug it exists for, and by a correct kernel it must pass."""
import dataclasses
import math

import pytest
import torch

import kladder as kl
from kladder.gen.fill import SLICE_PAD, fill_kind, layout_plan
from kladder.gen.gaps import contracts, values
from kladder.report.words import message, reason
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET


def outcomes(spec, gen_points):
    return {p.id: run_point(spec, p, "cpu").outcome for p in gen_points}


def rowscale(x, w):
    return (x.float() * w).to(x.dtype)


def rowscale_ref(x, w):
    return x * w


def make(kernel, reference=rowscale_ref, **kw):
    args = kw.pop("args", {"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]), "w": kl.Tensor("N", dtype="float32")})
    return kl.Spec("t", kernel=kernel, reference=reference, args=args,
                   returns=kw.pop("returns", kl.Tensor("M N", like="x")),
                   dims=kw.pop("dims", {"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=32)}), **kw)


# ------------------------------------------------------------------ value kinds
def _gen():
    return torch.Generator().manual_seed(7)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_each_value_kind_holds_what_it_says(dtype):
    dt = getattr(torch, dtype)
    t = torch.empty(16, 64, dtype=dt)
    fill_kind(t, "peaked/30", dtype, _gen())
    assert t.float().std() > 15
    fill_kind(t, "ties", dtype, _gen())
    for row in t.float():
        spread = (row.max() - row.min()) / row.abs().max()
        assert 0 < spread <= 4 * torch.finfo(dt).eps          # a few ulps apart, not equal
    assert len({float(r[0]) for r in t}) > 1                     # rows differ
    fill_kind(t, "identical", dtype, _gen())
    assert bool((t == t[:1]).all())
    fill_kind(t, "distinct", dtype, _gen())
    assert len(set(t[0].float().abs().tolist())) > 32 and bool((t == t[:1]).all()) and t.abs().min() >= 0.99
    fill_kind(t, "tiny", dtype, _gen())
    tiny = (t.float().abs() < torch.finfo(dt).tiny * 1.01)
    assert 0.15 < tiny.float().mean() < 0.35
    fill_kind(t, "huge", dtype, _gen())
    big = min(torch.finfo(dt).max, math.sqrt(torch.finfo(torch.float32).max / 64)) / 2
    assert t.float().abs().max() >= 0.6 * big and t.isfinite().all()
    fill_kind(t, "nonfinite", dtype, _gen())
    assert t.isnan().any() and t.isinf().any() and int((~t.isfinite()).sum()) == 4
    fill_kind(t, "masked", dtype, _gen())
    assert bool((t[0] == -math.inf).all()) and bool(t[1].isfinite().all())
    fill_kind(t, "ones", dtype, _gen())
    assert bool((t == 1).all())


def test_lengths_cover_every_edge_and_chunk():
    t = torch.empty(32, dtype=torch.int32)
    fill_kind(t, "lengths", "int32", _gen(), rng=(1, 600), chunks=(256,))
    assert {1, 2, 255, 256, 257, 599, 600} <= set(t.tolist())
    assert t.min() >= 1 and t.max() <= 600


def test_ints_stay_in_their_declared_range_at_every_rung():
    spec = make(lambda x, lens: x.clone(), reference=lambda x, lens: x,
                args={"x": kl.Tensor("M N", dtype="float32"), "lens": kl.Tensor("M", dtype="int32", range=(3, "N"))},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(3, 256, tile=32)})
    from kladder.gen.materialize import materialize
    for p in list(values.points(spec, CPU_BUDGET))[:6]:
        lens = materialize(spec, p, "cpu").args[1]
        assert lens.min() >= 3 and lens.max() <= p.sizes["N"]


# ------------------------------------------------------------------ rung 2 points
def test_rung2_gives_each_input_each_kind_at_a_tail_and_a_long_row():
    spec = make(rowscale)
    pts = list(values.points(spec, CPU_BUDGET))
    kinds = {(dict(p.values).popitem()) for p in pts}
    for name in ("x", "w"):
        for k in ("peaked/3", "peaked/10", "peaked/30", "ties", "distinct", "tiny", "huge"):
            assert (name, k) in kinds
    assert ("x", "identical") in kinds and ("w", "identical") not in kinds   # one row: nothing to repeat
    assert {p.sizes["N"] for p in pts} == {65, 256}      # 2 tiles + 1, and the longest row that fits
    assert all(p.why and p.rung == 2 for p in pts)


def test_chunks_put_lengths_on_both_sides():
    spec = make(rowscale, dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 1024, tile=32, chunks=[256])})
    got = sorted(p.sizes["N"] for p in values.points(spec, CPU_BUDGET) if p.kind == "chunk" and "bfloat16" in p.id)
    assert got == [1, 255, 256, 257]


def test_rungs_2_and_3_sweep_every_declared_dtype():
    spec = make(rowscale)
    for gen in (values, contracts):
        seen = {dict(p.dtypes).get("x") for p in gen.points(spec, CPU_BUDGET) if p.kind != "independence"}
        assert seen == {"bfloat16", "float16"}, gen.__name__


# ------------------------------------------------------------------ caught / passed at rung 2
def tie_topk(scores):
    # packs the column index into the low 6 mantissa bits to sort once (router_tie_pack's mechanism)
    bits = scores.float().view(torch.int32)
    packed = ((bits & ~63) | torch.arange(scores.shape[-1], dtype=torch.int32)).view(torch.float32)
    return packed.argmax(-1)


def test_a_tie_breaking_bug_is_caught_by_ties_and_missed_by_normal_values():
    spec = make(tie_topk, reference=lambda s: s.argmax(-1),
                args={"s": kl.Tensor("M E", dtype="float32")}, returns=kl.Tensor("M", dtype="int64"),
                dims={"M": kl.Dim(1, 64, tile=16), "E": kl.Dim(2, 64, tile=8)})
    res = outcomes(spec, values.points(spec, CPU_BUDGET))
    failed = {i for i, o in res.items() if o.status == "failed"}
    assert any("ties" in i for i in failed)
    # "huge" repeats a few magnitudes: exact ties, where the packing picks the last index and
    # argmax the first; peaked, distinct and tiny values are all distinct within 64 ulps
    assert not any(k in i for i in failed for k in ("peaked", "distinct", "identical"))
    from kladder.gen.gaps import shapes
    assert all(o.status == "passed" for o in outcomes(spec, shapes.points(spec, CPU_BUDGET)).values())


def test_correct_kernels_pass_every_value_kind():
    spec = make(rowscale, nonfinite="propagate")
    res = outcomes(spec, values.points(spec, CPU_BUDGET))
    bad = {i: message(o.findings[0]) for i, o in res.items() if o.status != "passed"}
    assert not bad
    assert any("nonfinite" in i for i in res)


def test_nonfinite_policies():
    def zeroes_nan(x, w):
        return torch.nan_to_num(rowscale(x, w), nan=0.0)
    prop = make(zeroes_nan, nonfinite="propagate")
    pts = [p for p in values.points(prop, CPU_BUDGET) if "nonfinite" in p.id and "x:" in p.id]
    assert run_point(prop, pts[0], "cpu").outcome.status == "failed"
    ignore = make(lambda x, w: torch.nan_to_num(rowscale(x, w), nan=0.0, posinf=0.0, neginf=0.0), nonfinite="ignore")
    assert run_point(ignore, pts[0], "cpu").outcome.status == "passed"
    raising = make(rowscale, nonfinite="raise")
    o = run_point(raising, pts[0], "cpu").outcome
    assert o.status == "failed" and o.findings[0].check == "nonfinite"

    def checks(x, w):
        if not x.isfinite().all():
            raise ValueError("x holds NaN/Inf")
        return rowscale(x, w)
    assert run_point(make(checks, nonfinite="raise"), pts[0], "cpu").outcome.status == "passed"


def test_overflow_to_inf_is_the_right_answer():
    def gemv(x, w):
        return (x.float() @ w).to(x.dtype)[:, None].expand(-1, x.shape[1]).contiguous()
    spec = make(gemv, reference=lambda x, w: (x @ w)[:, None].expand(-1, x.shape[1]),
                args={"x": kl.Tensor("M N", dtype="float16"), "w": kl.Tensor("N", dtype="float32")})
    pts = [p for p in values.points(spec, CPU_BUDGET) if p.id.endswith("x:huge")]
    assert pts and all(run_point(spec, p, "cpu").outcome.status == "passed" for p in pts)


def test_invariants_everywhere_and_with_their_own_values():
    def weighted_avg(p, v):          # softmax(p) @ v per row, but drops a little mass
        a = torch.softmax(p.float(), -1)
        a = torch.where(a < 0.01, torch.zeros_like(a), a)
        return (a @ v.float()).to(p.dtype)
    inv = kl.Invariant("with V = 1 the output is 1", lambda i, o: (o["out"].float() - 1).abs() < 1e-2, values={"v": "ones"})
    spec = kl.Spec("avg", kernel=weighted_avg, reference=lambda p, v: torch.softmax(p, -1) @ v,
                   args={"p": kl.Tensor("M S", dtype="float32"), "v": kl.Tensor("S D", dtype="float32")},
                   returns=kl.Tensor("M D", like="p"), tolerance=(0.5, 0.5), invariants=[inv],
                   dims={"M": kl.Dim(1, 16), "S": kl.Dim(1, 512, tile=64), "D": kl.Dim(1, 16)})
    pts = [p for p in values.points(spec, CPU_BUDGET) if p.kind == "invariant"]
    assert pts and all(dict(p.values)["v"] == "ones" for p in pts)
    res = outcomes(spec, pts)
    assert any(o.status == "failed" and o.findings[0].check == "invariant" for o in res.values())


def test_a_bias_inside_the_tolerance_is_a_warning_not_a_failure():
    # 2^-12 relative: a quarter of a float16 ulp, inside its rtol (1e-3)
    def biased_kernel(x, w):
        return ((x.float() * w) * (1 + 2 ** -12)).to(x.dtype)

    def with_dtype(kernel, dtype):
        return make(kernel, args={"x": kl.Tensor("M N", dtype=dtype), "w": kl.Tensor("N", dtype="float32")})
    from kladder.gen.gaps import shapes
    biased = with_dtype(biased_kernel, "float16")
    # the sign test counts rows (a row's elements share its roundings): 64 rows at least
    res = outcomes(biased, [p for p in shapes.points(biased, CPU_BUDGET) if p.sizes["M"] == 64][:6])
    assert all(o.status == "passed" for o in res.values())
    assert any(o.warnings and "leans away from zero" in message(o.warnings[0]) for o in res.values())
    few = outcomes(biased, [p for p in shapes.points(biased, CPU_BUDGET) if p.sizes["M"] < 64][:6])
    assert not any(o.warnings for o in few.values())
    fair = outcomes(make(rowscale), list(values.points(make(rowscale), CPU_BUDGET)))
    assert not [o.warnings for o in fair.values() if o.warnings]
    # under Triton's interpreter (it truncates float32 -> bfloat16) bfloat16 outputs are not judged
    bf = with_dtype(biased_kernel, "bfloat16")
    assert not any(o.warnings for o in outcomes(bf, list(shapes.points(bf, CPU_BUDGET))[:6]).values())


# ------------------------------------------------------------------ layouts
@pytest.mark.parametrize("layout", ["sliced", "every_other", "transposed", "offset", "shifted", "broadcast", "channels_last"])
def test_layout_plans_give_the_logical_shape_in_the_named_layout(layout):
    shape = (2, 3, 5, 7) if layout == "channels_last" else (5, 7)
    size, stride, offset, length = layout_plan(shape, layout)
    base = torch.arange(length, dtype=torch.float32)
    v = base.as_strided(size, stride, offset)
    assert tuple(v.shape) == shape
    assert {"sliced": not v.is_contiguous() and v.stride(0) == 7 + SLICE_PAD,
            "every_other": v.stride(-1) == 2, "transposed": v.stride(0) == 1,
            "offset": offset == 64 and v.is_contiguous(), "shifted": offset == 1,
            "broadcast": v.stride(0) == 0,
            "channels_last": v.is_contiguous(memory_format=torch.channels_last)}[layout]


def assumes_contiguous(x, w):
    flat = x.as_strided((x.numel(),), (1,), x.storage_offset())   # rows read as if packed
    return (flat.view(x.shape).float() * w).to(x.dtype)


def test_rung3_catches_a_kernel_that_assumes_contiguous_rows_and_passes_a_correct_one():
    bad = make(assumes_contiguous)
    res = outcomes(bad, contracts.points(bad, CPU_BUDGET))
    failed = {i for i, o in res.items() if o.status == "failed"}
    assert any("x:sliced" in i for i in failed) and any("x:transposed" in i for i in failed)
    assert not any("x:offset" in i for i in failed)                     # contiguous with an offset: right
    good = make(rowscale)
    res = outcomes(good, contracts.points(good, CPU_BUDGET))
    assert all(o.status == "passed" for o in res.values()), {i: o.findings for i, o in res.items() if o.status != "passed"}
    assert any(p.kind == "dtype" for p in contracts.points(good, CPU_BUDGET))


def test_a_kernel_that_refuses_a_layout_loudly_is_skipped_not_failed():
    def strict(x, w):
        if not x.is_contiguous():
            raise ValueError("x must be contiguous")
        return rowscale(x, w)
    res = outcomes(make(strict), [p for p in contracts.points(make(strict), CPU_BUDGET) if p.kind == "layout"])
    refused = [o for o in res.values() if o.status == "skipped"]
    assert refused and all(reason(o).startswith("refused: ") for o in refused)
    assert not [o for o in res.values() if o.status == "failed"]


# ------------------------------------------------------------------ padding
def dequant(q, s):
    """q: [M, 14] int8 data, s: [M, 16] uint8 e8m0 scale bytes, 14 valid then padding."""
    return q.float() * torch.exp2(s[:, :14].float() - 127)


def dequant_reads_padding(q, s):
    scale = torch.exp2(s.float() - 127)
    scale = torch.where(s == 255, torch.full_like(scale, math.nan), scale)   # 0xFF is NaN in e8m0
    rowmax = scale.amax(-1, keepdim=True)                                     # reads all 16 bytes
    return q.float() * scale[:, :14] * (rowmax / rowmax)


def test_padding_poison_catches_a_read_past_the_valid_bytes():
    def mk(k):
        return kl.Spec("deq", kernel=k, reference=lambda q, s: q.double() * torch.exp2(s[:, :14].double() - 127),
                       args={"q": kl.Tensor("M 14", dtype="int8"), "s": kl.Tensor("M 16", dtype="uint8", valid=14, range=(117, 137))},
                       returns=kl.Tensor("M 14", dtype="float32"), dims={"M": kl.Dim(1, 64, tile=8)})
    bad, good = mk(dequant_reads_padding), mk(dequant)
    pts = [p for p in contracts.points(bad, CPU_BUDGET) if p.kind == "padding"]
    assert {dict(p.values)["s"] for p in pts} == {"pad:0xFF", "pad:0x7F", "pad:0x80", "pad:bytes", "pad:random"}
    res = outcomes(bad, pts)
    assert {i for i, o in res.items() if o.status == "failed"} >= {p.id for p in pts if "0xFF" in p.id}
    assert any(f.check == "padding" for o in res.values() for f in o.findings)
    # rungs 1 and 2 fill padding with zeros, as a unit test does: the bug does not show there
    from kladder.gen.gaps import shapes
    assert all(o.status == "passed" for o in outcomes(bad, list(shapes.points(bad, CPU_BUDGET))[:8]).values())
    assert all(o.status == "passed" for o in outcomes(good, pts).values())


# ------------------------------------------------------------------ chains
def quant_interleaved(x):
    q = x.round().clamp(-127, 127).to(torch.int8)
    s = torch.ones(x.shape[0], 2)
    s[:, 1] = 2.0
    return q, s.t().contiguous()          # writes scales column-major (interleaved)


def consume_rowmajor(q, s):
    return q.float() * s.reshape(q.shape[0], 2)[:, :1]   # reads row-major


def consume_colmajor(q, s):
    return q.float() * s.reshape(2, q.shape[0]).t()[:, :1]


def test_a_chain_feeds_each_link_the_real_output_of_the_link_before():
    def mk(consumer):
        return kl.Spec("qchain", kernel=kl.chain(kl.Link(quant_interleaved, outputs=("q", "s")), kl.Link(consumer, outputs=("y",))),
                       reference=lambda x: x.round().clamp(-127, 127), args={"x": kl.Tensor("M N", dtype="float32")},
                       returns=kl.Tensor("M N", dtype="float32"), dims={"M": kl.Dim(2, 32, tile=8), "N": kl.Dim(1, 32)})
    from kladder.gen.gaps import shapes
    bad, good = mk(consume_rowmajor), mk(consume_colmajor)
    assert any(o.status == "failed" for o in outcomes(bad, list(shapes.points(bad, CPU_BUDGET))[:6]).values())
    assert all(o.status == "passed" for o in outcomes(good, list(shapes.points(good, CPU_BUDGET))[:6]).values())
    assert bad.kernel.__name__ == "quant_interleaved -> consume_rowmajor"


def test_a_chain_names_a_missing_input():
    c = kl.chain(kl.Link(lambda nothere: nothere, outputs=("y",))).bound(["x"])
    with pytest.raises(TypeError, match="nothing named 'nothere'"):
        c(torch.ones(1))


# ------------------------------------------------------------------ reference independence
def test_a_reference_that_runs_the_kernel_is_flagged():
    def lib_entry(x, w):                      # "the library's public op": the same kernel
        return rowscale(x, w)
    bad = make(rowscale, reference=lambda x, w: lib_entry(x, w).double())
    p = next(p for p in contracts.points(bad, CPU_BUDGET) if p.kind == "independence")
    o = run_point(bad, p, "cpu").outcome
    assert o.status == "broken" and not o.findings               # the spec's problem, not a failure of the kernel
    assert o.note.kind == "reference_not_independent" and any("rowscale" in f for f in o.note.facts.functions)
    from kladder.report.words import note_text
    assert "is not independent of the kernel under test" in note_text(o.note) and "rowscale" in note_text(o.note)
    assert run_point(make(rowscale), p, "cpu").outcome.status == "passed"


# ------------------------------------------------------------------ capture and replay
def test_capture_dedups_keeps_layout_and_replays_as_points(tmp_path):
    import sys
    mod = sys.modules[__name__]
    x = torch.randn(8, 48)[:, :40]                       # a sliced view, as a model hands it
    w = torch.randn(40)
    with kl.capture((mod, "rowscale"), to=str(tmp_path)) as rec:
        for _ in range(3):
            mod.rowscale(x.bfloat16(), w)                # same shapes: one entry
        mod.rowscale(x[:, :32].bfloat16(), w[:32])
        mod.rowscale(x, w)                               # float32: a dtype the spec does not declare
    assert mod.rowscale is rowscale                      # restored
    assert rec.calls == 5 and len(rec.entries) == 3
    spec = make(assumes_contiguous)
    from kladder.gen.capturing import read_manifest, replay_points
    assert read_manifest(str(tmp_path))["recorded"] == 3
    with pytest.raises(ValueError, match="float32; the spec declares bfloat16, float16"):
        list(replay_points(spec, str(tmp_path), 2))


def test_replayed_points_keep_strides_and_catch_a_layout_bug(tmp_path):
    import sys
    mod = sys.modules[__name__]
    x = torch.randn(8, 48).bfloat16()[:, :40]
    with kl.capture((mod, "rowscale"), to=str(tmp_path)):
        mod.rowscale(x, torch.randn(40))
    from kladder.gen.capturing import replay_points
    from kladder.gen.materialize import materialize
    bad, good = make(assumes_contiguous), make(rowscale)
    (p,) = replay_points(bad, str(tmp_path), 2)
    assert p.sizes == {"M": 8, "N": 40} and p.kind == "captured"
    inputs = materialize(bad, p, "cpu")
    assert inputs.args[0].stride() == (48, 1) and torch.equal(inputs.args[0], x)
    assert run_point(bad, p, "cpu").outcome.status == "failed"
    assert run_point(good, dataclasses.replace(p, spec="t"), "cpu").outcome.status == "passed"
