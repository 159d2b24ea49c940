"""checks/bias.py: a lean inside the tolerance, judged over rows (a sign test and the mean error
in ulps), both ways (offset and scale), against the honest peer's own lean; correct rounding
never warns."""
import json

import pytest
import torch

from kladder.checks import bias as bias_mod
from kladder.checks.bias import BIAS_ULPS, MIN_ROWS, bias
from kladder.core.outcome import Check, Finding

EPS = torch.finfo(torch.float32).eps


def _ref(rows=256, cols=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=g, dtype=torch.float64)


def _leaning(ref, ulps_per_row):
    """A float32 output whose every element of row i is off by ulps_per_row[i] units of float32's
    rounding at the reference's scale (max(|r|, its RMS)), exactly: the reference is moved, not
    the output, so no rounding of the output blurs the lean."""
    out = ref.to(torch.float32)
    o = out.double()
    mag = torch.maximum(o.abs(), o.pow(2).mean().sqrt())
    k = torch.as_tensor(ulps_per_row, dtype=torch.float64).reshape(-1, 1)
    return out, o - k * mag * EPS


def test_correct_rounding_does_not_lean():
    for seed in range(3):
        ref = _ref(seed=seed)
        assert bias("y", ref.to(torch.float32), ref) is None
        assert bias("y", ref.to(torch.bfloat16), ref) is None


def test_a_kernel_that_scales_every_row_up_leans_by_scale():
    ref = _ref()
    out = (ref * (1 + 4 * EPS)).to(torch.float32)
    f = bias("y", out, ref)
    assert f.check == Check.BIAS and f.output == "y" and f.facts.lean == "scale"
    assert f.facts.up > f.facts.down and f.facts.p < bias_mod.BIAS_P and f.facts.mean_ulps > 1
    assert f.facts.rel > 0 and not f.facts.peer and f.facts.dtype == "float32"


def test_an_offset_in_one_direction_leans_by_offset():
    ref = _ref()
    rows = ref.shape[0]
    out, moved = _leaning(ref, [-0.5] * rows)               # the output below the reference everywhere
    jitter = torch.linspace(0, 1e-3, rows, dtype=torch.float64).reshape(-1, 1) * EPS   # distinct rows
    f = bias("y", out, moved + jitter)
    assert f.facts.lean == "offset" and f.facts.down == rows and f.facts.up == 0
    assert f.facts.mean_ulps == pytest.approx(-0.5, rel=0.01)


@pytest.mark.parametrize("ulps,leans", [(BIAS_ULPS * 0.9, False), (BIAS_ULPS * 1.1, True)])
def test_the_mean_error_must_reach_a_tenth_of_an_ulp(ulps, leans):
    ref = _ref(rows=128)
    per_row = ulps * (1 + 0.01 * torch.linspace(0, 1, 128))   # every row leans up, each by its own amount
    out, moved = _leaning(ref, per_row)
    f = bias("y", out, moved)
    assert (f is not None) == leans
    if leans:
        assert f.facts.lean == "offset" and f.facts.up == 128 and f.facts.mean_ulps == pytest.approx(ulps, rel=0.02)


@pytest.mark.parametrize("rows,leans", [(MIN_ROWS - 1, False), (MIN_ROWS, True)])
def test_fewer_than_64_rows_cannot_show_a_lean(rows, leans):
    ref = _ref(rows=rows, cols=8)
    out, moved = _leaning(ref, 1 + 0.01 * torch.arange(rows, dtype=torch.float64))
    assert (bias("y", out, moved) is not None) == leans


def test_identical_rows_count_once():
    ref = _ref(rows=1).expand(200, 32).contiguous()
    out, moved = _leaning(ref, [1.0] * 200)
    assert bias("y", out, moved) is None                     # 200 rows, one independent rounding


@pytest.mark.parametrize("up,p_small", [(80, True), (70, False)])
def test_the_sign_test_decides_at_one_in_a_million(up, p_small):
    # 100 rows: `up` lean +1 ulp, the rest -0.2 ulp (the mean is well past a tenth of an ulp either way);
    # 80 of 100 one way happens by chance with p ~ 1e-9, 70 of 100 with p ~ 8e-5
    ref = _ref(rows=100)
    k = torch.where(torch.arange(100) < up, 1.0, -0.2).double() * (1 + 1e-3 * torch.arange(100))
    out, moved = _leaning(ref, k)
    f = bias("y", out, moved)
    assert (f is not None) == p_small
    if f is not None:
        assert (f.facts.up, f.facts.down) == (80, 20) and 1e-10 < f.facts.p < 1e-8


def test_a_lean_the_peer_shares_is_not_the_kernels():
    ref = _ref()
    out = (ref * (1 + 4 * EPS)).to(torch.float32)
    peer = (ref * (1 + 4 * EPS)).to(torch.float32)           # the reference in float32 leans the same way
    assert bias("y", out, ref, peer) is None
    honest = ref.to(torch.float32)                           # a peer that does not lean: the kernel does
    f = bias("y", out, ref, honest)
    assert f is not None and f.facts.peer
    opposite = (ref * (1 - 8 * EPS)).to(torch.float32)       # a peer leaning the other way: the kernel leans against it too
    assert bias("y", out, ref, opposite) is not None
    wrong_shape = honest[:10]
    f = bias("y", out, ref, wrong_shape)                     # a peer of another shape is not used
    assert f is not None and not f.facts.peer


def test_integer_tiny_and_non_finite_outputs():
    assert bias("y", torch.arange(1000), torch.arange(1000)) is None
    ref = _ref(rows=1, cols=MIN_ROWS - 1)
    assert bias("y", (ref * 2).to(torch.float32), ref) is None          # fewer elements than MIN_ROWS
    ref = _ref()
    ref[::3, 5] = float("nan")
    ref[::2, 6] = 0.0
    out = ref.to(torch.float32)
    assert bias("y", out, ref) is None                                   # NaN and zero elements are skipped
    f = bias("y", (ref * (1 + 4 * EPS)).to(torch.float32), ref)
    assert f is not None and f.facts.lean == "scale"


def test_a_one_dimensional_output_is_one_element_a_row():
    g = torch.Generator().manual_seed(2)
    ref = torch.randn(4096, generator=g, dtype=torch.float64)
    assert bias("y", ref.to(torch.float32), ref) is None
    f = bias("y", (ref * (1 + 4 * EPS)).to(torch.float32), ref)
    assert f is not None and f.facts.up + f.facts.down > 4000


def test_a_big_output_is_sampled_every_keep_th_row(monkeypatch):
    monkeypatch.setattr(bias_mod, "SAMPLE", 64 * 32)          # 64 rows of 32 read: every 4th of 256
    ref = _ref()
    out = ref.to(torch.float32).clone()
    skipped = torch.arange(256) % 4 != 0
    out[skipped] = (ref[skipped] * (1 + 4 * EPS)).to(torch.float32)
    assert bias("y", out, ref) is None                        # the leaning rows are never read
    out = (ref * (1 + 4 * EPS)).to(torch.float32)
    f = bias("y", out, ref)
    assert f is not None and f.facts.up + f.facts.down == 64


def test_the_warning_round_trips_to_strict_json_even_at_a_tiny_p():
    ref = _ref(rows=2048, cols=4)
    f = bias("y", (ref * (1 + 64 * EPS)).to(torch.float32), ref)
    assert f.facts.p >= 1e-300
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f
