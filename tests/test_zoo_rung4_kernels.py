"""The rung-4 zoo kernels (execution modes) on their own, without kladder's machinery: the
buggy launcher is right on its first call in a fresh process, at any shape and config, and
wrong in the sequence production runs (config A then B at one shape; a narrow row then a
wide one); each fixed twin is right in every order.

Both cases keep module-level state (a launch-closure cache, a launch plan). Every test
starts from a fresh module: the `fresh` fixture reloads the case module, which rebuilds that
state exactly as a new process's import would. The reset lives here, in the tests only; the
case modules offer none, since kladder must not be able to clear the state it is looking for.
"""
import importlib
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    # before triton's first import: @triton.jit then builds interpreted kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import jit_key_closure, stale_state  # noqa: E402

RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3}  # kladder's defaults (torch.testing's)


# torch.empty returns NaN (as under kladder) and inputs are seeded: tests/conftest.py
pytestmark = pytest.mark.usefixtures("poisoned_empty")


@pytest.fixture
def fresh():
    """Reload a case module: its caches and plans start empty, as in a new process."""
    def reload(mod):
        return importlib.reload(mod)
    return reload


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def agrees(out, ref):
    """NaN-aware and scaled like kladder's comparison: |out - ref| <= atol + rtol *
    max(|ref|, rms of the reference row), and out finite wherever ref is."""
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + RTOL[out.dtype] * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


# ---------------------------------------------------------------- jit_key_closure
def gelu_call(kernel, M, N, BLOCK_N, dtype=torch.bfloat16):
    x, b = randn(M, N, dtype=dtype), randn(N, dtype=dtype)
    return kernel(x, b, BLOCK_N=BLOCK_N), jit_key_closure.bias_gelu_ref(x.double(), b.double())


@pytest.mark.parametrize("M, N", [(5, 2880), (17, 129), (1, 1), (3, 4096)])
@pytest.mark.parametrize("BLOCK_N", [64, 128])
def test_jit_key_closure_first_call_right(fresh, M, N, BLOCK_N):
    """Any config at any shape, as the first call in a fresh process: right."""
    case = fresh(jit_key_closure)
    out, ref = gelu_call(case.bias_gelu, M, N, BLOCK_N)
    assert agrees(out, ref)


@pytest.mark.parametrize("M, N", [(5, 2880), (17, 129), (3, 4096)])
def test_jit_key_closure_a_b_a(fresh, M, N):
    """64, then 128 at the same shape: the 64-column closure runs over a 128-column grid and
    leaves N - 64 * cdiv(N, 128) columns unwritten; 64 again is right."""
    case = fresh(jit_key_closure)
    out, ref = gelu_call(case.bias_gelu, M, N, 64)
    assert agrees(out, ref)
    out, ref = gelu_call(case.bias_gelu, M, N, 128)
    assert not agrees(out, ref)
    written = 64 * -(-N // 128)
    assert out[:, written:].isnan().all() and not out[:, :written].isnan().any()
    assert agrees(out[:, :written], ref[:, :written])   # what was written is right
    out, ref = gelu_call(case.bias_gelu, M, N, 64)
    assert agrees(out, ref)


def test_jit_key_closure_needs_same_shape_and_dtype(fresh):
    """The key holds the shape and dtype: another shape, or another dtype, builds its own
    closure; and 128 first, then 64, is right (a 128-column closure over a 64-wide grid
    writes every column)."""
    case = fresh(jit_key_closure)
    assert agrees(*gelu_call(case.bias_gelu, 5, 2880, 64))
    assert agrees(*gelu_call(case.bias_gelu, 5, 2881, 128))
    assert agrees(*gelu_call(case.bias_gelu, 5, 2880, 128, dtype=torch.float16))
    assert agrees(*gelu_call(case.bias_gelu, 5, 4096, 128))
    assert agrees(*gelu_call(case.bias_gelu, 5, 4096, 64))
    assert not agrees(*gelu_call(case.bias_gelu, 5, 2880, 128))


@pytest.mark.parametrize("order", [(64, 128, 64), (128, 64, 128)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_jit_key_closure_fixed(fresh, order, dtype):
    case = fresh(jit_key_closure)
    for BLOCK_N in order:
        assert agrees(*gelu_call(case.bias_gelu_fixed, 5, 2880, BLOCK_N, dtype=dtype))
        assert agrees(*gelu_call(case.bias_gelu_fixed, 1, 129, BLOCK_N, dtype=dtype))


# ---------------------------------------------------------------- stale_state
def norm_call(kernel, M, N, dtype=torch.bfloat16):
    x, w = randn(M, N, dtype=dtype), randn(N, dtype=torch.float32)
    return kernel(x, w), stale_state.rmsnorm_ref(x.double(), w.double(), 1e-6)


@pytest.mark.parametrize("N", [1, 7, 128, 1025, 2880, 4096, 4097])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_stale_state_first_call_right(fresh, N, dtype):
    """Any shape, as the first call in a fresh process: right."""
    case = fresh(stale_state)
    assert agrees(*norm_call(case.rmsnorm, 3, N, dtype))


@pytest.mark.parametrize("A, B, covered, rescaled", [
    (128, 2880, 128, True),      # q/k-norm first: one 128-column tile
    (2880, 4096, 3072, True),    # 3 tiles of 1024
    (4096, 4097, 4096, False),   # 4 tiles of 1024, one column short
    (7, 9, 8, False),            # one tile of 8
])
def test_stale_state_a_b_a(fresh, A, B, covered, rescaled):
    """N = A, then the wider B, then A again, in one process: B runs A's plan, covers only
    its first `covered` columns and never writes the rest; A again is right. Where many
    columns are missing (`rescaled`), the written ones are wrong too: their rstd comes from
    the covered columns only (one missing column of 4097 moves it by less than rounding)."""
    case = fresh(stale_state)
    assert agrees(*norm_call(case.rmsnorm, 3, A))
    out, ref = norm_call(case.rmsnorm, 3, B)
    assert not agrees(out, ref)
    assert out[:, covered:].isnan().all() and not out[:, :covered].isnan().any()
    if rescaled:
        assert not agrees(out[:, :covered], ref[:, :covered])
    assert agrees(*norm_call(case.rmsnorm, 3, A))


def test_stale_state_narrower_after_wider_is_right(fresh):
    """The order matters: a narrower row after a wider one is right (extra tiles masked)."""
    case = fresh(stale_state)
    for N in (4096, 2880, 128, 1, 4096):
        assert agrees(*norm_call(case.rmsnorm, 3, N))


@pytest.mark.parametrize("order", [(128, 2880, 128), (2880, 4096, 4097, 7, 9)])
def test_stale_state_fixed(fresh, order):
    case = fresh(stale_state)
    for N in order:
        for dtype in (torch.bfloat16, torch.float16):
            assert agrees(*norm_call(case.rmsnorm_fixed, 3, N, dtype))
