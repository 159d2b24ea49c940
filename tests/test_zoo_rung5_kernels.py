"""The rung-5 zoo kernels on their own, without kladder's machinery.

sampled_timing (everywhere): in steady state (the same shape 8 calls in a row) every 16th call
is timed and comes out scaled by about 1/sqrt(2) on the same inputs; a shape change resets the
streak; the twin is right on every call.
missing_fence, atomic_order: on the CPU the interpreter runs programs one after another, so
both kernels of each are right there, call after call, at shapes with and without tails. On
CUDA only: missing_fence's buggy leader reads stale partials in some rows of some calls on
fresh inputs and its twin never does; atomic_order's output bits change from call to call and
its twin's never do.

Each case keeps module-level state (a telemetry streak, a workspace); the `fresh` fixture
reloads the module, as a new process would.
"""
import importlib
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import atomic_order, missing_fence, sampled_timing  # noqa: E402

RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3, torch.float32: 1.3e-6}
needs_cuda = pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA: the interpreter runs programs one after another")

pytestmark = pytest.mark.usefixtures("poisoned_empty")


@pytest.fixture
def fresh():
    return importlib.reload


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def agrees(out, ref, rtol=None):
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + (rtol or RTOL[out.dtype]) * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


def norm_ref(case, x, w):
    return case.rmsnorm_ref(x.double(), w.double(), 1e-6)


# ---------------------------------------------------------------- sampled_timing
def test_sampled_timing_is_wrong_every_16th_call_of_a_streak(fresh):
    case = fresh(sampled_timing)
    x, w = randn(1, 300), randn(300, dtype=torch.float32)
    ref = norm_ref(case, x, w)
    wrong = [i for i in range(1, 41) if not agrees(case.rmsnorm(x, w), ref)]
    assert wrong == [16, 32]
    assert len(case._TELEMETRY.samples) == 2


def test_sampled_timing_timed_call_adds_its_squares_to_the_last_calls(fresh):
    case = fresh(sampled_timing)
    x, w = randn(2, 64), randn(64, dtype=torch.float32)
    first = case.rmsnorm(x, w)
    for _ in range(14):
        case.rmsnorm(x, w)
    timed = case.rmsnorm(x, w)                                          # call 16: twice the sum of squares
    ratio = float((timed.double() / first.double()).nanmedian())
    assert ratio == pytest.approx(2 ** -0.5, rel=2e-2)


def test_sampled_timing_a_new_shape_resets_the_streak(fresh):
    case = fresh(sampled_timing)
    a, b, w = randn(1, 64), randn(2, 64), randn(64, dtype=torch.float32)
    for i in range(40):                        # never 8 calls of one shape in a row: never timed
        x = a if (i // 7) % 2 == 0 else b
        assert agrees(case.rmsnorm(x, w), norm_ref(case, x, w))
    assert case._TELEMETRY.samples == []


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_sampled_timing_twin_is_right_on_every_call(fresh, dtype):
    case = fresh(sampled_timing)
    x, w = randn(2, 129, dtype=dtype), randn(129, dtype=torch.float32)
    ref = norm_ref(case, x, w)
    assert all(agrees(case.rmsnorm_fixed(x, w), ref) for _ in range(40))
    assert len(case._TELEMETRY_FIXED.samples) == 2                     # timed too, and right


# ---------------------------------------------------------------- missing_fence
@pytest.mark.parametrize("M, N", [(1, 1), (3, 1000), (1, 20000)])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_missing_fence_right_when_programs_run_one_after_another(fresh, fixed, M, N):
    """On the CPU (and in any single call where the stores land in time) both are right, at
    one split (N <= 8192) and three."""
    if DEVICE == "cuda":
        pytest.skip("on a GPU the buggy kernel may race in any call; the CUDA tests below measure it")
    case = fresh(missing_fence)
    fn = case.rmsnorm_fixed if fixed else case.rmsnorm
    for _ in range(2):
        x, w = randn(M, N), randn(N, dtype=torch.float32)
        assert agrees(fn(x, w), norm_ref(case, x, w))
    assert int(case._WORKSPACE_FIXED[x.device][1].sum() if fixed else case._WORKSPACE[x.device][1].sum()) == 0


def _stale_rows(fn, case, M, N, calls, fresh_inputs=True):
    """Rows wrong over `calls` calls: on fresh inputs, a stale partial is the last call's."""
    pool = [(randn(M, N), randn(N, dtype=torch.float32)) for _ in range(4)]
    refs = [norm_ref(case, x, w) for x, w in pool]
    bad = 0
    for i in range(calls):
        x, w = pool[i % 4] if fresh_inputs else pool[0]
        y = fn(x, w).double()
        r = refs[i % 4] if fresh_inputs else refs[0]
        rms = r.pow(2).mean(-1, keepdim=True).sqrt()
        bad += int(((y - r).abs() > 1e-5 + 1.6e-2 * torch.maximum(r.abs(), rms)).any(-1).sum())
    return bad


# measured on the H200 (docs/results/2026-12-01-h200-session3): at 17 x 16385 (4 splits) about 0.7%
# of calls on fresh inputs have a wrong row; 3,000 calls see none with odds under 1e-9
@needs_cuda
def test_missing_fence_leader_reads_stale_partials_on_a_gpu(fresh):
    case = fresh(missing_fence)
    assert _stale_rows(case.rmsnorm, case, 17, 16385, 3000) > 0


@needs_cuda
def test_missing_fence_twin_never_does(fresh):
    case = fresh(missing_fence)
    assert _stale_rows(case.rmsnorm_fixed, case, 17, 16385, 3000) == 0


# ---------------------------------------------------------------- atomic_order
def gemm(case, fixed, M, N, K, SPLIT_K):
    a, b = randn(M, K, dtype=torch.float16), randn(K, N, dtype=torch.float16)
    fn = case.splitk_gemm_fixed if fixed else case.splitk_gemm
    return a, b, fn


@pytest.mark.parametrize("M, N, K, SPLIT_K", [(1, 1, 1, 4), (33, 65, 513, 4), (5, 70, 2881, 8)])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_atomic_order_right_within_the_tolerance(fresh, fixed, M, N, K, SPLIT_K):
    case = fresh(atomic_order)
    a, b, fn = gemm(case, fixed, M, N, K, SPLIT_K)
    out = fn(a, b, SPLIT_K=SPLIT_K)
    assert out.dtype == torch.float32 and agrees(out, case.splitk_gemm_ref(a.double(), b.double()))


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_atomic_order_bits_change_only_where_splits_race(fresh, fixed):
    """The interpreter adds in program order: the same bits every call, for both. On a GPU the
    buggy kernel's bits change from call to call; the twin's never do."""
    case = fresh(atomic_order)
    M, N, K = (64, 256, 4096) if DEVICE == "cuda" else (5, 40, 1100)    # the interpreter: 16 programs
    a, b, fn = gemm(case, fixed, M, N, K, 8)
    first = fn(a, b, SPLIT_K=8)
    differ = sum(int((fn(a, b, SPLIT_K=8).view(torch.int32) != first.view(torch.int32)).any())
                 for _ in range(20 if DEVICE == "cuda" else 2))
    assert differ == 0 if (fixed or DEVICE == "cpu") else differ > 0
