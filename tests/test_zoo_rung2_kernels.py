"""The rung-2 (values) zoo kernels on their own, without kladder's climb: each buggy kernel is
wrong exactly where its mechanism bites (a prompt shorter than a chunk, biases that differ
tile to tile, near-tied router logits, peaked attention with V = 1) and right elsewhere; each
fixed twin is right at both. Without CUDA the kernels run in the Triton interpreter.
"""
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import (bias_tile_index, chunked_prefill_short, lowp_probs_underflow,  # noqa: E402
                         router_tie_pack)


# torch.empty returns NaN (as under kladder) and inputs are seeded: tests/conftest.py
pytestmark = pytest.mark.usefixtures("poisoned_empty")


def randn(*shape, dtype=torch.float16, scale=1.0):
    return (torch.randn(*shape, device=DEVICE) * scale).to(dtype)


def bad_elements(out, ref, rtol, atol=1e-5):
    """NaN-aware, scaled like kladder's comparison: |out - ref| <= atol + rtol *
    max(|ref|, rms of the reference row), and out finite wherever ref is."""
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = atol + rtol * torch.maximum(r.abs(), rms)
    return ~torch.isfinite(o) | ((o - r).abs() > allowed)


# ---------------------------------------------------------------- chunked_prefill_short
@pytest.mark.parametrize("S", [1, 5, 63, 64, 65, 130])
def test_chunked_prefill_short(S):
    """NaN in every element for a prompt shorter than one chunk (64), right from one chunk on."""
    q, k, v = randn(S, 2, 32), randn(S, 2, 32), randn(S, 2, 32)
    ref = chunked_prefill_short.attention_ref(q.double(), k.double(), v.double())
    buggy = chunked_prefill_short.chunked_prefill(q, k, v)
    fixed = chunked_prefill_short.chunked_prefill_fixed(q, k, v)
    assert not bad_elements(fixed, ref, 1e-3).any(), "the twin disagrees with the reference"
    if S < chunked_prefill_short.CHUNK:
        assert buggy.isnan().all(), "every row of a prompt shorter than a chunk should be NaN"
    else:
        assert not bad_elements(buggy, ref, 1e-3).any(), "the buggy kernel should be right from one chunk on"


def test_chunked_prefill_empty_part_is_nan_only_in_the_buggy_kernel():
    """The mechanism itself: a part with no keys is 0/0 in the buggy kernel, 0 in the twin."""
    q, k, v = randn(3, 1, 16), randn(0, 1, 16), randn(0, 1, 16)
    o, lse = chunked_prefill_short._attn_part(chunked_prefill_short._attn_part_kernel, q, k, v, causal=False)
    assert o.isnan().all() and (lse == float("-inf")).all()
    fixed = chunked_prefill_short._attn_part_kernel_fixed
    o, lse = chunked_prefill_short._attn_part(fixed, q, k, v, causal=False)
    assert (o == 0).all() and (lse == float("-inf")).all()


# ---------------------------------------------------------------- bias_tile_index
def _distinct(E, N):
    j = torch.arange(N, dtype=torch.float64)
    return ((1 + 3 * j / max(N - 1, 1)) * torch.where(j % 2 == 0, 1.0, -1.0)).float().expand(E, N).contiguous().to(DEVICE)


@pytest.mark.parametrize("N, bias, bites", [
    (32, "distinct", False),   # one N-tile: the wrong pointer is the right one
    (65, "zeros", False),      # the unit test's zero biases: every tile reads the same zeros
    (65, "constant", False),   # the same bias in every column
    (65, "distinct", True),    # distinct biases over three N-tiles
    (100, "normal", True),     # random biases differ tile to tile too
])
def test_bias_tile_index(N, bias, bites):
    E, M, K = 3, 17, 40
    x, w = randn(E, M, K), randn(E, K, N)
    b = {"zeros": torch.zeros(E, N, device=DEVICE), "constant": torch.full((E, N), 0.75, device=DEVICE),
         "distinct": _distinct(E, N), "normal": torch.randn(E, N, device=DEVICE)}[bias]
    ref = bias_tile_index.grouped_gemm_bias_ref(x.double(), w.double(), b.double())
    fixed = bias_tile_index.grouped_gemm_bias_fixed(x, w, b)
    buggy = bias_tile_index.grouped_gemm_bias(x, w, b)
    assert not bad_elements(fixed, ref, 1e-3).any(), "the twin disagrees with the reference"
    wrong_cols = bad_elements(buggy, ref, 1e-3).any(0).any(0).nonzero().flatten().tolist()
    if bites:
        # exactly the columns past the first N-tile whose bias differs from the first tile's
        b0 = b[0]
        differs = [n for n in range(bias_tile_index.BLOCK_N, N) if b0[n] != b0[n % bias_tile_index.BLOCK_N]]
        assert wrong_cols == differs and differs
    else:
        assert wrong_cols == []


# ---------------------------------------------------------------- router_tie_pack
def _route(kernel, logits):
    ids, w = kernel(logits)
    return ids.cpu(), w.cpu()


def _ties(T, E, gen_seed=1):
    """Every row b, b+1ulp, b+2ulp, b+3ulp (kladder's 'ties' value kind)."""
    g = torch.Generator().manual_seed(gen_seed)
    x = torch.randn(T, 1, generator=g).expand(T, E).contiguous()
    x.view(torch.int32).add_(torch.randint(0, 4, (T, E), generator=g, dtype=torch.int32))
    return x


@pytest.mark.parametrize("E", [8, 60, 256])
def test_router_random_logits_agree(E):
    """Random normal logits are almost never within 2^ID_BITS ulps: both kernels agree."""
    x = torch.randn(32, E)
    ref_ids, ref_w = router_tie_pack.route_topk_ref(x.double(), 8)
    for kernel in (router_tie_pack.route_topk, router_tie_pack.route_topk_fixed):
        ids, w = _route(kernel, x.to(DEVICE))
        assert torch.equal(ids, ref_ids)
        assert not bad_elements(w, ref_w, 1.3e-6).any()


@pytest.mark.parametrize("E", [17, 64, 256])
def test_router_near_ties(E):
    """Logits a few ulps apart: the buggy kernel ranks them by id, the twin by score."""
    x = _ties(32, E)
    ref_ids, ref_w = router_tie_pack.route_topk_ref(x.double(), 8)
    ids, w = _route(router_tie_pack.route_topk_fixed, x.to(DEVICE))
    assert torch.equal(ids, ref_ids)
    assert not bad_elements(w, ref_w, 1.3e-6).any()
    ids, _ = _route(router_tie_pack.route_topk, x.to(DEVICE))
    assert (ids != ref_ids).any(1).all(), "every tied row should route wrongly"


def test_router_one_ulp_apart():
    """Expert 5 is one ulp above expert 3: the reference and the twin pick 5 first, the buggy
    kernel picks 3 (lower id, same packed key)."""
    x = torch.full((1, 64), -1.0)
    x[0, 3] = 1.0
    x[0, 5] = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0))
    ref_ids, _ = router_tie_pack.route_topk_ref(x.double(), 8)
    assert ref_ids[0, :2].tolist() == [5, 3]
    assert _route(router_tie_pack.route_topk_fixed, x.to(DEVICE))[0][0, :2].tolist() == [5, 3]
    assert _route(router_tie_pack.route_topk, x.to(DEVICE))[0][0, :2].tolist() == [3, 5]


def test_router_exact_ties_rank_by_lower_id():
    """Exact ties (equal logits, -0 and +0) rank by lower id in the reference and both kernels:
    only near ties expose the bug."""
    x = torch.tensor([[0.0, -0.0, 0.0, 2.0, -0.0, 2.0, 1.0, 1.0, 0.5, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0, -3.0]])
    ref_ids, _ = router_tie_pack.route_topk_ref(x.double(), 8)
    assert ref_ids[0].tolist() == [3, 5, 6, 7, 8, 0, 1, 2]
    for kernel in (router_tie_pack.route_topk, router_tie_pack.route_topk_fixed):
        assert torch.equal(_route(kernel, x.to(DEVICE))[0], ref_ids)


def test_router_refuses_too_few_experts():
    with pytest.raises(ValueError, match="at least 8 experts"):
        router_tie_pack.route_topk_fixed(torch.randn(2, 7, device=DEVICE))


# ---------------------------------------------------------------- lowp_probs_underflow
def test_e4m3_values_match_torch():
    """The written-out e4m3 rounding equals torch's float8_e4m3fn over [0, 1]."""
    import triton
    import triton.language as tl

    @triton.jit
    def _round(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + o, lowp_probs_underflow._e4m3_values(tl.load(x_ptr + o, mask=o < N)), mask=o < N)

    x = torch.cat([torch.zeros(1), torch.logspace(-20, 0, 20000, base=2.0)]).to(DEVICE)
    y = torch.empty_like(x)
    _round[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    assert torch.equal(y.cpu(), x.cpu().to(torch.float8_e4m3fn).float())


def _decode_inputs(L, q_scale=1.0, D=16, B=1, H=2):
    q = randn(B, H, D, scale=q_scale)
    k = randn(B, H, L, D)
    return q, k


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_lowp_v_ones_peaked(dtype):
    """Peaked logits (normal x 3) over 4,096 keys with V = 1: the buggy kernel loses the mass
    of the keys that underflow e4m3 (output well below 1); the twin returns exactly 1."""
    q, k = _decode_inputs(4096, q_scale=3.0)
    q, k = q.to(dtype), k.to(dtype)
    v = torch.ones_like(k)
    buggy = lowp_probs_underflow.attention_decode(q, k, v).float()
    fixed = lowp_probs_underflow.attention_decode_fixed(q, k, v).float()
    assert (fixed == 1).all()
    assert (buggy < 0.99).all(), buggy


def test_lowp_v_ones_sink():
    """A trained head's shape: one key 9 above a background of 4,095 keys (every background
    probability, e^-9 = 1.2e-4, underflows e4m3): the buggy kernel returns about
    1 / (1 + 4095 e^-9) = 0.66, FlyDSL #1020's 0.637."""
    L, D = 4096, 16
    q = torch.zeros(1, 1, D, device=DEVICE)
    q[..., 0] = 1.0
    k = torch.zeros(1, 1, L, D, device=DEVICE)
    k[..., 0] = torch.randn(L, device=DEVICE) * 0.1
    k[0, 0, 7, 0] = 9.0 * D ** 0.5                # the sink: its score is 9 above the rest
    q, k = q.half(), k.half()
    v = torch.ones_like(k)
    buggy = lowp_probs_underflow.attention_decode(q, k, v).float()
    fixed = lowp_probs_underflow.attention_decode_fixed(q, k, v).float()
    assert (fixed == 1).all()
    assert ((buggy > 0.6) & (buggy < 0.7)).all(), buggy


@pytest.mark.parametrize("L", [1, 64, 1024])
def test_lowp_random_logits(L):
    """Random logits: both kernels are within the fp8-P tolerance of the reference, and the
    buggy kernel's V = 1 is within 1% of 1 (the underflow mass is small)."""
    q, k = _decode_inputs(L, B=2, H=3)
    v = randn(*k.shape)
    ref = lowp_probs_underflow.attention_decode_ref(q.double(), k.double(), v.double())
    for kernel in (lowp_probs_underflow.attention_decode, lowp_probs_underflow.attention_decode_fixed):
        assert not bad_elements(kernel(q, k, v), ref, 0.25, 1e-3).any()
    ones = lowp_probs_underflow.attention_decode(q, k, torch.ones_like(k)).float()
    assert ((ones - 1).abs() < 0.01).all()
    assert (lowp_probs_underflow.attention_decode_fixed(q, k, torch.ones_like(k)) == 1).all()
