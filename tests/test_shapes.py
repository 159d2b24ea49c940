"""Rung-1 generators: tile edges, widths, pairwise, configs, production, big points."""
from itertools import combinations

import pytest

import kladder as kl
from kladder.core import sizes
from kladder.gen.gaps import shapes
from kladder.gen.gaps.pairwise import all_pairs
from kladder.core.sizes import nbytes_of


def k(*a, **kw):
    return a[0]


def ref(*a):
    return a[0]


def gemm_spec(**over):
    base = dict(kernel=k, reference=ref,
                args={"a": kl.Tensor("M K", dtype=["bfloat16", "float16"]), "b": kl.Tensor("K N", like="a")},
                returns=kl.Tensor("M N", like="a"), rows="M",
                dims={"M": kl.Dim(1, 1 << 20, tile=128), "N": kl.Dim(1, 1 << 18, tile=64, widths=[151936]),
                      "K": kl.Dim(1, 8192, tile=[64, 128], widths=[2880, 4096])},
                configs=[{"BLOCK_K": 64}, {"BLOCK_K": 128}],
                production=[{"M": 1, "N": 151936, "K": 4096}, {"M": 7, "N": 4096, "K": 2880}],
                tuned=[{"M": 7, "N": 4096, "K": 2880}])
    base.update(over)
    return kl.Spec("gemm", **base)


def test_edge_values_hold_tile_neighbours_max_and_widths():
    vals = shapes.edge_values("K", kl.Dim(1, 8192, tile=[64, 128], widths=[2880]))
    assert {1, 63, 64, 65, 127, 128, 129, 385, 2879, 2880, 2881, 8065, 8191, 8192} == set(vals)
    assert "three full tiles (128)" in vals[385]                # a middle tile: 3 x 128 + 1
    assert "2881 % 64 = 1" in vals[2881] and "model width 2880" in vals[2881]
    assert "one short of the tile (64)" in vals[63]


def test_edge_values_stay_in_range():
    vals = shapes.edge_values("N", kl.Dim(8, 100, tile=128, widths=[99]))
    assert all(8 <= v <= 100 for v in vals)
    assert 127 not in vals and 100 in vals and 8 in vals


def test_all_pairs_covers_every_feasible_pair():
    factors = [("a", [1, 2, 3]), ("b", ["x", "y"]), ("c", [10, 20, 30, 40])]
    rows, dropped = all_pairs(factors, lambda r: not (r.get("a") == 3 and r.get("c") == 40))
    assert dropped == [(("a", 3), ("c", 40))]
    for (f1, v1s), (f2, v2s) in combinations(factors, 2):
        for v1 in v1s:
            for v2 in v2s:
                if (f1, v1, f2, v2) == ("a", 3, "c", 40):
                    continue
                assert any(r[f1] == v1 and r[f2] == v2 for r in rows), (f1, v1, f2, v2)
    assert len(rows) < 3 * 2 * 4                       # fewer than the full product
    assert all(not (r["a"] == 3 and r["c"] == 40) for r in rows)


def test_pairwise_is_deterministic():
    s = gemm_spec()
    assert list(shapes.points(s)) == list(shapes.points(s))


def test_edge_points_cover_each_dim_value_each_dtype_and_each_config():
    s = gemm_spec()
    pts = list(shapes.tile_edge_points(s, sizes.GPU_BUDGET))
    for d in s.dims:
        missing = set(shapes.edge_values(d, s.dims[d])) - {p.sizes[d] for p in pts}
        # a value no point holds must be one that cannot fit even with every other dim smallest
        assert all(not sizes.fits(s, shapes._cheapest(s, {d: v}), sizes.GPU_BUDGET) for v in missing), (d, missing)
    assert {dict(p.dtypes)["a"] for p in pts} == {"bfloat16", "float16"}
    assert {p.config for p in pts} >= {(), (("BLOCK_K", 64),), (("BLOCK_K", 128),)}
    for p in pts:
        assert all(nbytes_of(s, n, p.sizes, p.dtype_of) <= 2 * sizes.GPU_BUDGET.max_elements for n in s.all_tensors)


def test_cpu_budget_turns_big_edges_into_skippable_gpu_points():
    s = gemm_spec()
    pts = list(shapes.points(s, sizes.CPU_BUDGET))
    small = [p for p in pts if not p.needs]
    assert small and all(sizes.fits(s, p.sizes, sizes.CPU_BUDGET) for p in small)
    gpu = [p for p in pts if p.needs == "cuda" and p.kind == "edge"]
    assert any(p.sizes["M"] == 1 << 20 for p in gpu)      # the max of M: a GPU point with its why
    assert all(p.why for p in pts)


def test_every_config_runs():
    s = gemm_spec()
    pts = [p for p in shapes.points(s) if p.kind == "config"]
    assert {p.config for p in pts} == {(("BLOCK_K", 64),), (("BLOCK_K", 128),)}
    assert all("every config the launcher accepts" in p.why for p in pts)


def test_production_shapes_without_a_tuned_entry():
    s = gemm_spec()
    pts = [p for p in shapes.points(s) if p.kind == "production"]
    assert {p.sizes["N"] for p in pts} == {151936}         # the tuned (7, 4096, 2880) is left out
    assert all(p.config == () for p in pts)                # the launcher chooses its own config
    assert "no tuned entry" in pts[0].why


@pytest.mark.parametrize("cliff", [1 << 31, 1 << 32])
def test_big_points_straddle_each_cliff_counting_the_last_tile(cliff):
    s = gemm_spec()
    out = [p for p in shapes.big_points(s) if p.sizes["N"] == 151936 and p.sizes["K"] == 64]
    sizes = [nbytes_of(s, "out", p.sizes, p.dtype_of) for p in out]
    row = 151936 * 2
    assert any(b < cliff for b in sizes) and any(b >= cliff for b in sizes)
    below = max(b for b in sizes if b < cliff)
    assert cliff - below < row                              # the last row that fits
    padded = [p for p in out if nbytes_of(s, "out", p.sizes, p.dtype_of) < cliff
              and -(-p.sizes["M"] // 128) * 128 * row >= cliff]
    assert padded, "a point where the tensor fits but its padded last tile crosses"
    assert all(p.needs == "cuda" and p.kind == "big" for p in out)
    assert any("2^31" in p.why for p in out) and any("2^32" in p.why for p in out)


def test_big_points_for_fp32_add_the_int32_element_cliff():
    s = gemm_spec(args={"a": kl.Tensor("M K", dtype="float32"), "b": kl.Tensor("K N", like="a")})
    assert any("2^31 elements" in p.why for p in shapes.big_points(s))


def test_every_point_has_a_why_and_a_unique_key():
    s = gemm_spec()
    pts = list(shapes.points(s))
    keys = [(p.dims, p.dtypes, p.config) for p in pts]
    assert len(keys) == len(set(keys))
    assert all(p.why and p.rung == 1 for p in pts)


def test_cpu_budget_bounds_output_rows_not_row_length():
    # one program per row under the interpreter: 65,536 rows is a GPU point, a 16,384-wide row is not
    s = kl.Spec("norm", kernel=k, reference=ref, args={"x": kl.Tensor("M N", dtype="float16")},
                returns=kl.Tensor("M N", like="x"),
                dims={"M": kl.Dim(1, 65536), "N": kl.Dim(1, 16384, tile=8)})
    assert sizes.fits(s, {"M": 1, "N": 16384}, sizes.CPU_BUDGET)
    assert not sizes.fits(s, {"M": 65536, "N": 1}, sizes.CPU_BUDGET)
    gpu = [p for p in shapes.points(s, sizes.CPU_BUDGET) if p.needs == "cuda" and p.kind == "edge"]
    assert [p.sizes for p in gpu] == [{"M": 65536, "N": 1}]
    assert "declared maximum" in gpu[0].why


# ------------------------------------------------------------------ cliffs that really cross
def test_kladder_points_lists_a_point_past_and_a_point_below_every_reachable_cliff(tmp_path):
    """Done when (issue 15): for each of 2^31 and 2^32 bytes and elements, a point whose last row
    starts past the cliff and one just below it, computed from the listed sizes alone."""
    import json
    import os
    import subprocess
    import sys
    here = os.path.dirname(__file__)
    out = tmp_path / "points.json"
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "points", os.path.join(here, "specs", "big_rows.py"),
                        "--rungs", "1", "--device", "cpu", "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    listed = json.loads(out.read_text())["points"]
    assert "r1-M=131073-N=16384 " in p.stdout              # the text lists them too
    for cliff in (1 << 31, 1 << 32):
        for unit in ("bytes", "elements"):
            past = below = False
            for rec in listed:
                x = rec["tensors"]["x"]
                m, n = x["shape"]
                per_row = n * (2 if unit == "bytes" else 1)          # bfloat16
                past |= (m - 1) * per_row >= cliff                  # the last row starts at or past it
                below |= cliff - per_row < m * per_row <= cliff     # one row more would cross it
            assert past and below, (cliff, unit)
    above = [r for r in listed if r["sizes"]["M"] == 131073]
    assert above and "the first element past the cliff is element 2,147,483,648, at byte 4,294,967,296" in above[0]["why"]
    assert all(r["needs"] == "cuda" for r in listed if r["kind"] == "big")


def test_the_rows_checked_on_a_big_point_include_the_rows_past_every_cliff():
    import os
    from kladder.gen.load import load_spec
    from kladder.core.point import Point
    from kladder.gen.rows import plan_rows
    s = load_spec(os.path.join(os.path.dirname(__file__), "specs", "big_rows.py"))
    # a hand-written point, without kind="big": the sizes alone make it big
    pt = Point("double_rows", 1, (("M", 262145), ("N", 16384)))
    _, ids, rows = plan_rows(s, pt, "cpu")
    assert rows is not None and rows.rows == 262145
    assert {65536, 131072, 262144} <= set(ids)                     # 2^31 B, 2^32 B (= 2^31 el.), 2^32 el.
    assert plan_rows(s, Point("double_rows", 1, (("M", 4), ("N", 16))), "cpu")[2] is None


def test_big_points_count_the_last_tiles_padding_and_start_a_whole_tile_past_it():
    s = gemm_spec()
    out = [p for p in shapes.big_points(s) if "out (" in p.why and p.sizes["N"] == 151936]
    row = 151936 * 2
    for cliff in (1 << 31, 1 << 32):
        first = -(-cliff // row)
        above = [p for p in out if (p.sizes["M"] - 1) * row >= cliff and p.sizes["M"] * row < cliff + 129 * row]
        assert above, cliff
        m = min(p.sizes["M"] for p in above)
        assert (m - 1) // 128 * 128 >= first                        # the last tile starts past the cliff too


def test_a_tiled_dim_gets_a_middle_tile_inside_the_cpu_budget():
    s = kl.Spec("scan", kernel=k, reference=ref, args={"x": kl.Tensor("M N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 8192, tile=256)})
    pts = [p for p in shapes.points(s, sizes.CPU_BUDGET) if not p.needs]
    assert any(p.sizes["N"] == 3 * 256 + 1 for p in pts)


def test_an_edge_too_dear_to_pair_runs_once_on_the_cpu():
    # 4096 rows cost the interpreter ~20 s a point: M = 4096 runs once, not once per N edge
    s = kl.Spec("norm", kernel=k, reference=ref, args={"x": kl.Tensor("M N", dtype=["float16", "bfloat16"])},
                returns=kl.Tensor("M N", like="x"),
                dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 16384, tile=8, widths=[2880])})
    pts = list(shapes.points(s, sizes.CPU_BUDGET))
    dear = [p for p in pts if p.sizes["M"] == 4096]
    assert len(dear) == 1 and not dear[0].needs and dear[0].sizes["N"] == 1
    assert all(sizes.output_rows(s, p.sizes) <= 512 for p in pts if p is not dear[0] and not p.needs)
    on_gpu = list(shapes.points(s, sizes.GPU_BUDGET))
    assert sum(p.sizes["M"] == 4096 for p in on_gpu) > 1            # no time budget on the GPU: paired as before
