"""Rung 5 on the CPU: the generator's points, the statistics, the repeat mode (eager here; the
graph path under CUDA only), its checks and words, the sanitizer's report parser, and the CPU
zoo case caught by `--rungs 5` with its twin clean."""
import json
import os
import subprocess
import sys

import pytest
import torch

import kladder as kl
from kladder.core import stats
from kladder.checks import sanitizer as sanitizer_check
from kladder.gen.gaps import repetition
from kladder.core.outcome import Check, NoteKind, Skip
from kladder.core.point import Point
from kladder.report.jsonout import outcome_dict
from kladder.report.words import message, note_text, pattern_label
from kladder.run.harness import Harness
from kladder.run.modes import sanitize
from kladder.run.modes.base import Sanitized
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET, call_budget
from conftest import FakeCudaGraph, fake_cuda_graphs, run_cli

HERE = os.path.dirname(__file__)
SAMPLES = os.path.join(HERE, "data", "sanitizer")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA: graph capture and a device to race on")


def _norm_spec(**over):
    base = dict(kernel=lambda x, w, SPLIT=1: x * w, reference=lambda x, w: x * w,
                args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]), "w": kl.Tensor("N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"),
                dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 65536, tile=1024)}, configs=[{"SPLIT": 4}])
    base.update(over)
    return kl.Spec("split_norm", **base)


# ---------------------------------------------------------------------------- points
def test_gpu_points_repeat_the_widest_rows_captured_eager_fresh_and_under_load():
    pts = list(repetition.points(_norm_spec(), GPU_BUDGET, time_budget="release"))
    wide = [p for p in pts if p.mode == "repeat" and p.sizes == {"M": 64, "N": 65536}]
    plans = [dict(p.repeat) for p in wide]
    assert {(d["inputs"], d["launch"], d.get("load", False)) for d in plans} == {
        ("same", "graph", False), ("fresh", "graph", False), ("same", "eager", False), ("same", "graph", True)}
    assert sum(p.config == (("SPLIT", 4),) for p in wide) == 1            # every config at the widest rows
    assert all(d["calls"] == 100_000 and d["seconds"] == 10.0 for d in plans)
    base = [p for p in pts if p.mode == "repeat" and p not in wide]
    assert base and all(p.sizes["N"] == 2049 for p in base)                # a tail in the tiled dim
    tools = [dict(p.repeat)["tool"] for p in pts if p.mode == "sanitize"]
    assert tools == ["memcheck", "racecheck", "initcheck", "synccheck"]
    assert all(p.rung == 5 and p.why for p in pts)
    assert Point.parse(repr(wide[0])) == wide[0]                           # the plan travels with the point


def test_the_commit_budget_repeats_2_s_a_point_on_a_gpu_streams_1_s_and_runs_memcheck_alone():
    """--budget commit (the default): the same points, shorter; release runs the long ones."""
    commit = list(repetition.points(_norm_spec(), GPU_BUDGET))
    release = list(repetition.points(_norm_spec(), GPU_BUDGET, time_budget="release"))
    assert [p for p in commit if p.mode == "repeat"] != [p for p in release if p.mode == "repeat"]
    assert [(p.sizes, p.config) for p in commit if p.mode == "repeat"] == [
        (p.sizes, p.config) for p in release if p.mode == "repeat"]
    assert all((dict(p.repeat)["calls"], dict(p.repeat)["seconds"]) == (100_000, 2.0) for p in commit if p.mode == "repeat")
    assert [dict(p.repeat)["tool"] for p in commit if p.mode == "sanitize"] == ["memcheck"]
    [stream] = [p for p in commit if p.mode == "calls"]
    assert dict(stream.repeat)["seconds"] == 1.0 and "1 s" in stream.why
    cpu = [p for p in repetition.points(_norm_spec(), CPU_BUDGET) if p.mode == "repeat"]
    assert all((dict(p.repeat)["calls"], dict(p.repeat)["seconds"]) == (100, 5.0) for p in cpu)   # calls bound them
    with pytest.raises(ValueError, match="--budget 'weekly': use commit or release"):
        list(repetition.points(_norm_spec(), CPU_BUDGET, time_budget="weekly"))


def test_cpu_points_are_eager_small_and_keep_the_budget_asked_for():
    pts = list(repetition.points(_norm_spec(), CPU_BUDGET, repeat=40))
    runs = [p for p in pts if p.mode == "repeat"]
    assert {dict(p.repeat)["launch"] for p in runs} == {"eager"}
    assert all(p.sizes["M"] <= 2 and p.sizes["M"] * p.sizes["N"] <= 1 << 13 for p in runs)
    assert all(dict(p.repeat)["calls"] == 40 for p in runs)
    assert call_budget("cuda", seconds=30).calls == 0 and call_budget("cuda", 500).calls == 500
    assert call_budget("cpu") == call_budget("cpu", None, None)


def test_the_smallest_point_that_failed_an_earlier_rung_gets_memcheck_and_initcheck_on_cuda():
    spec = _norm_spec()
    big = Point("split_norm", 1, (("M", 64), ("N", 4097)), (("x", "bfloat16"),))
    small = Point("split_norm", 2, (("M", 1), ("N", 1025)), (("x", "bfloat16"),), values=(("x", "huge"),))
    extra = [p for p in repetition.points(spec, GPU_BUDGET, failed=(big, small)) if "failed rung" in p.why]
    assert [(p.sizes, dict(p.repeat)["tool"], p.values) for p in extra] == [
        ({"M": 1, "N": 1025}, "memcheck", (("x", "huge"),)), ({"M": 1, "N": 1025}, "initcheck", (("x", "huge"),))]
    assert not [p for p in repetition.points(spec, CPU_BUDGET, failed=(small,)) if "failed rung" in p.why]


def test_deterministic_must_be_a_bool():
    with pytest.raises(kl.SpecError, match=r"deterministic: got 'yes'"):
        _norm_spec(repetition=kl.Repetition(deterministic="yes"))


# ---------------------------------------------------------------------------- statistics
def test_clopper_pearson_known_values():
    assert stats.upper_bound(0, 200_000) == pytest.approx(1.4979e-5, rel=1e-3)      # "p < 1.5e-5 at 95%"
    assert stats.interval(0, 200_000) == (0.0, pytest.approx(1.8444e-5, rel=1e-3))
    lo, hi = stats.interval(2, 30)                                                   # the exact interval for 2 in 30
    assert lo == pytest.approx(0.008178, rel=1e-3) and hi == pytest.approx(0.22074, rel=1e-3)
    assert stats.interval(30, 30)[1] == 1.0 and stats.upper_bound(5, 5) == 1.0


def test_calls_to_see_the_rates_of_the_reference():
    assert stats.calls_to_see(1e-5, 0.5) == 69_315                                    # "about 70,000 for even odds"
    assert stats.calls_to_see(7 / 292_889_600, 0.5) == pytest.approx(29e6, rel=0.01)  # "about 29 million"
    assert stats.chance_to_see(7 / 292_889_600, 1000) == pytest.approx(2.39e-5, rel=0.01)   # "0.002%"
    assert stats.calls_to_see(0.0, 0.95) == 0 and stats.chance_to_see(0.0, 10) == 0.0


def test_summary_is_finite_and_its_curve_climbs_to_certainty():
    s = stats.summary(7, 100_000)
    json.dumps(s, allow_nan=False)
    ns = [row[0] for row in s["curve"]]
    assert ns == sorted(ns) and ns[0] == 1
    assert all(lo <= p <= hi for _, p, lo, hi in s["curve"])
    assert s["curve"][-1][2] > 0.999                                                 # even the interval's low end
    assert s["calls_50"] == stats.calls_to_see(7e-5, 0.5)


# ---------------------------------------------------------------------------- the repeat mode
class Calls:
    n = 0


def _every_tenth_drops_the_tail(x, out):
    """A launcher wrong every 10th call (an out-argument, so the ring hands it a slot)."""
    Calls.n += 1
    out.copy_(2 * x)
    if Calls.n % 10 == 0:
        out[..., -1] = 0


def _right(x, out):
    out.copy_(2 * x)


def _one_ulp_every_third(x):
    Calls.n += 1
    y = 2 * x
    return torch.nextafter(y, torch.full_like(y, float("inf"))) if Calls.n % 3 == 0 else y


def _memo_by_shape(x):
    """Returns the first call's result for every later call of the shape: right on the same
    inputs, wrong on any other."""
    Calls.n += 1
    if not hasattr(_memo_by_shape, "kept"):
        _memo_by_shape.kept = 2 * x
    return _memo_by_shape.kept.clone()


def _double(kernel, out=True, **kw):
    args = {"x": kl.Tensor("M N", dtype="float32")}
    if out:
        args["out"] = kl.Out("M N", like="x")
    return kl.Spec("double", kernel=kernel, reference=lambda x: 2 * x, args=args, dims={"M": kl.Dim(1, 8), "N": kl.Dim(1, 64)},
                   returns=None if out else kl.Tensor("M N", like="x"), **kw)


def _repeat_point(inputs="same", calls=40, launch="eager"):
    return Point("double", 5, (("M", 2), ("N", 17)), kind="repeat", mode="repeat",
                 repeat=(("calls", calls), ("seconds", 30.0), ("inputs", inputs), ("launch", launch)))


@pytest.fixture
def calls():
    Calls.n = 0
    if hasattr(_memo_by_shape, "kept"):
        del _memo_by_shape.kept
    return Calls


def test_a_call_wrong_now_and_then_fails_with_its_rate_and_the_calls_it_was_wrong_in(calls):
    o = run_point(_double(_every_tenth_drops_the_tail), _repeat_point(), "cpu").outcome
    assert o.status == "failed"
    f = o.headline
    assert f.check == Check.REPEATS and f.call == "call 10 of 41"
    x = f.facts
    assert (x.wrong, x.compared, x.first_calls) == (4, 40, [10, 20, 30, 40])
    assert (x.lo, x.hi) == pytest.approx(stats.interval(4, 40))
    assert pattern_label(f) == "4 of 40 calls wrong; the worst: the last column of every row"
    assert "4 of 40 calls were wrong" in message(f) and "95% CI 0.028 to 0.24" in message(f)
    json.dumps(outcome_dict(o), allow_nan=False)                       # strict JSON, the curve included


def test_a_clean_run_passes_and_says_the_bound_it_proves(calls):
    o = run_point(_double(_right), _repeat_point(calls=40), "cpu").outcome
    assert o.status == "passed" and not o.warnings
    assert o.note.kind == NoteKind.REPEATS_CLEAN
    assert o.note.facts.bound == pytest.approx(stats.upper_bound(0, 40))
    assert note_text(o.note).startswith("0 of 40 calls differ from the first call on the same inputs: p < 0.072 at 95%")


def test_differences_within_the_tolerance_warn_unless_the_spec_declares_determinism(calls):
    o = run_point(_double(_one_ulp_every_third, out=False), _repeat_point(), "cpu").outcome
    assert o.status == "passed" and [w.check for w in o.warnings] == [Check.NONDETERMINISTIC]
    assert o.warnings[0].facts.differ == 13 and o.warnings[0].facts.wrong == 0
    assert "0 of 40 calls wrong (13 differ within the tolerance)" in note_text(o.note)
    calls.n = 0
    o = run_point(_double(_one_ulp_every_third, out=False, repetition=kl.Repetition(deterministic=True)), _repeat_point(), "cpu").outcome
    assert o.status == "failed" and o.headline.check == Check.REPEATS and o.headline.facts.bitwise
    assert "although the spec declares deterministic=True" in message(o.headline)


def test_fresh_inputs_reach_the_kernel_from_a_pool(calls):
    same = run_point(_double(_memo_by_shape, out=False), _repeat_point("same"), "cpu").outcome
    assert same.status == "passed"
    calls.n = 0
    del _memo_by_shape.kept
    fresh = run_point(_double(_memo_by_shape, out=False), _repeat_point("fresh"), "cpu").outcome
    assert fresh.status == "failed"
    assert {f.call for f in fresh.findings} == {f"call {i} (the first on input set {i} of 4, eager)" for i in (2, 3, 4)}
    assert calls.n == 44                                                # 4 first calls, then 40 from the pool


def test_load_and_sanitize_need_cuda_and_say_so():
    spec = _double(_right)
    load = Point("double", 5, (("M", 2), ("N", 17)), kind="repeat", mode="repeat", repeat=(("load", True),))
    o = run_point(spec, load, "cpu").outcome
    assert o.status == "skipped" and "repeat under load mode needs CUDA" in note_text(o.note)
    san = repetition.sanitized(load, "racecheck")
    o = run_point(spec, san, "cpu").outcome
    assert o.status == "skipped" and "sanitize mode needs CUDA" in note_text(o.note)


# ---------------------------------------------------------------------------- the sanitizer
def _sample(name):
    with open(os.path.join(SAMPLES, name)) as f:
        return f.read()


@pytest.mark.parametrize("log, tool, n, kind, kernel, where", [
    ("memcheck_overrun.log", "memcheck", 2, "invalid", "_store_kernel", ("small_overrun.py", 41)),
    ("memcheck_older.log", "memcheck", 1, "invalid", "fused_moe_kernel", ("fused_moe.py", 175)),
    ("racecheck_race.log", "racecheck", 2, "race", "shift_race", ("planted.cu", 9)),
    ("racecheck_older.log", "racecheck", 1, "race", "scalar_intra_warp_reduction(Sum const &,double*,bool,int)",
     ("Kokkos_FunctorAdapter.hpp", 1571)),
    ("initcheck_uninit.log", "initcheck", 2, "uninitialized", "_rstd_kernel", ("planted.py", 58)),
    ("initcheck_cub_older.log", "initcheck", 1, "uninitialized",
     "void cudf::count_set_bits_kernel<int=256>(unsigned int const *,int,int,int*)", ("", 0)),
    ("synccheck_divergent.log", "synccheck", 2, "barrier", "half_barrier", ("planted.cu", 24)),
])
def test_the_parser_reads_each_tool_in_both_layouts(log, tool, n, kind, kernel, where):
    errors, summary = sanitize.parse(_sample(log), tool)
    assert summary == n and len(errors) == n
    e = errors[0]
    assert (e.kind, e.kernel, os.path.basename(e.file), e.line) == (kind, kernel, *where)


def test_findings_group_the_errors_name_the_line_and_say_what_the_tool_cannot_see():
    errors, summary = sanitize.parse(_sample("memcheck_overrun.log"), "memcheck")
    found, warned, note = sanitizer_check.judge(Sanitized("memcheck", errors, summary, 2))
    assert len(found) == 1 and found[0].facts.count == 2 and note is None
    msg = message(found[0])
    assert "out-of-bounds write of 2 bytes in `_store_kernel` at /work/kladder/src/kladder/zoo/small_overrun.py:41" in msg
    assert "0 bytes after the nearest allocation" in msg and "cannot see a store that lands inside another" in msg
    errors, summary = sanitize.parse(_sample("racecheck_race.log"), "racecheck")
    found, _, _ = sanitizer_check.judge(Sanitized("racecheck", errors, summary, 2))
    assert len(found) == 2 and found[0].facts.count == 248
    assert "a write in `shift_race` at /work/kladder/bench/planted.cu:9 and a read" in message(found[0])
    assert "racecheck covers shared memory only" in message(found[0])
    assert pattern_label(found[0]) == "racecheck: a write-read race in shared memory"


def test_racecheck_warnings_warn_a_clean_run_notes_and_an_unread_report_still_fails():
    errors, summary = sanitize.parse(_sample("racecheck_older.log"), "racecheck")
    found, warned, note = sanitizer_check.judge(Sanitized("racecheck", errors, summary, 2))
    assert not found and len(warned) == 1 and note.kind == NoteKind.SANITIZER_CLEAN
    found, _, note = sanitizer_check.judge(Sanitized("memcheck", [], 0, 2))
    assert not found and "no errors in 2 calls" in note_text(note)
    found, _, note = sanitizer_check.judge(Sanitized("initcheck", [], 3, 2))
    assert found and found[0].facts.kind == "unread" and note is None


def test_the_child_runs_under_the_tool_with_the_caching_allocator_off(monkeypatch, tmp_path):
    seen = {}

    def fake_run(cmd, env, capture_output, text, timeout):
        seen["cmd"], seen["env"] = cmd, env
        log = cmd[cmd.index("--log-file") + 1]
        with open(log, "w") as f:
            f.write(_sample("memcheck_overrun.log"))
        return subprocess.CompletedProcess(cmd, sanitize.FOUND_ERRORS, "", "")

    monkeypatch.setattr(sanitize.subprocess, "run", fake_run)
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: ("/opt/cuda/bin/compute-sanitizer", []))
    from kladder.run.forkclient import Children
    point = repetition.sanitized(Point("double", 1, (("M", 2), ("N", 17))), "memcheck")
    h = Harness(_double(_right), point, "cpu", children=Children("tests/specs/good.py::spec"))
    seen_obs = list(sanitize.MODE.observe(h))
    assert seen["cmd"][:3] == ["/opt/cuda/bin/compute-sanitizer", "--tool", "memcheck"]
    assert seen["cmd"][-5:-1] == ["-m", "kladder.run.modes.sanitize", "tests/specs/good.py::spec", "cpu"]
    assert json.loads(seen["cmd"][-1])["mode"] == "eager"
    assert seen["env"]["PYTORCH_NO_CUDA_MEMORY_CACHING"] == "1"
    assert len(seen_obs) == 1 and seen_obs[0].summary == 2


def test_no_sanitizer_on_the_path_is_a_skip_with_where_it_looked(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(sanitize.os.path, "isfile", lambda p: False)
    monkeypatch.setattr(sanitize.shutil, "which", lambda *a, **k: None)   # python 3.12's which does not ask isfile
    h = Harness(_double(_right), repetition.sanitized(Point("double", 1, (("M", 2), ("N", 17))), "initcheck"), "cpu")
    with pytest.raises(Skip) as e:
        list(sanitize.MODE.observe(h))
    assert e.value.note.kind == NoteKind.NO_SANITIZER and "/usr/local/cuda/bin" in note_text(e.value.note)


# ---------------------------------------------------------------------------- the CPU zoo case
def _zoo(tmp_path, *extra):
    out = tmp_path / "r.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "zoo", "climb", "sampled_timing", "--rungs", "5",
                        "--device", "cpu", "--repeat", "24", "--json", str(out), "--log", str(tmp_path / "l.jsonl"),
                        *extra], capture_output=True, text=True, timeout=600)
    return p, json.loads(out.read_text(), parse_constant=_no_constant)


def _no_constant(name):
    raise ValueError(f"not strict JSON: {name}")


def test_the_cpu_case_is_caught_by_rung_5_with_its_rate(tmp_path):
    p, doc = _zoo(tmp_path)
    assert p.returncode == 1, p.stdout[-3000:]
    bad = [pt for pt in doc["rungs"][4]["points"] if pt["status"] == "failed"]
    assert bad and all(pt["failure"] == ("stream" if pt["point"]["mode"] == "calls" else "repeats") for pt in bad)
    widest = next(pt for pt in bad if pt["point"]["dims"] == [["M", 1], ["N", 8192]])
    facts = widest["findings"][0]["facts"]
    assert facts["first_calls"] == [16] and facts["wrong"] == 1 and facts["compared"] == 24   # the 16th of a streak
    assert (facts["lo"], facts["hi"]) == pytest.approx(stats.interval(1, 24))
    assert widest["pattern"].startswith("1 of 24 calls wrong; the worst: most elements of every row")
    assert "repeats:  1 of 24 calls were wrong" in p.stdout and "95% CI" in p.stdout


def test_the_cpu_case_twin_is_clean_and_says_what_it_proved(tmp_path):
    p, doc = _zoo(tmp_path, "--fixed")
    assert p.returncode == 0, p.stdout[-3000:]
    pts = doc["rungs"][4]["points"]
    ran = [pt for pt in pts if pt["status"] != "skipped"]
    assert ran and all(pt["status"] == "passed" for pt in ran)
    assert all(pt["reason"].startswith("0 of ") and "p < " in pt["reason"] for pt in ran)
    assert "What the passing rung-5 points proved" in p.stdout


# ---------------------------------------------------------------------------- CUDA
@needs_cuda
def test_graph_path_replays_captured_calls_and_finds_a_rare_difference(calls):
    spec = _double(_right)
    o = run_point(spec, _repeat_point(calls=5000, launch="graph"), "cuda").outcome
    assert o.status == "passed" and o.note.facts.launch == "graph" and o.note.facts.calls >= 5000


@needs_cuda
def test_a_kernel_that_cannot_be_captured_falls_back_to_eager_and_says_so(calls):
    def syncs(x, out):
        out.copy_(2 * x)
        torch.cuda.synchronize()          # not allowed while capturing
    o = run_point(_double(syncs), _repeat_point(calls=200, launch="graph"), "cuda")
    assert o.outcome.status == "passed" and o.outcome.note.facts.fallback is not None
    assert o.fatal and "cannot be captured" in note_text(o.outcome.note)


@needs_cuda
@pytest.mark.parametrize("out", [True, False], ids=["out-argument", "returned"])
def test_the_fused_batch_finds_what_the_op_by_op_batch_finds(out, monkeypatch):
    """A kernel whose every 7th call (a device-side count, so that replays see it) writes 1 into
    its first element: the batch compared in one post graph names the same calls wrong, the same
    worst call, as the batch compared op by op."""
    from kladder.run.modes import repeat as rep
    counter = torch.zeros((), dtype=torch.int64, device="cuda")

    def every_seventh(x, *rest):
        y = 2 * x
        counter.add_(1)
        y.view(-1)[0] += (counter % 7 == 0).to(y.dtype)
        if rest:
            rest[0].copy_(y)
            return None
        return y

    def run():
        counter.zero_()
        o = run_point(_double(every_seventh, out=out), _repeat_point(calls=3000, launch="graph"), "cuda").outcome
        return o.headline.facts.to_dict()
    fused = run()
    assert fused["post_graph"] == "captured"
    monkeypatch.setattr(rep.Graphed, "fuse", lambda self, differ, worst: None)
    op_by_op = run()
    assert op_by_op["post_graph"] == "" and fused["launch"] == op_by_op["launch"] == "graph"
    assert fused["wrong"] > 0 and fused["first_calls"] == op_by_op["first_calls"]
    assert (fused["wrong"], fused["compared"], fused["worst_call"]) == (op_by_op["wrong"], op_by_op["compared"],
                                                                        op_by_op["worst_call"])


def _recorded(fn):
    def kernel(*args, **kwargs):
        return FakeCudaGraph.record(fn, args, kwargs, fn(*args, **kwargs))
    return kernel


@pytest.fixture
def fake_cuda(monkeypatch):
    fake_cuda_graphs(monkeypatch)


@pytest.mark.parametrize("out", [True, False], ids=["out-argument", "returned"])
def test_the_graph_runner_numbers_replayed_calls_and_keeps_the_worst(fake_cuda, calls, out):
    """Replay 1's first calls are the first calls; every later call is compared, numbered over
    all calls made; a captured call's returned tensors are stacked into the ring."""
    from kladder.checks import Judge
    from kladder.run.modes.differ import Differ
    from kladder.run.modes.repeat import Graphed, Plan

    def every_tenth(x, *rest):
        Calls.n += 1
        y = 2 * x
        if Calls.n % 10 == 0:
            y[..., 0] = 7.0
        if rest:
            rest[0].copy_(y)
            return None
        return y

    spec = _double(_recorded(every_tenth), out=out)
    point = _repeat_point("fresh", calls=40, launch="graph")
    h = Harness(spec, point, "cpu")
    sets = [h.prepare(seed=point.seed + i) for i in range(4)]
    runner = Graphed(h, sets, Plan.of(point, "cpu"))
    runner.capture()                                   # 4 warm-up calls, then 8 captured
    assert Calls.n == 4 + 8 and runner.k == 8
    firsts = runner.first_calls()                      # replay 1: calls 13..20 of the kernel
    r = runner.repeat(Differ(spec, point, [o for _, o in firsts]), None)
    assert (r.calls, r.firsts, r.launch, r.stopped) == (40, 4, "graph", "calls")
    differ = sum(r.bits.values())
    assert differ.numel() == 36                        # every call but the 4 first
    wrong_kernel_calls = [n for n in range(13, 13 + 40) if n % 10 == 0]          # the kernel's own count
    assert sorted((differ > 0).nonzero().flatten().add(5).tolist()) == [n - 12 for n in wrong_kernel_calls
                                                                       if n - 12 > 4]
    assert r.worst_call == wrong_kernel_calls[0] - 12 and r.worst is not None
    judge = Judge(spec, point, "cpu")
    judge.repeats(r, None)
    assert judge.findings and judge.findings[0].facts.wrong == len([n for n in wrong_kernel_calls if n - 12 > 4])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # the interpreter computes inf - inf in numpy
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_the_fused_triton_pass_counts_what_the_torch_ops_count(dtype):
    """The CUDA pass (run here under Triton's interpreter) against the torch ops, on a ring of 8
    calls over 2 input sets with bits flipped, NaNs (equal and not), infinities and big errors."""
    pytest.importorskip("triton")
    from kladder.run.modes import differ as d
    dev = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
    spec = kl.Spec("p", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", dtype=str(dtype).removeprefix("torch.")), dims={"N": kl.Dim(1, 5000)})
    point = Point("p", 5, (("N", 4100),))
    g = torch.Generator().manual_seed(0)
    base = [(torch.randn(4100, generator=g) * 10).to(dtype) for _ in range(2)]
    if dtype.is_floating_point:
        base[0][5] = float("nan")
    ring = torch.stack([base[k % 2] for k in range(8)]).clone()
    if dtype.is_floating_point:
        ints = ring.view(torch.int16 if dtype == torch.float16 else torch.int32)
        ints[1, 7] += 1                                    # one ulp: bits differ, within the tolerance
        ring[2, 9] = float("inf")                          # beyond whatever the tolerance
        ring[3, 4099] *= 1.5                               # far, in the last block
        ints[4, 5] += 1                                    # another NaN payload: bits differ, not far
    else:
        ring[1, 7] += 1
        ring[3, 4099] -= 5
    base, ring = [b.to(dev) for b in base], ring.to(dev)
    differ = d.Differ(spec, point, [{"out": b} for b in base])
    kernel = d._build()
    bits_t, far_t = differ._compare_torch("out", ring)
    k, numel = ring.shape
    ints = getattr(torch, d.INT_OF_SIZE[ring.element_size()])
    counts = torch.zeros(2, k, dtype=torch.int32, device=dev)
    lim = differ.allowed.get("out")
    kernel[(-(-numel // d.BLOCK), k)](ring.view(ints), differ.base["out"].view(ints), ring, differ.base["out"],
                                      lim if lim is not None else differ.base["out"], counts[0], counts[1], numel, 2,
                                      IS_FLOAT=lim is not None, WIDE=False, BLOCK=d.BLOCK)
    assert counts[0].tolist() == bits_t.tolist() and counts[1].tolist() == far_t.tolist()
    if dtype.is_floating_point:
        assert bits_t.tolist() == [0, 1, 1, 1, 1, 0, 0, 0] and far_t.tolist() == [0, 0, 1, 1, 0, 0, 0, 0]
    else:
        assert bits_t.tolist() == far_t.tolist() == [0, 1, 0, 1, 0, 0, 0, 0]


def test_a_batch_past_its_watchdog_is_a_hang_that_names_its_calls():
    from kladder.core.outcome import KernelError
    from kladder.run import faults
    from kladder.run.modes.repeat import _wait

    class Never:
        def query(self):
            return False

    with pytest.raises(KernelError) as e:
        _wait(Never(), "calls 1,025..1,280", 0.05)
    result = faults.kernel_error(_double(_right), _repeat_point(), e.value)
    assert result.fatal and result.outcome.headline.check == Check.HANG
    assert message(result.outcome.headline).startswith("calls 1,025..1,280 did not finish within 0.05 s (the batch's")
