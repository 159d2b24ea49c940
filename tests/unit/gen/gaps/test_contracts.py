"""gen/gaps/contracts.py: rung 3's points: the independence point first, one input's layout at
a time for each dtype row, padding poison where an input declares its valid elements, the
dtype sweep last."""
import kladder as kl
from kladder.core.notation import Mode, PointKind
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET
from kladder.gen.gaps import contracts


def spec(x_dtype="float32", w_dtype="float32", layouts=None, valid=None, **over):
    return kl.Spec("rows", lambda x, w: x, lambda x, w: x,
                   args={"x": kl.Tensor("M N", dtype=x_dtype, layouts=layouts, valid=valid), "w": kl.Tensor("N", dtype=w_dtype)},
                   returns=kl.Tensor("M N", like="x"),
                   dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, tile=64)}, **over)


SHAPES = [{"M": 17, "N": 129}, {"M": 16, "N": 128}]


def test_each_layout_an_input_s_rank_allows_at_each_shape():
    pts = list(contracts.layout_points(spec(), (), SHAPES))
    x = [(p.layouts[0][1], p.sizes["M"]) for p in pts if p.layouts[0][0] == "x"]
    assert [lay for lay, m in x if m == 17] == ["sliced", "every_other", "transposed", "offset", "shifted", "broadcast"]
    w = [p.layouts[0][1] for p in pts if p.layouts[0][0] == "w" and p.sizes["M"] == 17]
    assert w == ["every_other", "offset", "shifted"]               # a 1-d input: no row stride, no transpose
    assert all(p.kind == PointKind.LAYOUT and len(p.layouts) == 1 for p in pts)
    assert pts[0].why == "x: sliced, " + contracts.LAYOUT_WHY["sliced"] + "; M=17, N=129"


def test_declared_layouts_only():
    pts = list(contracts.layout_points(spec(layouts=["transposed"]), (), SHAPES[:1]))
    assert [p.layouts for p in pts if p.layouts[0][0] == "x"] == [(("x", "transposed"),)]


def test_padding_points_poison_each_fill_only_where_valid_is_declared():
    pts = list(contracts.padding_points(spec(valid="N"), (), SHAPES[:1]))
    assert [p.values for p in pts] == [(("x", f"pad:{f}"),) for f in contracts.PADDING_FILLS]
    assert all(p.mode == Mode.PADDING and p.kind == PointKind.PADDING for p in pts)
    assert "past the N valid elements" in pts[0].why
    assert list(contracts.padding_points(spec(), (), SHAPES)) == []


def test_the_dtype_sweep_is_the_full_product():
    s = spec(x_dtype=["float32", "float16"], w_dtype=["float32", "bfloat16"])
    got = [p.dtypes for p in contracts.dtype_points(s, SHAPES[0])]
    assert got == [(("x", "float32"), ("w", "float32")), (("x", "float32"), ("w", "bfloat16")),
                   (("x", "float16"), ("w", "float32")), (("x", "float16"), ("w", "bfloat16"))]
    assert list(contracts.dtype_points(spec(), SHAPES[0])) == []


def test_points_start_with_independence_and_end_with_the_sweep_layouts_once_per_dtype_row():
    s = spec(x_dtype=["float32", "float16"], valid=64)
    pts = list(contracts.points(s, CPU_BUDGET))
    assert pts[0].mode == Mode.INDEPENDENCE and pts[0].sizes == SHAPES[0] and pts[0].dtypes == (("x", "float32"),)
    assert [p.kind for p in pts[-2:]] == [PointKind.DTYPE] * 2
    layouts = [p for p in pts if p.kind == PointKind.LAYOUT]
    assert len(layouts) == 2 * 2 * 9                  # 2 dtype rows x 2 shapes x (6 + 3) layouts
    assert sum(p.kind == PointKind.PADDING for p in pts) == 2 * 2 * 5
    assert sum(p.mode == Mode.INDEPENDENCE for p in pts) == 1
    assert all(p.rung == 3 and Point.parse(repr(p)) == p for p in pts)


def test_a_declared_config_copies_each_input_s_first_layout_of_the_first_dtype_row_only():
    def k(x, w, BLOCK=64):
        return x
    s = kl.Spec("rows", k, lambda x, w: x,
                args={"x": kl.Tensor("M N", dtype=["float32", "float16"]), "w": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, tile=64)},
                configs=[{"BLOCK": 128}])
    got = [(p.layouts, p.dtypes) for p in contracts.points(s, CPU_BUDGET) if p.config]
    assert got == [((("x", "sliced"),), (("x", "float32"),)), ((("w", "every_other"),), (("x", "float32"),))]


def test_with_grads_the_backward_s_layouts_and_accumulation_join_each_row():
    s = spec(grads=["x"])
    pts = list(contracts.points(s, CPU_BUDGET))
    assert [p.layouts for p in pts if p.layouts and p.layouts[0][0] == "upstream out" and p.sizes == SHAPES[0]] == [
        (("upstream out", "broadcast"),), (("upstream out", "transposed"),)]
    assert sum(p.mode == Mode.ACCUMULATE for p in pts) == 2
