"""What authors know, said plainly (issue 34 item 2): each feature's generator, judgement and
load-time refusal on small CPU kernels and torch's own ops."""
import os
import sys

import pytest
import torch

import kladder as kl
from kladder.checks import dispatch as dispatch_check
from kladder.gen.gaps import toolchain
from kladder.core.outcome import Check, Status
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET
from kladder.core.spec import predicate_edges

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "specs"))
import gated as gx  # noqa: E402  (tests/specs/gated.py)


# ---------------------------------------------------------------------------- a gate over sizes in `when`
def _named(spec):
    return sorted({dict(p.dims)["N"] for p in toolchain.points(spec, CPU_BUDGET) if "must run" in p.why})


def test_a_predicate_gets_points_at_its_edges_not_at_every_size():
    assert predicate_edges(kl.Dim(1, 1 << 16), range(1, 257)) == (1, 256, 257)
    assert predicate_edges(kl.Dim(1, 1 << 16), lambda n: n > 256) == (256, 257, 65536)
    assert predicate_edges(kl.Dim(8, 100), range(1, 10)) == (8, 9, 10)          # within the dim's range only
    assert predicate_edges(kl.Dim(sizes=[8, 16, 64]), lambda n: n >= 16) == (8, 16, 64)
    # multiples: the first and the last edges of a periodic gate, never all 2,048 of them
    assert predicate_edges(kl.Dim(1, 1 << 16), range(64, (1 << 16) + 1, 64)) == \
        (63, 64, 65, 127, 128, 129, 65471, 65472, 65473, 65535, 65536)
    # a dim too wide to ask at every size: sampled near powers of two, bisected to the edge
    assert predicate_edges(kl.Dim(1, 1 << 31), lambda n: n > 3_000_000) == (3_000_000, 3_000_001, 1 << 31)
    pts = list(toolchain.points(gx.gated, CPU_BUDGET))
    assert _named(gx.gated) == [1, 256, 257, 65536]
    assert len(pts) == 12                                  # the gate listed size by size: 131,075 points
    outside = [p for p in pts if "just outside" in p.why]
    assert {dict(p.dims)["N"] for p in outside} == {257}   # 256 is also inside the short path's gate (named first)


def test_a_predicate_decides_where_an_expectation_applies():
    pt = next(p for p in toolchain.points(gx.gated, CPU_BUDGET) if "must run" in p.why)
    import dataclasses
    at = lambda n: dataclasses.replace(pt, dims=(("M", 17), ("N", n)))
    assert dispatch_check.applies(gx.SHORT, at(256)) and not dispatch_check.applies(gx.SHORT, at(257))
    assert dispatch_check.applies(gx.LONG, at(257)) and not dispatch_check.applies(gx.LONG, at(256))
    facts = dispatch_check.expect_facts(gx.SHORT)
    assert facts["when"] == {"N": "range(1, 257)"}


def _dispatch_outcomes(spec):
    return {(dict(p.dims)["N"], p.layouts): run_point(spec, p, "cpu").outcome
            for p in toolchain.points(spec, CPU_BUDGET) if p.mode == "dispatch" and dict(p.dims)["N"] in (256, 257)}


def test_the_edge_point_catches_a_gate_off_by_one_and_passes_a_right_one():
    good = _dispatch_outcomes(gx.gated)
    assert good and all(o.status == Status.PASSED for o in good.values())
    bad = _dispatch_outcomes(gx.gate_off_by_one)
    assert bad[(256, ())].status == Status.FAILED and bad[(256, ())].headline.check == Check.DISPATCH
    assert bad[(257, ())].status == Status.PASSED


# ---------------------------------------------------------------------------- runs=False: a launcher that refuses
import refusing as rx  # noqa: E402  (tests/specs/refusing.py)


def test_a_documented_refusal_passes_at_every_rung_and_a_launcher_that_returns_there_fails_at_rung_7():
    ref = os.path.join(HERE, "specs", "refusing.py") + "::torch_group_norm"
    report = kl.climb(ref, rungs=(1, 2, 3, 7), device="cpu", jobs=2)
    outcomes = [o for r in report.rungs for o in r.outcomes]
    refused = [o for o in outcomes if o.note is not None and o.note.kind == "refused_as_documented"]
    assert refused and all(o.status == Status.PASSED for o in refused)
    assert all(dict(o.point.dims)["C"] % 4 for o in refused)
    assert not [o for o in outcomes if o.status not in (Status.PASSED, Status.SKIPPED)], \
        [(o.point.id, o.status, o.findings) for o in outcomes if o.status not in (Status.PASSED, Status.SKIPPED)]
    pts = [p for p in toolchain.points(rx.torch_group_norm, CPU_BUDGET) if "must not run" in p.why
           and "just outside" not in p.why and not p.layouts]
    assert pts and all(dict(p.dims)["C"] % 4 for p in pts)
    # without the expectation the same refusal is the kernel's failure
    assert run_point(rx.unsaid, pts[0], "cpu").outcome.status == Status.FAILED
    lenient = [run_point(rx.lenient, p, "cpu").outcome for p in pts]
    assert all(o.status == Status.FAILED and o.headline.check == Check.DISPATCH for o in lenient)
    from kladder.report.words import message
    assert "must not run here" in message(lenient[0].headline)


# ---------------------------------------------------------------------------- config values reach the reference
def _scale(x, factor=2.0):
    return x * factor


def _scale_ref(x, factor=1.0):
    return x * factor


def _scale_ref_kw(x, **kw):
    return x * kw.get("factor", 1.0)


def _scaled(reference):
    return kl.Spec("scaled", kernel=_scale, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 256)}, configs=[{"factor": 3.0}])


def test_a_config_value_reaches_a_reference_that_takes_the_keyword():
    spec = _scaled(_scale_ref)
    assert spec.reference_keywords((("factor", 3.0),)) == {"factor": 3.0}
    assert spec.reference_keywords(()) == {"factor": 2.0}           # the launcher's own call: its default
    assert _scaled(_scale_ref_kw).reference_keywords((("factor", 3.0),)) == {"factor": 3.0}
    assert _scaled(lambda x: 2 * x).reference_keywords((("factor", 3.0),)) == {}
    from kladder.gen.gaps import shapes
    pts = [p for p in shapes.points(spec, CPU_BUDGET) if p.config][:3] + \
          [p for p in shapes.points(spec, CPU_BUDGET) if not p.config][:2]
    assert {p.config for p in pts} == {(("factor", 3.0),), ()}
    for ref in (_scale_ref, _scale_ref_kw):
        outcomes = [run_point(_scaled(ref), p, "cpu").outcome for p in pts]
        assert all(o.status == Status.PASSED for o in outcomes), [(o.point.id, o.findings) for o in outcomes]


# ---------------------------------------------------------------------------- rungs 2-3 run every config
def _add_one(x, fast=False):
    y = x + 1
    return y.to(torch.bfloat16).to(x.dtype) if fast else y      # the fast path rounds through bfloat16: wrong


def test_rungs_2_and_3_run_each_config_at_least_once_and_catch_a_config_only_bug():
    from kladder.gen.gaps import contracts, values
    spec = kl.Spec("add_one", kernel=_add_one, reference=lambda x: x + 1, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)},
                   configs=[{"fast": False}, {"fast": True}])
    for gen, rung in ((values, 2), (contracts, 3)):
        pts = list(gen.points(spec, CPU_BUDGET))
        fast = [p for p in pts if p.config == (("fast", True),)]
        assert len(fast) == 1 and "config fast=True" in fast[0].why        # one input: one point a config
        assert not [p for p in pts if p.config == (("fast", False),)]      # the launcher's own call: every other point
        assert run_point(spec, fast[0], "cpu").outcome.status == Status.FAILED, rung


# ---------------------------------------------------------------------------- kl.filled: value kinds for build=
def test_filled_writes_the_value_kinds_kladder_writes_and_names_a_bad_kind():
    from kladder.gen.fill import fill_kind
    want = torch.empty(4, 64)
    fill_kind(want, "ties", "float32", torch.Generator().manual_seed(5))
    assert torch.equal(kl.filled((4, 64), "ties", generator=torch.Generator().manual_seed(5)), want)
    t = kl.filled(torch.empty(64, 4).t(), "peaked/30", generator=torch.Generator().manual_seed(1))   # not contiguous
    assert t.shape == (4, 64) and t.abs().max() > 30
    ids = kl.filled((3, 100), "ids/same", dtype=torch.int64, range=(0, 9))
    assert ids.dtype == torch.int64 and int(ids.min()) >= 0 and int(ids.max()) <= 9
    assert float(kl.filled((8, 8), "distinct", range=(0.5, 2.0)).min()) >= 0.5
    for bad, said in ((((2, 2), "peakd"), "peakd"), (((2, 2), "sparse"), "sparse"), (("2x2", "ties"), "shape")):
        with pytest.raises(ValueError, match=said):
            kl.filled(*bad)


def _built_logits(point, gen):
    m, v = point.sizes["M"], point.sizes["V"]
    return {"logits": kl.filled((m, v), point.kinds.get("logits", "normal"), generator=gen)}


def test_a_build_with_filled_gets_the_points_value_kind():
    from kladder.gen.gaps import values
    from kladder.gen.materialize import materialize
    spec = kl.Spec("softmax", kernel=lambda logits: logits.softmax(-1), reference=lambda logits: logits.softmax(-1),
                   args={"logits": kl.Tensor("M V", dtype="float32")}, returns=kl.Tensor("M V", like="logits"),
                   dims={"M": kl.Dim(1, 16), "V": kl.Dim(1, 512)}, build=_built_logits)
    peaked = next(p for p in values.points(spec, CPU_BUDGET) if dict(p.values).get("logits") == "peaked/30")
    x = materialize(spec, peaked, "cpu").args[0]
    assert x.abs().max() > 30                               # normal values x 30
    assert run_point(spec, peaked, "cpu").outcome.status == Status.PASSED
