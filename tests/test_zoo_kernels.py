"""The zoo's kernels on their own, without kladder's machinery: each buggy kernel agrees
with its reference where its mechanism does not bite and disagrees where it does, and each
fixed twin agrees at both. This shows every mechanism is real: no case signals its own
failure, the bug shows only where its mechanism bites.

Without CUDA the kernels run in the Triton interpreter; the 4 GiB cases run only on a GPU.
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    # before triton's first import: @triton.jit then builds interpreted kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import (config_writes_zeros, gemm_k_tail, last_tile_wrap,  # noqa: E402
                         nan_blind, rmsnorm_n_tail, rows_int32_offset, small_overrun,
                         untuned_fallback)

RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3}  # kladder's defaults (torch.testing's)
needs_cuda = pytest.mark.skipif(DEVICE != "cuda", reason="needs a CUDA GPU with about 20 GiB free")


# torch.empty returns NaN (as under kladder) and inputs are seeded: tests/conftest.py
pytestmark = pytest.mark.usefixtures("poisoned_empty")


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def agrees(out, ref):
    """NaN-aware and scaled like kladder's comparison: |out - ref| <= atol + rtol *
    max(|ref|, rms of the reference row), and out finite wherever ref is."""
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + RTOL[out.dtype] * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


def check_pair(buggy_out, fixed_out, ref, bites):
    assert agrees(fixed_out, ref), "the fixed twin disagrees with the reference"
    if bites:
        assert not agrees(buggy_out, ref), "the bug's mechanism should bite here"
    else:
        assert agrees(buggy_out, ref), "the buggy kernel should be right here"


# ---------------------------------------------------------------- gemm_k_tail
@pytest.mark.parametrize("M, N, K, BLOCK_K, bites", [
    (65, 70, 128, 64, False),     # the tile divides K
    (3, 5, 2880, 64, False),      # gpt-oss K: a multiple of 64 ...
    (3, 5, 2880, 128, True),      # ... but not of 128: 64 columns dropped
    (65, 70, 65, 64, True),       # tile + 1
    (1, 1, 1, 32, True),          # K below one tile: no iteration at all
])
def test_gemm_k_tail(M, N, K, BLOCK_K, bites):
    a, b = randn(M, K), randn(K, N)
    ref = gemm_k_tail.gemm_ref(a.double(), b.double())
    check_pair(gemm_k_tail.gemm(a, b, BLOCK_K=BLOCK_K), gemm_k_tail.gemm_fixed(a, b, BLOCK_K=BLOCK_K), ref, bites)


# ---------------------------------------------------------------- rmsnorm_n_tail
@pytest.mark.parametrize("N, bites", [(4096, False), (2880, False), (8, False),
                                      (7, True), (4097, True), (2881, True)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rmsnorm_n_tail(N, bites, dtype):
    x, w = randn(3, N, dtype=dtype), randn(N, dtype=torch.float32)
    ref = rmsnorm_n_tail.rmsnorm_ref(x.double(), w.double(), 1e-6)
    buggy = rmsnorm_n_tail.rmsnorm(x, w)
    check_pair(buggy, rmsnorm_n_tail.rmsnorm_fixed(x, w), ref, bites)
    if bites:   # exactly the last N % 8 columns were never written
        assert buggy[:, N // 8 * 8:].isnan().all() and not buggy[:, :N // 8 * 8].isnan().any()


# ---------------------------------------------------------------- config_writes_zeros
@pytest.mark.parametrize("BLOCK_K, bites", [(16, True), (32, False), (64, False), (128, False)])
def test_config_writes_zeros(BLOCK_K, bites):
    a, b = randn(65, 100), randn(100, 70)
    ref = config_writes_zeros.gemm_ref(a.double(), b.double())
    buggy = config_writes_zeros.gemm(a, b, BLOCK_K=BLOCK_K)
    check_pair(buggy, config_writes_zeros.gemm_fixed(a, b, BLOCK_K=BLOCK_K), ref, bites)
    if bites:   # no MMA ran: every element is a stored zero, none left unwritten
        assert (buggy == 0).all()


# ---------------------------------------------------------------- untuned_fallback
@pytest.mark.parametrize("M, N, tuned, bites", [
    (1, 2880, True, False),
    (8, 4096, True, False),
    (3, 1024, False, False),   # untuned, but a power of two: the heuristic's block covers it
    (8, 2880, False, True),    # untuned production shape: block 2048 < 2880
    (32, 7168, False, True),   # untuned production shape: block 4096 < 7168
])
def test_untuned_fallback(M, N, tuned, bites):
    x = randn(M, N)
    assert ((M, N) in untuned_fallback.TUNED) == tuned
    ref = untuned_fallback.softmax_ref(x.double())
    check_pair(untuned_fallback.softmax(x), untuned_fallback.softmax_fixed(x), ref, bites)


# ---------------------------------------------------------------- nan_blind
@pytest.mark.filterwarnings("ignore:invalid value encountered")   # the interpreter's 0 / 0
@pytest.mark.parametrize("M, N, bites", [(64, 64, False), (1024, 7, True), (64, 1, True)])
def test_nan_blind(M, N, bites):
    x = randn(M, N, dtype=torch.bfloat16)   # a row is all <= 0 with p = 2^-N
    ref = nan_blind.relu_norm_ref(x.double())
    buggy = nan_blind.relu_norm(x)
    check_pair(buggy, nan_blind.relu_norm_fixed(x), ref, bites)
    # the rows that went NaN are exactly those with no positive entry
    assert torch.equal(buggy.isnan().all(-1), (x <= 0).all(-1))
    # and a tolerance check that is not NaN-aware counts zero bad rows
    bad_rows = ((buggy.double() - ref).abs() > 1e-2).any(-1)
    assert int(bad_rows.sum()) == 0


# ---------------------------------------------------------------- small_overrun
SENTINEL = -12345.0


def run_guarded(kernel, M, N, dtype=torch.bfloat16):
    """Call with `out` at the start of a larger buffer, the rest a sentinel (kladder's guard)."""
    gate, up = randn(M, N, dtype=dtype), randn(M, N, dtype=dtype)
    buf = torch.full((M * N + 64,), SENTINEL, dtype=dtype, device=DEVICE)
    out = buf[:M * N].view(M, N)
    kernel(gate, up, out)
    ref = small_overrun.silu_and_mul_ref(gate.double(), up.double())
    return out, ref, buf[M * N:]


@pytest.mark.parametrize("M, N, bites", [(5, 8, False), (2, 2880, False), (1, 7, True), (3, 2881, True)])
def test_small_overrun(M, N, bites):
    out, ref, guard = run_guarded(small_overrun.silu_and_mul, M, N)
    assert agrees(out, ref), "every element inside `out` is right, overrun or not"
    assert bool((guard != SENTINEL).any()) == bites
    if bites:   # up to the next whole 8-element vector, and no further
        assert int((guard != SENTINEL).sum()) == -(M * N) % 8
    out, ref, guard = run_guarded(small_overrun.silu_and_mul_fixed, M, N)
    assert agrees(out, ref) and bool((guard == SENTINEL).all())


# ---------------------------------------------------------------- rows_int32_offset
@pytest.mark.parametrize("M, V", [(3, 5000), (2, 32000), (4, 1)])
def test_rows_int32_offset_small(M, V):
    """Below 2^31 elements both kernels are right; the wrap needs a 4 GiB tensor (GPU)."""
    x = randn(M, V, dtype=torch.bfloat16)
    ref = rows_int32_offset.log_softmax_ref(x.double())
    check_pair(rows_int32_offset.log_softmax(x), rows_int32_offset.log_softmax_fixed(x), ref, bites=False)


def run_isolated(code):
    """Run `code` in a fresh process: a device fault poisons the process that saw it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=600)


BIG_LOG_SOFTMAX = """
    import torch
    from kladder.zoo import rows_int32_offset as case
    M, V = {M}, 151936            # bf16 logits; 14135 rows hold more than 2^31 elements
    torch.manual_seed(0)
    x = torch.randn(M, V, dtype=torch.bfloat16, device="cuda")
    rows = torch.tensor([0, 1, M // 2, M - 2, M - 1], device="cuda")
    ref = case.log_softmax_ref(x[rows].double())
    y = case.{kernel}(x)[rows].double()
    torch.cuda.synchronize()
    ok = ((y - ref).abs() <= 1e-5 + 1.6e-2 * torch.maximum(ref.abs(), ref.pow(2).mean(-1, keepdim=True).sqrt())).all(-1)
    print("rows right:", ok.tolist())
"""


@needs_cuda
def test_rows_int32_offset_big():
    """14135 x 151936 bf16 (just over 2^32 bytes): the last row's tail is past element 2^31."""
    fixed = run_isolated(BIG_LOG_SOFTMAX.format(M=14135, kernel="log_softmax_fixed"))
    assert fixed.returncode == 0 and "rows right: [True, True, True, True, True]" in fixed.stdout, fixed.stderr
    below = run_isolated(BIG_LOG_SOFTMAX.format(M=14134, kernel="log_softmax"))
    assert below.returncode == 0 and "rows right: [True, True, True, True, True]" in below.stdout, below.stderr
    buggy = run_isolated(BIG_LOG_SOFTMAX.format(M=14135, kernel="log_softmax"))
    # the wrapped offsets read about 4 GiB before x: a device fault, or a wrong last row
    assert buggy.returncode != 0 or "rows right: [True, True, True, True, False]" in buggy.stdout, buggy.stdout


# ---------------------------------------------------------------- last_tile_wrap
@pytest.mark.parametrize("M, N, K", [(300, 70, 40), (1, 1, 1), (256, 64, 32)])
def test_last_tile_wrap_small(M, N, K):
    """Far below 2^32 bytes the range check drops the last tile's extra rows: both right."""
    a, b = randn(M, K), randn(K, N)
    ref = last_tile_wrap.gemm_ref(a.double(), b.double())
    check_pair(last_tile_wrap.gemm(a, b), last_tile_wrap.gemm_fixed(a, b), ref, bites=False)


@pytest.mark.skipif(DEVICE != "cpu", reason="lanes racing to one address: only the interpreter's order is fixed")
def test_last_tile_wrap_offsets_wrap_mod_2_32():
    """The mechanism in miniature: C's rows declared 2^30 elements (2 GiB of fp16) apart, so
    rows 2, 4, ... of the first tile, all past M = 1, sit at multiples of 2^32 bytes and
    wrap onto row 0, which the buffer's range check lets through."""
    a, b = randn(1, 32), randn(32, 64)
    ref = last_tile_wrap.gemm_ref(a.double(), b.double())
    for kernel, bites in ((last_tile_wrap._gemm_kernel, True), (last_tile_wrap._gemm_kernel_fixed, False)):
        c = torch.empty(1, 64, dtype=torch.float16)
        kernel[(1, 1)](a, b, c, 1, 64, 32, c.numel() * 2, *a.stride(), *b.stride(), 1 << 30, 1,
                       BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, ITEM=2)
        assert agrees(c, ref) != bites


@needs_cuda
def test_last_tile_wrap_big():
    """M = 14134, N = 151936 fp16: C is 40 KB under 2^32 bytes; the last 256-row tile's 202
    rows past M wrap and overwrite rows 0..201."""
    M, N, K = 14134, 151936, 32
    a, b = randn(M, K), randn(K, N)
    rows = torch.tensor([0, 100, 201, 202, M // 2, M - 1], device=DEVICE)
    ref = last_tile_wrap.gemm_ref(a[rows].double(), b.double())
    fixed = last_tile_wrap.gemm_fixed(a, b)[rows]
    assert all(agrees(fixed[i], ref[i]) for i in range(len(rows)))
    buggy = last_tile_wrap.gemm(a, b)[rows]
    assert [agrees(buggy[i], ref[i]) for i in range(len(rows))] == [False, False, False, True, True, True]
