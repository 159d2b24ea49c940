"""The rung-7 zoo kernels (the toolchain) on their own, without kladder's climb: each buggy
launcher is right on every value a test compares, and wrong in what it runs (a fallback, the
other kernel, a flag that never reaches the code, the generic config); each twin runs what its
spec expects. What ran is read with kladder's launch recorder (run/modes/tracing.py), the one
thing here that is kladder's."""
import importlib
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.run.modes.tracing import Launches  # noqa: E402
from kladder.zoo import flag_no_effect, float_config_cells, silent_fallback, wrong_path_dispatch  # noqa: E402

pytestmark = pytest.mark.usefixtures("poisoned_empty")
RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3}


def agrees(out, ref):
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + RTOL[out.dtype] * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


def launched(fn, *args, **kw):
    with Launches() as seen:
        out = fn(*args, **kw)
    return out, seen.seen


# ---------------------------------------------------------------- silent_fallback
def test_silent_fallback_the_old_import_path_is_gone_and_the_new_one_works():
    with pytest.raises(ImportError):
        from kladder.zoo._fastlib.expr import buffer_ops  # noqa: F401
    assert silent_fallback.buffer_ops is None                          # caught, at import
    assert silent_fallback.buffer_ops_v03 is importlib.import_module("kladder.zoo._fastlib.buffer_ops")


@pytest.mark.parametrize("M, N", [(3, 17), (5, 2880)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_silent_fallback_is_right_and_runs_no_kernel_the_twin_runs_the_fused_one(M, N, dtype):
    x, w = torch.randn(M, N, dtype=dtype, device=DEVICE), torch.randn(N, device=DEVICE)
    ref = silent_fallback.rmsnorm_ref(x.double(), w.double(), 1e-6)
    out, seen = launched(silent_fallback.fused_rmsnorm, x, w)
    assert agrees(out, ref) and seen == []
    out, seen = launched(silent_fallback.fused_rmsnorm_fixed, x, w)
    assert agrees(out, ref) and [s.name for s in seen] == ["_fused_rmsnorm_kernel_fixed"]


# ---------------------------------------------------------------- wrong_path_dispatch
def qkv(B, H, S, T, cache_view=False, dtype=torch.float16):
    q = torch.randn(B, H, S, 64, dtype=dtype, device=DEVICE)
    if cache_view:          # k, v as views of a preallocated cache whose slots are wider
        k = torch.randn(B, H, T, 80, dtype=dtype, device=DEVICE)[..., :64]
        v = torch.randn(B, H, T, 80, dtype=dtype, device=DEVICE)[..., :64]
    else:
        k, v = (torch.randn(B, H, T, 64, dtype=dtype, device=DEVICE) for _ in range(2))
    return q, k, v


def attn(kernel, q, k, v):
    out, seen = launched(kernel, q, k, v)
    return out, wrong_path_dispatch.attention_ref(q.double(), k.double(), v.double()), [s.name for s in seen]


@pytest.mark.parametrize("T", [1, 100, 129])
def test_wrong_path_dispatch_a_contiguous_decode_call_runs_the_prefill_kernel_and_is_right(T):
    out, ref, names = attn(wrong_path_dispatch.attention, *qkv(2, 2, 1, T))
    assert agrees(out, ref) and names == ["_attn_prefill_kernel"]


@pytest.mark.parametrize("T, right", [(64, True), (128, True), (65, False), (129, False), (1, False)])
def test_wrong_path_dispatch_the_decode_kernel_is_wrong_when_the_keys_do_not_fill_the_last_tile(T, right):
    out, ref, names = attn(wrong_path_dispatch.attention, *qkv(2, 2, 1, T, cache_view=True))
    assert names == ["_attn_decode_kernel"] and agrees(out, ref) == right
    if not right:
        assert (out.double().abs().amax(-1) < ref.abs().amax(-1)).all()    # the tail's exp(0 - max) inflates the sum


@pytest.mark.parametrize("S, T, view", [(1, 129, False), (1, 129, True), (1, 1, False), (33, 129, False), (17, 65, True)])
def test_wrong_path_dispatch_twin_runs_decode_for_one_query_and_is_right(S, T, view):
    out, ref, names = attn(wrong_path_dispatch.attention_fixed, *qkv(2, 2, S, T, cache_view=view))
    assert agrees(out, ref)
    assert names == (["_attn_decode_kernel"] if S == 1 else ["_attn_prefill_kernel"])


# ---------------------------------------------------------------- flag_no_effect
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_flag_no_effect_the_flag_never_reaches_the_kernel_and_the_twin_passes_it_on(dtype):
    x = torch.randn(5, 300, dtype=dtype, device=DEVICE)
    ref = torch.softmax(x.double(), -1)
    for kernel, reaches in ((flag_no_effect.softmax, False), (flag_no_effect.softmax_fixed, True)):
        runs = {}
        for value in (False, True):
            out, (launch,) = launched(kernel, x, EVICT_FIRST=value)
            assert agrees(out, ref)                                     # a cache hint changes no value
            runs[value] = launch
        assert runs[True].params["EVICT_FIRST"] is reaches
        assert (runs[True].code != runs[False].code) == reaches


# ---------------------------------------------------------------- float_config_cells
def test_float_config_cells_the_merged_table_holds_its_keys_as_floats():
    cells = {row["M"] for row in float_config_cells._TABLE}
    assert cells == {"1.0", "16.0", ""}


@pytest.mark.parametrize("M, N", list(float_config_cells.SWEPT))
def test_float_config_cells_every_tuned_shape_gets_the_generic_row_the_twin_the_tuned_one(M, N):
    gate, up = (torch.randn(M, N, dtype=torch.float16, device=DEVICE) for _ in range(2))
    ref = float_config_cells.silu_mul_ref(gate.double(), up.double())
    generic = {"BLOCK_M": 4, "BLOCK_N": 64, "num_warps": 4}
    out, (launch,) = launched(float_config_cells.silu_mul, gate, up)
    assert agrees(out, ref) and launch.params == generic
    out, (launch,) = launched(float_config_cells.silu_mul_fixed, gate, up)
    assert agrees(out, ref) and launch.params == float_config_cells.SWEPT[(M, N)]


def test_float_config_cells_untuned_shapes_get_the_generic_config_either_way():
    gate, up = (torch.randn(3, 100, dtype=torch.bfloat16, device=DEVICE) for _ in range(2))
    for kernel in (float_config_cells.silu_mul, float_config_cells.silu_mul_fixed):
        out, (launch,) = launched(kernel, gate, up)
        assert agrees(out, float_config_cells.silu_mul_ref(gate.double(), up.double()))
        assert launch.params == float_config_cells.GENERIC
