"""`kladder bench`: the statistics on constructed samples, the FLOPs expression, and the CLI on
the CPU (its table, its caveat, strict JSON). What the numbers are on a GPU is the H200's to
show (docs/results/), never a timed unit test here."""
import json
import os
import sys

import numpy as np
import pytest
from conftest import run_cli

from kladder.tools.bench import BenchProblem, compare, flops_of, min_rounds_for, roofline

HERE = os.path.dirname(__file__)
TRIVIAL = os.path.join(HERE, "specs", "trivial.py")


def test_a_real_difference_gives_a_small_p_and_the_right_ratio():
    rng = np.random.default_rng(1)
    a = 12e-6 * (1 + 0.02 * rng.standard_normal(20))
    b = a / 1.21 * (1 + 0.01 * rng.standard_normal(20))            # B 1.21x faster, with noise of its own
    c = compare(a, b)
    assert c["verdict"] == "faster" and c["p"] < 0.001
    assert c["speedup"] == pytest.approx(1.21, rel=0.03)
    assert compare(b, a)["verdict"] == "slower"


def test_identical_samples_show_no_difference():
    a = [1e-5, 1.1e-5, 0.9e-5, 1.2e-5, 1.05e-5, 1e-5]
    c = compare(a, list(a))
    assert c["verdict"] == "no_difference" and c["p"] == 1.0 and c["speedup"] == 1.0


def test_two_samples_of_one_distribution_show_no_difference():
    rng = np.random.default_rng(7)
    x = 1e-5 * (1 + 0.05 * rng.standard_normal((2, 20)))
    c = compare(x[0], x[1])
    assert c["verdict"] == "no_difference" and c["p"] > 0.05


def test_the_iqr_is_the_spread_of_the_rounds():
    c = compare([1, 2, 3, 4, 5], [1, 2, 3, 4, 6])
    assert c["iqr_a"] == 2.0 and c["median_a"] == 3.0


def test_too_few_rounds_are_refused_before_anything_runs():
    assert min_rounds_for(0.05) == 6            # 2 / 2^5 = 0.0625: five pairs can never show a difference
    with pytest.raises(BenchProblem, match="at least 2 rounds"):
        compare([1.0], [2.0])


def test_flops_from_the_dims():
    assert flops_of("2*M*N*K", {"M": 2, "N": 3, "K": 4}) == 48
    assert flops_of(None, {"M": 1}) is None
    with pytest.raises(BenchProblem, match="'Q' is not a dim"):
        flops_of("2*Q", {"M": 1})
    with pytest.raises(BenchProblem, match="only numbers"):
        flops_of("__import__('os')", {"M": 1})


def test_roofline_is_the_floor_time_over_the_time_taken():
    r = roofline(nbytes=1000, flops=None, bw=1e6, peak=None, seconds=2e-3)       # floor 1 ms, took 2 ms
    assert r["roofline_pct"] == pytest.approx(50.0) and r["bytes_per_s"] == pytest.approx(5e5)
    r = roofline(nbytes=1000, flops=4e6, bw=1e6, peak=1e9, seconds=8e-3)         # compute floor 4 ms
    assert r["roofline_pct"] == pytest.approx(50.0)
    assert roofline(nbytes=1000, flops=None, bw=None, peak=None, seconds=1e-3)["roofline_pct"] is None


def kladder(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(HERE), "src"))
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env=env)


def test_the_cli_times_a_kernel_against_another_on_the_cpu_and_says_what_that_is_worth(tmp_path):
    out = tmp_path / "b.json"
    p = kladder("bench", TRIVIAL, "--against", TRIVIAL, "--device", "cpu", "--rounds", "8", "--json", str(out),
                cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "8 interleaved rounds" in p.stdout and "median" in p.stdout and "IQR" in p.stdout
    assert "on the CPU these numbers mean nothing" in p.stdout
    assert ("no difference shown, p = " in p.stdout) != (" faster, p = " in p.stdout or " slower, p = " in p.stdout)
    doc = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert len(doc["kernels"]["A"]["rounds_s"]) == 8 and len(doc["kernels"]["B"]["rounds_s"]) == 8
    assert all(t > 0 for t in doc["kernels"]["A"]["rounds_s"])
    assert doc["bytes"] == 24 and doc["comparison"]["rounds"] == 8       # N = 3 float32 in and out


@pytest.mark.parametrize("args,words", [
    (["--rounds", "3"], "--rounds 3: with fewer than 6 rounds"),
    (["--flops", "2*Q"], "'Q' is not a dim"),
    (["--against", os.path.join(HERE, "specs", "good.py")], "are not SPEC's"),
])
def test_bad_requests_exit_2(tmp_path, args, words):
    p = kladder("bench", TRIVIAL, "--device", "cpu", *args, cwd=tmp_path)
    assert p.returncode == 2 and words in p.stderr, p.stdout + p.stderr


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="CUDA events, the L2 flush and the roofline need a GPU")
def test_on_cuda_a_kernel_against_itself_shows_no_difference_and_a_roofline(tmp_path):
    out = tmp_path / "b.json"
    ref = "kladder.zoo.rmsnorm_n_tail::fixed"
    p = kladder("bench", ref, "--against", ref, "--device", "cuda", "--json", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    assert doc["peak_bandwidth"] > 1e11 and 0 < doc["kernels"]["A"]["roofline_pct"] < 110
    assert doc["comparison"]["verdict"] == "no_difference"
