"""gen/gaps/values.py: rung 2's points: one input one value kind at a tailed and a long shape,
lengths around every chunk, an invariant's own values, each dtype row, no duplicate."""
import kladder as kl
from kladder.core.notation import PointKind
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET, Budget, fits, moderate
from kladder.gen.gaps import values
from kladder.gen.gaps.values import kind_labels, long_shape


def seq_spec(dims=None, **over):
    """Rows of S scores and an int32 length per row in [1, S]; S cut in chunks of 64."""
    return kl.Spec("sm", lambda x, lens: x, lambda x, lens: x,
                   args={"x": kl.Tensor("B S", dtype=["float32", "bfloat16"]),
                         "lens": kl.Tensor("B", dtype="int32", range=(1, "S"))},
                   returns=kl.Tensor("B S", like="x"),
                   dims=dims or {"B": kl.Dim(1, 64), "S": kl.Dim(1, 1024, chunks=[64])}, **over)


def gemm_spec():
    return kl.Spec("mm", lambda a, b: a, lambda a, b: a,
                   args={"a": kl.Tensor("M K", dtype="float32"), "b": kl.Tensor("K N", dtype="float32")},
                   returns=kl.Tensor("M N", like="a"),
                   dims={"M": kl.Dim(1, 1 << 20, tile=16), "K": kl.Dim(1, 1 << 20, tile=32, widths=[4096]),
                         "N": kl.Dim(1, 1 << 20, tile=16)})


def test_kind_labels_peaked_at_each_temperature_ids_with_the_sentinel_the_rest_once():
    assert kind_labels("peaked") == ["peaked/3", "peaked/10", "peaked/30"]
    assert kind_labels("ties") == ["ties"]
    assert kind_labels("ids", kl.Tensor("T", dtype="int64", range=(0, 7)))[-1] == "ids/reversed"
    assert kind_labels("ids", kl.Tensor("T", dtype="int64", range=(0, 7), ignore=-100))[-1] == "ids/ignored"


def test_why_of_says_the_temperature_the_policy_and_the_sentinel():
    s = seq_spec(nonfinite="propagate")
    assert values.why_of(s, "x", "peaked/30").startswith("x: peaked/30, normal x 30: a softmax")
    assert values.why_of(s, "x", "nonfinite").endswith("(policy: propagate)")
    assert values.why_of(s, "lens", "ids/unused").startswith("lens: ids/unused, the highest id never used")


def test_long_shape_grows_the_reduced_dim_first_to_its_largest_width_that_fits():
    s, b = gemm_spec(), moderate(CPU_BUDGET)
    start = {"M": 33, "K": 65, "N": 33}
    got = long_shape(s, b, start)
    assert got["K"] == 65536 // 33 and got["M"] == 33           # K first, as far as a fits; no width fits
    assert fits(s, got, b) and not fits(s, {**got, "K": got["K"] + 1}, b)
    assert got["N"] == 33                                        # b's last dim: nothing left to grow


def test_long_shape_takes_a_declared_width_where_it_fits():
    s = gemm_spec()
    got = long_shape(s, Budget(1 << 22, 1 << 16, "cpu"), {"M": 33, "K": 65, "N": 33})
    assert got["K"] == 4096                                      # the model width, before the dim's max


def test_long_shape_never_shrinks_a_dim_to_a_width_below_its_start():
    """A declared width below the start (N=64 against a base of 2 tiles + 1 = 129) would shorten
    the row: the dim grows as far as the budget allows instead."""
    s = kl.Spec("rowsum", lambda x: x, lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                returns=kl.Tensor("M", dtype="float32"),
                dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 1 << 20, tile=64, widths=[64])})
    b = moderate(CPU_BUDGET)
    got = long_shape(s, b, {"M": 17, "N": 129})
    assert got == {"M": 17, "N": 65536 // 17}
    assert values.shapes_for(s, CPU_BUDGET)[1]["N"] > 129


def test_shapes_for_are_the_base_and_the_long_rows():
    assert values.shapes_for(seq_spec(), CPU_BUDGET) == [{"B": 17, "S": 129}, {"B": 64, "S": 1024}]


def test_each_input_gets_each_of_its_kinds_at_both_shapes_and_one_row_has_no_identical():
    pts = [p for p in values.points(seq_spec(), CPU_BUDGET) if p.kind == PointKind.VALUES]
    f32 = [p for p in pts if dict(p.dtypes) == {"x": "float32"}]
    x_labels = [p.values[0][1] for p in f32 if p.values[0][0] == "x" and p.sizes["S"] == 129]
    assert x_labels == ["peaked/3", "peaked/10", "peaked/30", "ties", "identical", "distinct", "tiny", "huge"]
    lens_labels = [p.values[0][1] for p in f32 if p.values[0][0] == "lens" and p.sizes["S"] == 129]
    assert lens_labels == ["lengths", "ids/same", "ids/distinct", "ids/ends", "ids/unused", "ids/sorted", "ids/reversed"]
    assert all(len(p.values) == 1 for p in pts)                   # one input moved at a time
    assert {(p.sizes["B"], p.sizes["S"]) for p in pts} == {(17, 129), (64, 1024)}
    one_row = kl.Spec("v", lambda x: x, lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                      returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
    assert "identical" not in {p.values[0][1] for p in values.points(one_row, CPU_BUDGET)}


def test_each_dtype_row_gets_its_own_points_and_no_point_repeats():
    pts = list(values.points(seq_spec(), CPU_BUDGET))
    keys = [(p.dims, p.dtypes, p.values) for p in pts]
    assert len(keys) == len(set(keys))
    assert {dict(p.dtypes)["x"] for p in pts} == {"float32", "bfloat16"}
    assert all(p.rung == 2 and Point.parse(repr(p)) == p for p in pts)


def test_chunk_points_sit_at_1_and_on_both_sides_of_the_chunk_with_lengths():
    s = seq_spec()
    pts = list(values.chunk_points(s, CPU_BUDGET, (("x", "float32"),), {"B": 17, "S": 129}))
    assert [p.sizes for p in pts] == [{"B": 17, "S": v} for v in (1, 63, 64, 65)]
    assert all(p.values == (("lens", "lengths"),) and p.kind == PointKind.CHUNK for p in pts)
    assert pts[3].why.startswith("S = 65: one past the chunk (64): a second chunk of one")


def test_chunk_points_keep_inside_the_dim_and_the_budget():
    s = seq_spec(dims={"B": kl.Dim(1, 64), "S": kl.Dim(64, 1024, chunks=[64])})
    pts = list(values.chunk_points(s, CPU_BUDGET, (), {"B": 17, "S": 129}))
    assert [p.sizes["S"] for p in pts] == [64, 65]                 # 1 and 63 are below the dim's least
    assert list(values.chunk_points(seq_spec(), Budget(17 * 63, 4096, "cpu"), (), {"B": 17, "S": 129}))[-1].sizes["S"] == 63


def test_an_invariant_with_values_runs_alone_and_beside_each_other_kind_but_nonfinite():
    inv = kl.Invariant("rows sum to one", lambda i, o: True, values={"lens": "ids"})
    s = seq_spec(invariants=[inv], nonfinite="propagate")
    pts = list(values.invariant_points(s, CPU_BUDGET, (), [{"B": 17, "S": 129}]))
    assert pts[0].values == (("lens", "ids"),)
    extras = [p.values[1][1] for p in pts[1:]]
    assert extras == ["peaked/3", "peaked/10", "peaked/30", "ties", "identical", "distinct", "tiny", "huge"]
    assert all(p.kind == PointKind.INVARIANT and "invariant 'rows sum to one'" in p.why for p in pts)
    without = seq_spec(invariants=[kl.Invariant("free", lambda i, o: True)])
    assert list(values.invariant_points(without, CPU_BUDGET, (), [{"B": 17, "S": 129}])) == []


def test_a_declared_config_copies_each_input_s_first_value_point():
    def k(x, lens, BLOCK=64):
        return x
    s = kl.Spec("sm", k, lambda x, lens: x,
                args={"x": kl.Tensor("B S", dtype="float32"), "lens": kl.Tensor("B", dtype="int32", range=(1, "S"))},
                returns=kl.Tensor("B S", like="x"), dims={"B": kl.Dim(1, 64), "S": kl.Dim(1, 1024)},
                configs=[{"BLOCK": 128}])
    configured = [p for p in values.points(s, CPU_BUDGET) if p.config]
    assert [(p.values, p.config) for p in configured] == [((("x", "peaked/3"),), (("BLOCK", 128),)),
                                                           ((("lens", "lengths"),), (("BLOCK", 128),))]
