"""Issue 21's declarations: kl.Dim(sizes=[...]), kl.Size(dim) as an argument, ranges over dim
expressions with rung 2's id kinds, rung 1's tails at the top of a range, rung 4's poison of
integer outputs."""
import pytest
import torch

import kladder as kl
from kladder.core.dimexpr import DimExprError, evaluate, names
from kladder.gen.fill import fill_kind
from kladder.climbing.ladder import rung_points
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET


def counts(ids, E):
    assert type(E) is int, f"E reached the kernel as {type(E).__name__}"
    return torch.bincount(ids.long().reshape(-1), minlength=E).to(torch.int32)


def counts_ref(ids, E):
    assert type(E) is int
    out = torch.zeros(E, dtype=torch.int64)
    for i in ids.reshape(-1).tolist():
        out[i] += 1
    return out


def routing(**over):
    base = dict(args={"ids": kl.Tensor("T K", dtype="int32", range=(0, "E-1")), "E": kl.Size("E")},
                dims={"T": kl.Dim(1, 512, tile=16), "K": kl.Dim(sizes=[1, 2, 8]), "E": kl.Dim(sizes=[8, 16, 64])},
                returns=kl.Tensor("E", dtype="int32"))
    base.update(over)
    return kl.Spec("expert_counts", counts, counts_ref, **base)


def spec_error(**over) -> kl.SpecError:
    with pytest.raises(kl.SpecError) as e:
        routing(**over)
    return e.value


# ---------------------------------------------------------------------------- Dim(sizes=)
def test_sizes_are_sorted_deduplicated_and_set_the_range():
    d = kl.Dim(sizes=[64, 8, 16, 8])
    assert (d.sizes, d.min, d.max) == ((8, 16, 64), 8, 64)
    assert d.allows(16) and not d.allows(17) and not d.allows(9)
    assert [d.snap(v) for v in (1, 8, 15, 17, 63, 64, 1000)] == [8, 8, 8, 16, 16, 64, 64]
    assert kl.Dim(8, 64, sizes=[8, 16, 64]).sizes == (8, 16, 64)       # a range that agrees is fine


@pytest.mark.parametrize("dim, where, given, fix", [
    (kl.Dim(sizes=[0, 8]), "dims['E'].sizes", "(0, 8)", "ints >= 1"),
    (kl.Dim(sizes=8), "dims['E'].sizes", "8", "give a list"),
    (kl.Dim(sizes=["8"]), "dims['E'].sizes", "'8'", "ints >= 1"),
    (kl.Dim(4, 64, sizes=[8, 16, 64]), "dims['E'].sizes", "min=4", "either min/max or sizes"),
    (kl.Dim(1, 32, sizes=[8, 16, 64]), "dims['E'].sizes", "max=32", "either min/max or sizes"),
    (kl.Dim(sizes=[8, 16], widths=[12]), "dims['E'].widths", "12", "among the sizes"),
])
def test_bad_sizes_name_the_field_the_value_and_the_fix(dim, where, given, fix):
    e = spec_error(dims={"T": kl.Dim(1, 512, tile=16), "K": kl.Dim(sizes=[1, 2, 8]), "E": dim})
    text = str(e)
    assert where in text and given in text and fix in text, text


def test_a_production_shape_off_the_sizes_is_refused():
    text = str(spec_error(production=[{"T": 4, "K": 2, "E": 12}]))
    assert "production" in text and "one of its sizes [8, 16, 64]" in text


def test_dim_values_is_refused_with_a_message_naming_sizes():
    with pytest.raises(kl.SpecError) as e:
        kl.Dim(values=[8, 16, 64])
    assert "sizes" in str(e.value) and "values" in str(e.value)


@pytest.mark.parametrize("rung", [1, 2, 3, 4, 5, 7])
def test_every_rung_keeps_to_the_declared_sizes(rung):
    spec = routing(production=[{"T": 100, "K": 8, "E": 64}])
    for budget in (CPU_BUDGET, GPU_BUDGET):
        pts = list(rung_points(spec, rung, budget))
        off = [p.id for p in pts if p.sizes["E"] not in (8, 16, 64) or p.sizes["K"] not in (1, 2, 8)]
        assert not off, off
    if rung == 1:
        assert {p.sizes["E"] for p in pts} == {8, 16, 64}       # every declared size runs at rung 1
        assert {p.sizes["K"] for p in pts} == {1, 2, 8}


def test_a_point_off_the_sizes_is_refused():
    from kladder.core.point import Point
    from kladder.climbing.pointcheck import PointError, check_point
    p = Point("expert_counts", 1, (("T", 4), ("K", 2), ("E", 12)), ())
    with pytest.raises(PointError, match=r"not one of the spec's sizes \[8, 16, 64\]"):
        check_point(routing(), p)


# ---------------------------------------------------------------------------- kl.Size
def test_a_size_reaches_kernel_and_reference_as_an_int():
    from kladder.gen.materialize import materialize, reference_args
    spec = routing()
    p = next(iter(rung_points(spec, 1, CPU_BUDGET)))
    inputs = materialize(spec, p, "cpu")
    assert inputs.args[1] == p.sizes["E"] and type(inputs.args[1]) is int
    assert reference_args(spec, inputs)[1] == p.sizes["E"]
    assert counts(*inputs.args).shape == (p.sizes["E"],)


def test_a_dim_given_as_an_argument_names_kl_size():
    text = str(spec_error(args={"ids": kl.Tensor("T K", dtype="int32", range=(0, "E-1")), "E": kl.Dim(1, 8)}))
    assert "args['E']" in text and "kl.Size('E')" in text


def test_a_size_of_an_undeclared_dim_is_refused():
    text = str(spec_error(args={"ids": kl.Tensor("T K", dtype="int32", range=(0, "E-1")), "E": kl.Size("F")}))
    assert "args['E'].dim" in text and "'F'" in text and "T, K, E" in text


def test_a_size_counts_as_a_use_of_its_dim():
    spec = kl.Spec("fill", lambda x, n: x * n, lambda x, n: x * n,
                   args={"x": kl.Tensor("M", dtype="float32"), "n": kl.Size("B")},
                   dims={"M": kl.Dim(1, 64), "B": kl.Dim(1, 4)}, returns=kl.Tensor("M", like="x"))
    assert spec.args["n"] == kl.Size("B")


# ---------------------------------------------------------------------------- ranges and ids
def test_dim_expressions():
    assert evaluate("E-1", {"E": 8}) == 7
    assert evaluate("2*S", {"S": 5}) == 10
    assert evaluate("(N + 7) // 8 - 1", {"N": 17}) == 2
    assert names("2*S + E") == ["S", "E"]
    for bad in ("E ** 2", "__import__('os')", "E / 2", "E.real", "1.5*E", "E if E else 1", "E-"):
        with pytest.raises(DimExprError):
            names(bad)


@pytest.mark.parametrize("rng, fix", [(("0", "F-1"), "declared dims"), ((0, "E**2"), "+ - * //"),
                                      ((0, "open('x')"), "+ - * //")])
def test_bad_range_expressions_are_refused(rng, fix):
    text = str(spec_error(args={"ids": kl.Tensor("T K", dtype="int32", range=rng), "E": kl.Size("E")}))
    assert "args['ids'].range" in text and fix in text, text


def test_a_range_over_an_expression_bounds_every_rung():
    spec = routing()
    from kladder.gen.materialize import materialize
    for rung in (1, 2, 3):
        for p in rung_points(spec, rung, CPU_BUDGET):
            ids = materialize(spec, p, "cpu").args[0]
            if ids.numel():
                assert int(ids.min()) >= 0 and int(ids.max()) <= p.sizes["E"] - 1, p.id


def test_integer_ranges_get_the_id_kinds_at_rung_2():
    labels = {dict(p.values).get("ids") for p in rung_points(routing(), 2, CPU_BUDGET)}
    assert {"ids/same", "ids/distinct", "ids/ends", "ids/unused", "ids/sorted", "ids/reversed"} <= labels


@pytest.mark.parametrize("n", [1, 5, 300])
def test_each_id_kind_holds_what_it_says(n):
    rng = (3, 12)                                  # ten ids, both ends inclusive
    def fill(label):
        t = torch.empty(n, dtype=torch.int32)
        fill_kind(t, label, "int32", torch.Generator().manual_seed(n), rng)
        assert int(t.min()) >= 3 and int(t.max()) <= 12, label
        return t.tolist()
    assert len(set(fill("ids/same"))) == 1
    assert len(set(fill("ids/distinct"))) == min(n, 10)
    assert set(fill("ids/ends")) == ({3, 12} if n > 1 else {12})
    assert 12 not in fill("ids/unused")
    v = fill("ids/sorted")
    assert v == sorted(v)
    v = fill("ids/reversed")
    assert v == sorted(v, reverse=True)
    fill("ids")                                    # bare, as an invariant's values= names it: in range


def test_a_correct_torch_kernel_passes_rungs_1_to_4_with_the_new_fields():
    from kladder.run.trial import run_point
    from kladder.core.sizes import is_big
    spec, outcomes = routing(), []
    for rung in (1, 2, 3, 4):
        for p in rung_points(spec, rung, CPU_BUDGET):
            if p.needs != "cuda" and not is_big(spec, p.sizes):
                outcomes.append(run_point(spec, p, "cpu").outcome)
    wrong = [(o.point.id, str(o.status)) for o in outcomes if str(o.status) not in ("passed", "skipped")]
    assert not wrong, wrong
    ran = {dict(o.point.values).get("ids") for o in outcomes if str(o.status) == "passed"}
    assert {"ids/same", "ids/distinct", "ids/ends", "ids/unused", "ids/sorted", "ids/reversed"} <= ran
    assert {4} <= {o.point.rung for o in outcomes if str(o.status) == "passed"}


# ---------------------------------------------------------------------------- rung 1's top tails
def _rung1(spec):
    from kladder.run.trial import run_point
    return [run_point(spec, p, "cpu").outcome for p in rung_points(spec, 1, CPU_BUDGET) if p.needs != "cuda"]


def test_a_kernel_right_only_below_the_top_tail_fails_rung_1_and_its_twin_passes(monkeypatch):
    from kladder.gen.gaps import shapes
    from specs.top_tail import fixed, spec
    n = {p.sizes["N"] for p in rung_points(spec, 1, CPU_BUDGET)}
    assert {4095, 4089} <= n                       # the largest size with a tail, max - tile + 1
    assert all(str(o.status) == "passed" for o in _rung1(fixed))
    failed = [o.point.sizes["N"] for o in _rung1(spec) if str(o.status) == "failed"]
    assert failed and set(failed) <= {4095, 4089}, failed
    monkeypatch.setattr(shapes, "top_tails", lambda name, dim: {})     # rung 1 as it was
    assert all(str(o.status) == "passed" for o in _rung1(spec))


@pytest.mark.parametrize("dim, want", [
    (kl.Dim(1, 4096, tile=8), {4095, 4089}),
    (kl.Dim(1, 4100, tile=8), {4100, 4093}),          # the maximum has a tail already: it is the largest
    (kl.Dim(1, 8192, tile=(64, 128)), {8191, 8065}),
    (kl.Dim(1, 64, tile=32), set()),                  # a range of two tiles: the low edges cover it
    (kl.Dim(1, 4096), set()),                         # no tile, no tail
    (kl.Dim(sizes=[64, 100, 127, 128], tile=32), {127}),
])
def test_top_tails(dim, want):
    from kladder.gen.gaps.shapes import edge_values, top_tails
    assert set(top_tails("N", dim)) == want
    assert want <= set(edge_values("N", dim))
    assert all(v % max(dim.tiles) for v in want)


def test_top_tails_stay_inside_the_budget():
    """M up to 65536 rows: its top tails are GPU points on the CPU, as M's maximum is."""
    spec = kl.Spec("rows", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
                   args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
                   dims={"M": kl.Dim(1, 1 << 16, tile=16), "N": kl.Dim(1, 64)})
    at = {p.sizes["M"]: p.needs for p in rung_points(spec, 1, CPU_BUDGET) if p.kind == "edge"}
    assert at[65535] == at[65521] == at[65536] == "cuda"


# ---------------------------------------------------------------------------- rung 4's integer poison
def test_the_poison_is_stated_and_no_integer_a_kernel_computes():
    from kladder.gen.materialize import poison, poison_word
    from kladder.run.modes.graph import replay_label
    t = torch.zeros(4, dtype=torch.int32)
    poison(t, "int32")
    assert t.tolist() == [-1515870811] * 4 and poison_word("int32") == "0xA5A5A5A5 (-1515870811)"
    assert poison_word("float32") == "a signalling NaN (0x7FA00000)"
    label = replay_label(2, {"out": poison_word("int32")})
    assert label == "replay 2 of 3 (outputs poisoned before it: out = 0xA5A5A5A5 (-1515870811))"


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: graph capture has no CPU equivalent")


@needs_cuda
def test_a_replay_that_writes_nothing_to_an_int32_output_fails_rung_4():
    from kladder.gen.gaps import modes
    from kladder.run.trial import run_point
    from specs.graph_int import fixed, spec
    from kladder.core.sizes import GPU_BUDGET
    pts = [p for p in modes.points(spec, GPU_BUDGET) if p.mode == "graph"]
    assert pts
    for p in pts:
        bad = run_point(spec, p, "cuda").outcome
        assert str(bad.status) == "failed", bad
        assert any("0xA5A5A5A5" in f.call for f in bad.findings), [f.call for f in bad.findings]
        assert str(run_point(fixed, p, "cuda").outcome.status) == "passed"
