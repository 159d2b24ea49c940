"""The rung-3 zoo kernels (contracts) on their own, without kladder's machinery: each buggy
kernel is right under the contract its unit test assumed (contiguous rows, zero padding,
the producer and the consumer each on its own, a reference that shares the kernel) and
wrong once the contract is moved; each fixed twin is right in both.

Without CUDA the kernels run in the Triton interpreter.
"""
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    # before triton's first import: @triton.jit then builds interpreted kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import (assumes_contiguous, padding_scale_read,  # noqa: E402
                         scale_layout_mismatch, shared_kernel_reference)

RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3}  # kladder's defaults (torch.testing's)


@pytest.fixture(autouse=True)
def seeded():
    torch.manual_seed(0)


def agrees(out, ref, rtol=None):
    """NaN-aware and scaled like kladder's comparison: |out - ref| <= atol + rtol *
    max(|ref|, rms of the reference row), and out finite wherever ref is."""
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + (rtol or RTOL[out.dtype]) * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


def randn(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


# ------------------------------------------------------------ assumes_contiguous
def views(M, N, dtype):
    """x in each rung-3 layout, built the way a model makes such views."""
    base = randn(M, N, dtype=dtype)
    shifted = randn(M * N + 1, dtype=dtype)[1:].view(M, N)
    return {
        "contiguous": base,
        "sliced": randn(M, N + 16, dtype=dtype)[:, :N],
        "every_other": randn(M, 2 * N, dtype=dtype)[:, ::2],
        "transposed": randn(N, M, dtype=dtype).t(),
        # row 0 of a full buffer, so the buggy kernel's reads stay inside an allocation
        "broadcast": randn(M, N, dtype=dtype)[:1].expand(M, N),
        "offset": randn(M * N + 64, dtype=dtype)[64:].view(M, N),
        "shifted": shifted,
    }


WRONG_LAYOUTS = {"sliced", "every_other", "transposed", "broadcast"}


@pytest.mark.parametrize("layout", ["contiguous", "sliced", "every_other", "transposed", "broadcast", "offset", "shifted"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_assumes_contiguous_layouts(layout, dtype):
    """Right on contiguous rows (and on offsets, which the data pointer carries); wrong on
    every view whose row stride is not N or whose column stride is not 1. The twin is right
    on all of them."""
    x = views(17, 33, dtype)[layout]
    ref = assumes_contiguous.softmax_ref(x.double())
    assert agrees(assumes_contiguous.softmax_fixed(x), ref)
    assert agrees(assumes_contiguous.softmax(x), ref) == (layout not in WRONG_LAYOUTS)


def test_assumes_contiguous_one_row_is_right_sliced():
    """M = 1: row 0 starts at the view's start, so a sliced view is still right."""
    x = randn(1, 64)[:, :40]
    assert agrees(assumes_contiguous.softmax(x), assumes_contiguous.softmax_ref(x.double()))


# ------------------------------------------------------------ padding_scale_read
def packed_query(M, pad=0x00):
    q = torch.randint(-127, 128, (M, padding_scale_read.HEAD_DIM), dtype=torch.int8, device=DEVICE)
    s = torch.randint(117, 138, (M, padding_scale_read.SCALE_SLOT), dtype=torch.uint8, device=DEVICE)
    s[:, padding_scale_read.N_BLOCKS:] = pad
    return q, s


def test_padding_zero_both_right():
    """What the unit test builds: zero padding. Both kernels agree with the reference."""
    q, s = packed_query(5)
    kv = randn(37, padding_scale_read.HEAD_DIM)
    ref = padding_scale_read.decode_scores_ref(q, s, kv)
    assert agrees(padding_scale_read.decode_scores(q, s, kv), ref)
    assert agrees(padding_scale_read.decode_scores_fixed(q, s, kv), ref)


def test_padding_0xff_is_nan_for_the_buggy_kernel():
    """0xFF padding (the e8m0 NaN) turns every score of the row into NaN; the twin's output
    is bit for bit that of zero padding."""
    q, s = packed_query(5)
    kv = randn(37, padding_scale_read.HEAD_DIM)
    clean = padding_scale_read.decode_scores_fixed(q, s, kv)
    poisoned = s.clone()
    poisoned[2, padding_scale_read.N_BLOCKS:] = 0xFF      # one row's padding
    out = padding_scale_read.decode_scores(q, poisoned, kv)
    assert out[2].isnan().all()
    assert not out[[0, 1, 3, 4]].isnan().any()
    assert torch.equal(padding_scale_read.decode_scores_fixed(q, poisoned, kv), clean)


@pytest.mark.parametrize("pad", [0x7F, 0x80, 0x01])
def test_padding_finite_scales_are_harmless(pad):
    """A finite padding scale multiplies masked zeros: the bug needs 0xFF (inf) to show."""
    q, s = packed_query(3)
    kv = randn(8, padding_scale_read.HEAD_DIM)
    clean = padding_scale_read.decode_scores(q, s, kv)
    s[:, padding_scale_read.N_BLOCKS:] = pad
    assert torch.equal(padding_scale_read.decode_scores(q, s, kv), clean)


def test_padding_twin_ignores_random_padding():
    q, s = packed_query(4)
    kv = randn(33, padding_scale_read.HEAD_DIM)
    clean = padding_scale_read.decode_scores_fixed(q, s, kv)
    s[:, padding_scale_read.N_BLOCKS:] = torch.randint(0, 256, (4, 2), dtype=torch.uint8, device=DEVICE)
    s[0, padding_scale_read.N_BLOCKS:] = 0xFF
    assert torch.equal(padding_scale_read.decode_scores_fixed(q, s, kv), clean)


# ------------------------------------------------------------ scale_layout_mismatch
slm = scale_layout_mismatch
CHAIN_RTOL = 5e-2     # the format's error, as the chain spec declares it


@pytest.mark.parametrize("M, KB", [(1, 1), (1, 7), (3, 5), (4, 4), (5, 3), (7, 9)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_producer_matches_its_reference(M, KB, dtype):
    """The quantiser's own test passes: bytes equal to a reference quantiser that writes the
    same interleaved layout (partial groups of rows included)."""
    x = randn(M, KB, slm.BLOCK, dtype=dtype)
    xq, xs = slm.quantize(x)
    rq, rs = slm.quantize_ref(x.double())
    assert torch.equal(xq, rq) and torch.equal(xs, rs)


def test_producer_extremes_match_its_reference():
    """Zeros, subnormals, the smallest normal, a block at the top of bf16's range, and
    exact halves (rounded to even) quantise the same in the kernel and the reference."""
    x = randn(2, 3, slm.BLOCK)
    x[0, 0, :6] = torch.tensor([1e-40, -1e-41, 0.0, -0.0, 2.0 ** -126, 5e-39])
    x[0, 1] = 0
    x[1, 0, 0] = 1e30
    x[1, 2, :8] = torch.tensor([64.0, 0.5, 1.5, 2.5, -2.5, -3.5, 126.5, 127.5])
    for got, want in zip(slm.quantize(x), slm.quantize_ref(x.double()), strict=False):
        assert torch.equal(got, want)


def test_consumer_alone_matches_its_reference():
    """The dequantiser's own test passes: on row-major scales it is exact."""
    xq = torch.randint(-127, 128, (6, 5, slm.BLOCK), dtype=torch.int8, device=DEVICE)
    xs = torch.randint(117, 138, (6, 5), dtype=torch.uint8, device=DEVICE)
    assert torch.equal(slm.dequantize(xq, xs).double(), slm.dequantize_ref(xq, xs))


@pytest.mark.parametrize("M, KB, bites", [(1, 9, False), (6, 1, False), (2, 2, True), (5, 9, True), (17, 17, True)])
def test_chain_is_wrong_where_the_layouts_differ(M, KB, bites):
    """Fed the real quantiser's scales, the row-major dequantiser is wrong whenever the two
    layouts differ (M >= 2 and K/32 >= 2); the twin is within the format's error."""
    x = randn(M, KB, slm.BLOCK)
    x = x * torch.exp2(torch.randint(-3, 4, (M, KB, 1), device=DEVICE)).to(x.dtype)   # blocks of different exponents
    xq, xs = slm.quantize(x)
    assert agrees(slm.dequantize_fixed(xq, xs), x.double(), CHAIN_RTOL)
    assert agrees(slm.dequantize(xq, xs), x.double(), CHAIN_RTOL) == (not bites)


def test_chain_error_is_within_the_declared_tolerance():
    """The declared rtol covers the worst case: one element at amax, the rest tiny."""
    x = randn(8, 16, slm.BLOCK) * 1e-3
    x[..., 0] = 1.0
    xq, xs = slm.quantize(x)
    assert agrees(slm.dequantize_fixed(xq, xs), x.double(), CHAIN_RTOL)


def test_interleaved_consumer_refuses_a_strided_buffer():
    xq, xs = slm.quantize(randn(4, 6, slm.BLOCK))
    wide = torch.zeros(4, 12, dtype=torch.uint8, device=DEVICE)[:, :6]
    wide.copy_(xs)
    with pytest.raises(ValueError, match="packed"):
        slm.dequantize_fixed(xq, wide)


# ------------------------------------------------------------ shared_kernel_reference
skr = shared_kernel_reference


@pytest.mark.parametrize("N, bites", [(2048, False), (4096, False), (7, True), (2880, True)])
def test_shared_reference_hides_the_bug(N, bites):
    """The library-path "reference" agrees with the buggy kernel at every N; a plain torch
    reference shows the bug wherever N is well below a power of two. The twin agrees with
    the plain reference everywhere."""
    x, w = randn(3, N), torch.randn(N, device=DEVICE)
    out = skr.rms_norm(x, w)
    assert agrees(out, skr.rms_norm_ref_via_library(x.double(), w.double(), 1e-6))
    assert agrees(out, skr.rms_norm_ref(x.double(), w.double(), 1e-6)) == (not bites)
    assert agrees(skr.rms_norm_fixed(x, w), skr.rms_norm_ref(x.double(), w.double(), 1e-6))


def test_shared_reference_runs_the_kernel_under_test(monkeypatch):
    """The two entry points are one kernel: the reference launches _rmsnorm_kernel."""
    launched = []
    real = skr._launch

    def spy(kernel, *args, **kw):
        launched.append(kernel)
        return real(kernel, *args, **kw)

    monkeypatch.setattr(skr, "_launch", spy)
    x, w = randn(2, 16).double(), torch.randn(16, device=DEVICE).double()
    skr.rms_norm_ref_via_library(x, w, 1e-6)
    skr.rms_norm(x.bfloat16(), w.float())
    assert launched == [skr._rmsnorm_kernel, skr._rmsnorm_kernel]
