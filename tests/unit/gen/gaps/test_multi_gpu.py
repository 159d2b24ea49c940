"""gen/gaps/multi_gpu.py: the message dim's regions between the switches, their candidate
sizes, three sizes a round in changing order, the lagging rank, the fixed dims."""
from hypothesis import given, settings, strategies as st

import kladder as kl
from kladder.core.notation import Needs
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET
from kladder.gen.gaps import multi_gpu
from kladder.gen.gaps.multi_gpu import candidates, regions, size_sequence


def kernel(group, x):
    return x


def spec(args=None, dims=None, returns=None, configs=(), **collective):
    args = args or {"x": kl.Tensor("N", dtype=["float32", "bfloat16"])}
    return kl.Spec("ar", kernel=kernel, reference=None, args=args,
                   returns=returns or kl.Tensor(next(iter(args.values())).shape, like="x"),
                   dims=dims or {"N": kl.Dim(1, 1 << 14)}, configs=list(configs),
                   collective=kl.Collective(**{"world": 2, "queued": 12, **collective}))


def test_no_collective_no_points():
    s = kl.Spec("plain", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
    assert list(multi_gpu.points(s, CPU_BUDGET)) == []


# ---------------------------------------------------------------------------- regions and candidates
def test_regions_cut_at_each_switch_in_elements_and_end_at_twice_the_last():
    s = spec(switches=[1 << 10, 1 << 13])                  # float32: 256 and 2048 elements
    assert regions(s, 4, CPU_BUDGET) == [(1, 255), (256, 2047), (2048, 4096)]


def test_a_switch_that_is_no_whole_element_rounds_up_and_one_past_the_range_is_left_out():
    s = spec(switches=[1001, 1 << 30])
    assert regions(s, 4, CPU_BUDGET) == [(1, 250), (251, 502)]


def test_without_a_switch_one_region_up_to_the_device_s_top_within_the_range():
    s = spec(dims={"N": kl.Dim(1, 1 << 30)})
    assert regions(s, 4, CPU_BUDGET) == [(1, multi_gpu.TOP_ELEMENTS["cpu"])]
    assert regions(s, 4, GPU_BUDGET) == [(1, multi_gpu.TOP_ELEMENTS["cuda"])]
    assert regions(spec(), 4, GPU_BUDGET) == [(1, 1 << 14)]                  # the dim's max caps it


def test_candidates_are_the_edges_and_two_odd_middles():
    assert candidates((1, 255)) == (1, 17, 129, 255)
    assert candidates((256, 2047)) == (256, 725, 1153, 2047)
    assert candidates((2048, 4096)) == (2048, 2897, 3073, 4096)
    assert candidates((5, 5)) == (5, 5, 5, 5)                                # clamped inside the region


# ---------------------------------------------------------------------------- the sequence
def test_one_region_takes_three_neighbouring_candidates_a_round_in_the_next_order():
    regs = [(1, 255)]
    seq = size_sequence(regs, 6)
    assert seq == [1, 17, 129, 17, 255, 129]           # round 0: candidates 0,1,2 in order (0,1,2); round 1: 1,2,3 as (0,2,1)


def test_two_regions_take_two_sizes_on_one_side_and_the_side_alternates():
    regs = [(1, 255), (256, 2047)]
    seq = size_sequence(regs, 24)
    rounds = [seq[i:i + 3] for i in range(0, 24, 3)]
    lows = [sum(n < 256 for n in r) for r in rounds]
    assert lows == [2, 1] * 4


def test_three_switches_slide_a_window_of_three_regions():
    regs = [(1, 9), (10, 99), (100, 999), (1000, 2000)]
    seq = size_sequence(regs, 12)
    region = lambda n: sum(n >= c for c in (10, 100, 1000))
    rounds = [sorted(region(n) for n in seq[i:i + 3]) for i in range(0, 12, 3)]
    assert rounds == [[0, 1, 2], [1, 2, 3], [0, 1, 2], [1, 2, 3]]


def test_the_sequence_is_cut_to_the_calls_queued():
    assert len(size_sequence([(1, 9), (10, 99), (100, 999)], 4)) == 4
    assert size_sequence([(1, 9)], 0) == []


def test_over_24_rounds_every_order_meets_every_candidate_of_a_region():
    regs = [(1, 9), (10, 99), (100, 999)]
    seq = size_sequence(regs, 72)
    assert set(seq) == {c for r in regs for c in candidates(r)}


# ---------------------------------------------------------------------------- the points
def test_each_world_gets_the_last_rank_lagging_then_rank_0_dtypes_and_configs_cycling():
    s = spec(world=[2, 4], switches=[1 << 10], configs=[{"BLOCK": 1}])
    pts = list(multi_gpu.points(s, CPU_BUDGET))
    assert [(dict(p.ranks)["world"], dict(p.ranks)["lag"]) for p in pts] == [(2, 1), (2, 0), (4, 3), (4, 0)]
    assert [dict(p.dtypes)["x"] for p in pts] == ["float32", "bfloat16"] * 2
    assert [p.config for p in pts] == [(), (("BLOCK", 1),)] * 2
    assert all(dict(p.ranks)["lag_us"] == multi_gpu.LAG_US["cpu"] and p.mode == "collective" and p.rung == 6 for p in pts)


def test_the_message_dim_is_the_sequence_s_largest_and_the_bytes_follow_the_dtype():
    s = spec(switches=[1 << 10])
    f32, bf16 = list(multi_gpu.points(s, CPU_BUDGET))
    for p, item in ((f32, 4), (bf16, 2)):
        seq = dict(p.ranks)["sizes"]
        assert len(seq) == 12 and p.sizes["N"] == max(seq)
        assert {n < (1 << 10) // item for n in seq} == {True, False}       # both sides of the switch, in elements
    assert Point.parse(repr(f32)) == f32


def test_a_declared_lag_and_a_message_too_big_for_the_cpu_is_a_gpu_point():
    s = spec(dims={"N": kl.Dim(1, 1 << 22)}, switches=[1 << 22], lag_us=7)
    p = next(multi_gpu.points(s, CPU_BUDGET))
    assert dict(p.ranks)["lag_us"] == 7
    assert p.sizes["N"] > CPU_BUDGET.max_elements and p.needs == "cuda"
    assert next(multi_gpu.points(s, GPU_BUDGET)).needs == Needs.NOTHING


def test_fixed_dims_take_a_width_a_tile_or_the_least_and_the_world_dim_is_the_world():
    s = spec(args={"x": kl.Tensor("H T N", dtype="bfloat16")}, returns=kl.Tensor("W H T N", like="x"),
             dims={"H": kl.Dim(1, 64, widths=[8, 16]), "T": kl.Dim(3, 64, tile=16), "N": kl.Dim(1, 4096),
                   "W": kl.Dim(1, 8)}, world_dim="W", reference="all_gather")
    assert multi_gpu.fixed_dims(s, 4) == {"H": 8, "T": 16, "W": 4}
    assert multi_gpu.unit_bytes(s, multi_gpu.fixed_dims(s, 4), {}) == 8 * 16 * 2
    s2 = spec(args={"x": kl.Tensor("B N", dtype="float32")}, dims={"B": kl.Dim(3, 9), "N": kl.Dim(1, 64)})
    assert multi_gpu.fixed_dims(s2, 2) == {"B": 3}


def test_the_why_names_each_region_s_sizes_and_bytes():
    p = next(multi_gpu.points(spec(switches=[1 << 10]), CPU_BUDGET))
    assert "rank 1 waits 2000 us" in p.why and "below 1.00 KiB" in p.why and "from 1.00 KiB" in p.why
    assert "1, 17, 129, 255 (below 1.00 KiB)" in p.why


@settings(max_examples=50, deadline=None)
@given(hi=st.integers(2, 1 << 20), switches=st.sets(st.integers(1, 1 << 22), max_size=4), item=st.sampled_from([2, 4]),
       queued=st.integers(1, 80))
def test_the_regions_tile_the_range_and_every_size_lies_in_its_region(hi, switches, item, queued):
    s = spec(dims={"N": kl.Dim(1, hi)}, switches=sorted(switches), queued=queued)
    regs = regions(s, item, CPU_BUDGET)
    assert regs[0][0] == 1 and all(a <= b for a, b in regs)
    assert all(regs[i][1] + 1 == regs[i + 1][0] for i in range(len(regs) - 1))     # no gap, no overlap
    assert regs[-1][1] <= hi
    seq = size_sequence(regs, queued)
    assert len(seq) == queued and all(1 <= n <= regs[-1][1] for n in seq)
    for a, b in regs:
        assert all(a <= c <= b for c in candidates((a, b)))
