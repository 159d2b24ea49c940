"""report/debugging.py: `kladder bisect`, `bench` and `explore` in words, from their facts built
here (nothing runs: no git, no kernel, no Hypothesis)."""
from __future__ import annotations

import pytest

from kladder.core.facts import PassedBelowFacts, ShrunkFacts
from kladder.core.point import Point
from kladder.report.debugging import _t, bench_text, bisect_step, bisect_text, explore_point, explore_text
from kladder.tools.bench import BenchKernel, BenchResult, Comparison
from kladder.tools.bisect import BisectResult, BisectStep, Candidate, Predicate
from kladder.tools.explore import Explored, ExploreResult, HypothesisSmallest


# ---------------------------------------------------------------------------- bisect
def _step(verdict="GOOD", commit="0123456789abcdef", subject="s" * 70, why="3 passed") -> BisectStep:
    return BisectStep(commit=commit, subject=subject, verdict=verdict, why=why, statuses={}, seconds=1.0)


def _bisect(**kw) -> BisectResult:
    base = dict(repo="/r", spec="add", good="aaaaaaaaaaaaaaa", bad="bbbbbbbbbbbbbbbb", device="cpu", predicate=Predicate(),
                ends={"bad": _step("BAD", "b" * 16, "bad end", "1 failed"), "good": _step("GOOD", "a" * 16, "good end")})
    return BisectResult(**{**base, **kw})


def test_bisect_step_cuts_commit_and_subject():
    assert bisect_step(_step()) == f"  GOOD  0123456789  {'s' * 60}  (3 passed)"


def test_bisect_found():
    r = _bisect(outcome="found", first_bad="c" * 40, first_bad_subject="break it", steps=[_step("BAD", "c" * 16, "x")])
    assert bisect_text(r).split("\n") == [
        "bisect add in /r: good aaaaaaaaaa, bad bbbbbbbbbb on cpu",
        " bad end: BAD   bbbbbbbbbb  bad end  (1 failed)",
        " good end: GOOD  aaaaaaaaaa  good end  (3 passed)",
        " steps:", "  BAD   cccccccccc  x  (3 passed)",
        f"first bad commit: {'c' * 40} break it", ""]


def test_bisect_ambiguous_lists_its_candidates():
    r = _bisect(outcome="ambiguous", ends={}, candidates=[Candidate("c1", "one"), Candidate("c2", "two")])
    assert bisect_text(r).split("\n")[1:] == [
        "the first bad commit is one of these (the commits between were skipped, so git cannot tell):",
        "  c1 one", "  c2 two", ""]


def test_bisect_with_wrong_ends_names_each_ends_verdict():
    r = _bisect(outcome="ends_wrong", ends={"good": _step("BAD"), "bad": None})
    assert bisect_text(r).split("\n")[-2] == ("nothing to bisect: GOOD is BAD and BAD is not judged; the point must "
                                              "pass at GOOD and fail at BAD (each end's reason is above).")


def test_bisect_interrupted_and_failed():
    assert "interrupted: the bisection was reset" in bisect_text(_bisect(outcome="interrupted"))
    tail = "x" * 1000 + "END"
    lines = bisect_text(_bisect(outcome="bisect_failed", git_output_tail=tail)).split("\n")
    assert lines[-3] == "git bisect did not name a first bad commit; its output ends:"
    assert lines[-2] == tail[-800:] and len(lines[-2]) == 800
    assert bisect_text(_bisect(outcome="bisect_failed")).endswith("its output ends:\n\n")


# ---------------------------------------------------------------------------- bench
@pytest.mark.parametrize("s, text", [(None, "-"), (2.5, "2.5 s"), (1.0, "1 s"), (0.0123, "12.3 ms"),
                                     (4.56e-6, "4.56 us"), (7.8e-8, "78 ns"), (0.0, "0 ns")])
def test_time_units(s, text):
    assert _t(s) == text


def _bench(**kw) -> BenchResult:
    point = Point(spec="add", rung=1, dims=(("M", 4), ("N", 7)), dtypes=(("x", "float16"),))
    a = BenchKernel(ref="a.py", rounds_s=[1e-3], median_s=1.5e-3, iqr_s=1e-5, min_s=1.4e-3, bytes_per_s=2.5e11,
                    flops_per_s=None, roofline_pct=None)
    base = dict(point=point, device="cuda", device_name="H100", rounds=20, calls=10, warmup=10, bytes=4096, flops=None,
                peak_bandwidth=None, peak_flops=None, timer="CUDA events", between_calls="an L2 flush",
                kernels={"A": a})
    return BenchResult(**{**base, **kw})


def test_bench_text_of_one_kernel():
    assert bench_text(_bench()).split("\n") == [
        "bench add at M = 4, N = 7 (x float16) on H100:",
        "  20 interleaved rounds of 10 calls each after 10 warm-up calls; an L2 flush before each call; timed by CUDA "
        "events",
        "  4096 bytes in the point's tensors",
        "         median        IQR        min      bytes/s       FLOP/s  roofline  spec",
        "  A      1.5 ms      10 us     1.4 ms   250.0 GB/s            -         -  a.py", ""]


def test_bench_text_with_flops_peaks_and_a_comparison_each_way():
    base = dict(flops=1.234e9, peak_bandwidth=3.35e12, peak_flops=9.89e14)
    text = bench_text(_bench(**base, comparison=Comparison(rounds=20, median_a=2e-3, median_b=1e-3, iqr_a=0, iqr_b=0,
                                                           speedup=2.0, p=0.00012, alpha=0.05, verdict="faster")))
    assert "  4096 bytes in the point's tensors, 1.234e+09 FLOPs\n" in text
    assert "  measured peak: 3350.0 GB/s (1 GiB device-to-device copy), 989.0 TFLOP/s (bfloat16 matmul)\n" in text
    assert text.endswith("B is 2x faster, p = 0.00012 (Wilcoxon signed-rank over 20 paired rounds)\n")
    slower = Comparison(rounds=9, median_a=1e-3, median_b=4e-3, iqr_a=0, iqr_b=0, speedup=0.25, p=0.01, alpha=0.05,
                        verdict="slower")
    assert bench_text(_bench(comparison=slower)).endswith("B is 4x slower, p = 0.01 (Wilcoxon signed-rank over 9 "
                                                          "paired rounds)\n")
    same = Comparison(rounds=9, median_a=1e-3, median_b=1.1e-3, iqr_a=0, iqr_b=0, speedup=0.9, p=0.4, alpha=0.05,
                      verdict="no_difference")
    assert bench_text(_bench(comparison=same)).endswith("no difference shown, p = 0.4 (Wilcoxon signed-rank over 9 "
                                                        "paired rounds; medians 1 ms and 1.1 ms)\n")


def test_bench_text_on_the_cpu_says_the_numbers_mean_nothing_for_a_gpu():
    text = bench_text(_bench(device="cpu", device_name="cpu", point=Point(spec="add", rung=1, dims=(("M", 4),))))
    assert text.startswith("bench add at M = 4 on cpu:\n")
    assert text.endswith("run it with --device cuda\n")


# ---------------------------------------------------------------------------- explore
def _explored(status="passed", check=None, replayed=False, swept=False, m=4, values=()) -> Explored:
    p = Point(spec="add", rung=2, dims=(("M", m), ("N", 7)), values=values)
    return Explored(point=p, id=p.id, status=status, check=check, replayed=replayed, swept=swept, phase="draw",
                    repro=f"kladder repro add '{p.id}'", seconds=0.1, at_s=1.0)


def _explore(points, failure=None, **kw) -> ExploreResult:
    base = dict(spec="add", ref="specs/add.py", rungs=[1, 2], budget_s=60.0, shrink_s=None, stopped="budget",
                points=points, replayed=[], swept=0, failure=failure, found_after_s=None, too_dear=0, seconds=12.34)
    return ExploreResult(**{**base, **kw})


def test_explore_point():
    assert explore_point(_explored()) == "  passed  r2-M=4-N=7"
    assert explore_point(_explored("failed", "values", replayed=True)) == "  failed  r2-M=4-N=7 [values] (replayed)"


def test_explore_without_a_failure_says_why_it_stopped():
    pts = [_explored(), _explored(m=8), _explored("skipped", m=9, replayed=True)]
    assert explore_text(_explore(pts)).split("\n") == [
        "explore add (rungs 1, 2): 3 points drawn by Hypothesis in 12.3 s, 1 replayed from earlier runs",
        "  2 passed, 1 skipped",
        "no failure found (the budget (60 s) is spent); this complements the fixed ladder (`kladder climb`), it does "
        "not replace it", ""]
    assert "no failure found (Hypothesis ran out of points)" in explore_text(_explore([], stopped="exhausted"))
    assert "no failure found (hypothesis: Flaky)" in explore_text(_explore([], stopped="hypothesis: Flaky"))


def test_explore_with_a_shrunk_failure():
    bad = _explored("failed", "values", m=4096, values=(("x", "huge"),))
    smallest = Point(spec="add", rung=2, dims=(("M", 3), ("N", 7)))
    shrunk = ShrunkFacts(from_={}, check="values", method="bisect", runs=5, complete=True,
                         passes_at={"M": PassedBelowFacts(size=2, status="passed")},
                         smallest={"dims": [["M", 3], ["N", 7]]}, cannot_shrink=None, cause=None, repro="kladder repro S")
    text = explore_text(_explore([bad], failure=bad, stopped="failed", shrunk=shrunk,
                                 hypothesis_smallest=HypothesisSmallest(point=smallest, id=smallest.id)))
    assert text.split("\n")[2:] == [
        "FAILED (values) at M = 4096, N = 7; x: huge",
        "  Hypothesis shrank it to M = 3, N = 7",
        "  smallest failing point: M = 3, N = 7, the same check (values), after 5 runs of a plain search; one below: "
        "M = 2: passed",
        "  repro: kladder repro S", ""]


def test_explore_failure_replayed_or_swept_keeps_its_own_repro():
    bad = _explored("failed", "guard", replayed=True)
    assert explore_text(_explore([bad], failure=bad)).split("\n")[2:] == [
        "FAILED (guard) at M = 4, N = 7 (replayed from an earlier run)", "  repro: kladder repro add 'r2-M=4-N=7'", ""]
    swept = _explored("failed", "guard", swept=True)
    assert "FAILED (guard) at M = 4, N = 7 (the sweep of value kinds and layouts)" in explore_text(_explore([swept],
                                                                                                           failure=swept))
