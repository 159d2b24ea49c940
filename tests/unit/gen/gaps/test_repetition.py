"""gen/gaps/repetition.py: rung 5's shapes (widest rows in whole tiles, a tailed base, the
smallest), the plan each point carries, the stream of calls, the sanitizer points."""
import dataclasses

import kladder as kl
from kladder.core.budgets import COMMIT, RELEASE
from kladder.core.notation import Inputs, Launch, Mode, Needs
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET, Budget, fits, repetition as rep_budget
from kladder.gen.gaps import repetition
from kladder.gen.gaps.repetition import past_edges, smallest, tailed, widest

ROOM = rep_budget(CPU_BUDGET)            # 8192 elements a tensor, 2 rows an output


def kernel(x, BLOCK=64):
    return x


def spec(n=None, m=None, **over):
    return kl.Spec("rows", kernel, lambda x: x, args={"x": kl.Tensor("M N", dtype=["float32", "float16"])},
                   returns=kl.Tensor("M N", like="x"),
                   dims={"M": m or kl.Dim(1, 4096), "N": n or kl.Dim(1, 8192, tile=64)}, **over)


def plan(p):
    return dict(p.repeat)


# ---------------------------------------------------------------------------- shapes
def test_widest_grows_the_row_to_the_budget_then_the_rows():
    assert widest(spec(), ROOM) == {"M": 1, "N": 8192}
    assert widest(spec(n=kl.Dim(1, 1000)), ROOM) == {"M": 2, "N": 1000}        # a short row leaves room for 2 rows


def test_widest_ends_on_a_whole_tile_below_the_dim_s_max():
    assert widest(spec(n=kl.Dim(1, 5000, tile=64)), ROOM) == {"M": 1, "N": 4992}


def test_widest_on_a_gpu_budget_fits_and_no_dim_can_grow_further():
    b = rep_budget(GPU_BUDGET)
    got = widest(spec(), b)
    assert got["N"] == 8192 and fits(spec(), got, b) and not fits(spec(), {**got, "M": got["M"] + 1}, b)


def test_smallest_is_a_partial_last_tile_and_two_of_the_rest():
    assert smallest(spec(), ROOM) == {"M": 2, "N": 65}
    assert smallest(spec(n=kl.Dim(1, 8192, tile=64, chunks=[256])), ROOM) == {"M": 2, "N": 257}
    assert smallest(spec(), Budget(100, 2, "cpu")) == {"M": 1, "N": 1}     # does not fit: every dim at its least


def test_tailed_is_the_base_shape_that_fits():
    assert tailed(spec(), ROOM) == {"M": 1, "N": 129}


def test_tailed_of_an_all_ones_base_is_two_of_everything():
    s = spec(n=kl.Dim(1, 8192))                            # nothing tiled: the base shape shrank to 1 x 1
    assert tailed(s, ROOM) == {"M": 2, "N": 2}


def test_past_edges_is_two_chunks_and_one_or_one_past_the_widest_width():
    assert past_edges(spec(n=kl.Dim(1, 1 << 16, chunks=[8192]))) == {"M": 1, "N": 16385}
    assert past_edges(spec(n=kl.Dim(1, 1 << 16, widths=[4096, 32768], chunks=[1024]))) == {"M": 1, "N": 32769}
    assert past_edges(spec(n=kl.Dim(1, 8192, widths=[8192]))) is None        # the range stops at the edge
    assert past_edges(spec()) is None


# ---------------------------------------------------------------------------- the points
def test_cpu_points_in_order_with_their_plans():
    s = spec(configs=[{"BLOCK": 128}])
    pts = list(repetition.points(s, CPU_BUDGET))
    got = [(p.mode, p.sizes, p.config, plan(p).get("inputs"), plan(p).get("launch"), plan(p).get("load", False))
           for p in pts]
    wide, base, small = {"M": 1, "N": 8192}, {"M": 1, "N": 129}, {"M": 2, "N": 65}
    assert got == [
        (Mode.REPEAT, wide, (), Inputs.SAME, Launch.EAGER, False),
        (Mode.REPEAT, wide, (("BLOCK", 128),), Inputs.SAME, Launch.EAGER, False),
        (Mode.REPEAT, wide, (), Inputs.FRESH, Launch.EAGER, False),
        (Mode.REPEAT, wide, (), Inputs.SAME, Launch.EAGER, True),
        (Mode.REPEAT, base, (), Inputs.SAME, Launch.EAGER, False),
        (Mode.REPEAT, base, (), Inputs.FRESH, Launch.EAGER, False),
        (Mode.CALLS, small, (), None, None, False),
        (Mode.SANITIZE, small, (), None, None, False),
    ]
    assert all(p.rung == 5 and dict(p.dtypes) == {"x": "float32"} for p in pts)
    cpu = COMMIT.repeat["cpu"]
    assert (plan(pts[0])["calls"], plan(pts[0])["seconds"]) == (cpu.calls, cpu.seconds)


def test_cuda_adds_graph_launches_an_eager_repeat_and_the_release_budget_every_tool():
    pts = list(repetition.points(spec(), GPU_BUDGET, time_budget="release"))
    repeats = [p for p in pts if p.mode == Mode.REPEAT]
    assert [plan(p)["launch"] for p in repeats[:3]] == [Launch.GRAPH, Launch.GRAPH, Launch.EAGER]
    assert [plan(p)["tool"] for p in pts if p.mode == Mode.SANITIZE] == list(RELEASE.tools)


def test_repeat_and_repeat_s_reach_the_plan():
    p = next(repetition.points(spec(), CPU_BUDGET, repeat=7, repeat_s=1.5))
    assert (plan(p)["calls"], plan(p)["seconds"]) == (7, 1.5)
    assert "7 calls or 1.5 s" in p.why


def test_past_the_chunk_is_an_eager_point_and_a_gpu_point_when_it_does_not_fit():
    s = spec(n=kl.Dim(1, 1 << 16, chunks=[8192]))
    past = [p for p in repetition.points(s, CPU_BUDGET) if p.sizes["N"] == 16385]      # within the CPU's 2^16 elements
    assert len(past) == 1 and plan(past[0])["launch"] == Launch.EAGER and past[0].needs == Needs.NOTHING
    far = spec(n=kl.Dim(1, 1 << 17, chunks=[40000]))
    past = [p for p in repetition.points(far, CPU_BUDGET) if p.sizes["N"] == 80001]
    assert len(past) == 1 and past[0].needs == Needs.CUDA
    gpu = [p for p in repetition.points(far, GPU_BUDGET) if p.sizes == {"M": 1, "N": 80001}]
    assert len(gpu) == 1 and plan(gpu[0])["launch"] == Launch.EAGER and gpu[0].needs == Needs.NOTHING


# ---------------------------------------------------------------------------- the stream
def test_an_undeclared_stream_is_pattern_a_within_the_named_budget():
    p = repetition.stream(spec(), {"M": 2, "N": 65}, (), "cpu")
    assert plan(p) == {"calls": COMMIT.stream_calls["cpu"], "seconds": COMMIT.stream_s["cpu"], "pattern": "A",
                       "fresh": True, "declared": False}
    assert p.mode == Mode.CALLS and p.config == ()


def test_a_declared_stream_keeps_its_pattern_and_its_first_letter_s_config():
    calls = kl.Calls(pattern="BAAB", fresh=False, count=300, configs={"B": {"BLOCK": 128}})
    s = spec(configs=[{"BLOCK": 128}], repetition=kl.Repetition(calls=calls))
    p = repetition.stream(s, {"M": 2, "N": 65}, (), "cuda")
    assert plan(p) == {"calls": 300, "seconds": repetition.STREAM_DECLARED_S["cuda"], "pattern": "BAAB",
                       "fresh": False, "declared": True}
    assert p.config == (("BLOCK", 128),)
    assert "B: config BLOCK=128" in p.why and "A: the launcher's own config" in p.why


def test_a_declared_stream_s_seconds_stay_within_half_the_point_s_timeout():
    s = spec(timeout_s=20.0, repetition=kl.Repetition(calls=kl.Calls(count=50)))
    assert plan(repetition.stream(s, {"M": 1, "N": 1}, (), "cpu"))["seconds"] == 10.0
    s2 = spec(repetition=kl.Repetition(calls=kl.Calls(count=50, seconds=4.0)))
    assert plan(repetition.stream(s2, {"M": 1, "N": 1}, (), "cpu"))["seconds"] == 4.0


# ---------------------------------------------------------------------------- sanitizers
def test_sanitized_turns_a_point_into_its_tool_s_point():
    p = Point("rows", 2, (("M", 3), ("N", 5)), (), "x: ties")
    s = repetition.sanitized(p, "racecheck")
    assert (s.mode, s.kind, dict(s.repeat)) == (Mode.SANITIZE, "sanitize", {"tool": "racecheck",
                                                                           "seconds": repetition.SANITIZE_S})
    assert s.why.startswith("compute-sanitizer racecheck (shared-memory hazards") and s.why.endswith("x: ties")


def test_the_smallest_failed_point_that_runs_gets_memcheck_and_initcheck_at_rung_5():
    s = spec()
    big = Point("rows", 1, (("M", 8), ("N", 64)), (), "big")
    small = Point("rows", 2, (("M", 2), ("N", 3)), (), "small", seed=77)
    model = Point("rows", 8, (("M", 1), ("N", 1)), (), "model", kind="model", mode="model")
    repeat = Point("rows", 5, (("M", 1), ("N", 1)), (), "rep", mode="repeat", kind="repeat",
                   repeat=(("calls", 1), ("seconds", 1.0), ("inputs", "same"), ("launch", "eager")))
    got = list(repetition._on_failed(s, (big, model, repeat, small)))
    assert [dict(p.repeat)["tool"] for p in got] == list(repetition.ON_FAILED)
    assert all(p.rung == 5 and p.sizes == {"M": 2, "N": 3} and p.seed == 77 for p in got)
    assert f"failed rung 2 ({small.id})" in got[0].why
    assert list(repetition._on_failed(s, (model, repeat))) == []


def test_failed_points_reach_the_sanitizers_on_cuda_only():
    failed = (Point("rows", 2, (("M", 2), ("N", 3)), (), "small"),)
    on = lambda b: [p for p in repetition.points(spec(), b, failed=failed) if "failed rung" in p.why]
    assert len(on(GPU_BUDGET)) == 2 and on(CPU_BUDGET) == []


def test_the_points_are_the_same_data_on_every_call_and_round_trip():
    a, b = list(repetition.points(spec(), CPU_BUDGET)), list(repetition.points(spec(), CPU_BUDGET))
    assert a == b and all(Point.parse(repr(p)) == p for p in a)
    assert len({dataclasses.astuple(p) for p in a}) == len(a)
