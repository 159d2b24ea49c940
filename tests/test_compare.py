"""Comparison: contract first, NaN-aware values, scaled tolerances, located patterns."""
import torch

from kladder.checks.contract import contract as check_contract
from kladder.checks.guards import guards as check_guards
from kladder.checks.pattern import Where, describe
from kladder.checks import peer
from kladder.checks.values import compare
from kladder.report.words import budget_text, message, pattern_text
from kladder.core.spec import DEFAULT_TOLERANCES, Tolerance


def describe_pattern(bad, where):
    return pattern_text(describe(bad, where))


def compare_values(name, out, ref, tol, where, about=None, spread=None, kernel_peer=None, unit=peer.UNIT_ROUNDOFF["float16"]):
    return compare(name, out, ref, tol, where, about, spread=spread, peer=kernel_peer, unit=unit)


def rounding_spread(fn, args, dtypes, seed=0, draws=peer.SPREAD_DRAWS):
    """The spread of fn's float64 output when every input is rounded anew (checks/peer.py)."""
    gen = torch.Generator().manual_seed(seed)
    ref = fn(*args)
    acc = None
    for _ in range(draws):
        acc = peer.add_draw(acc, fn(*peer.perturbed(args, dtypes, gen)), ref)
    return peer.spread(acc, draws)

BF16 = DEFAULT_TOLERANCES["bfloat16"]


def ref_and_out(shape=(4, 37), dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(0)
    r = torch.randn(shape, generator=g, dtype=torch.float64)
    return r, r.to(dtype)


def test_rounding_to_the_output_dtype_passes():
    r, o = ref_and_out()
    assert compare_values("y", o, r, BF16, Where(("M", "N"))) is None


def test_small_reference_elements_are_held_to_the_row_scale():
    # an element near zero with an absolute error at the row's rounding noise is fine
    r, o = ref_and_out()
    r[0, 3] = 1e-9
    o = r.to(torch.bfloat16).clone()
    o[0, 3] = 2e-3
    assert compare_values("y", o, r, BF16, Where(("M", "N"))) is None


def test_nan_fails_whatever_the_tolerance():
    r, o = ref_and_out()
    o[1, 2] = float("nan")
    f = compare_values("y", o, r, Tolerance(1e9, 1e9), Where(("M", "N")))
    assert f is not None and f.mismatched == 1 and f.facts.nonfinite == 1
    assert f.largest.index == (1, 2)
    assert "Mismatched elements: 1 / 148" in message(f)


def test_infinities_of_different_sign_fail_and_equal_ones_pass():
    r = torch.tensor([float("inf"), float("-inf"), 1.0], dtype=torch.float64)
    assert compare_values("y", r.clone(), r, BF16, Where(("N",))) is None
    o = r.clone()
    o[0] = float("-inf")
    assert compare_values("y", o, r, BF16, Where(("N",))).mismatched == 1


def test_nan_in_both_is_a_match():
    r = torch.tensor([float("nan"), 1.0], dtype=torch.float64)
    assert compare_values("y", r.clone(), r, BF16, Where(("N",))) is None


def test_integer_outputs_are_exact():
    r = torch.arange(10)
    o = r.clone()
    o[9] = 0
    f = compare_values("idx", o, r, Tolerance(1, 1), Where(("N",)))
    assert f.mismatched == 1 and "the last element" in pattern_text(f.pattern)


def test_pattern_last_columns_names_the_tile_tail():
    bad = torch.zeros(6, 2881, dtype=torch.bool)
    bad[:, -1] = True
    assert describe_pattern(bad, Where(("M", "N"), {"N": (8,)})) == "the last column (N % 8 = 1) of every row"
    bad = torch.zeros(6, 4095, dtype=torch.bool)
    bad[:, -7:] = True
    assert describe_pattern(bad, Where(("M", "N"), {"N": (8,)})) == "the last 7 columns (N % 8 = 7) of every row"


def test_pattern_rows_and_scattered():
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[0:202] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "rows 0..201 (whole rows)"
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[100:] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "every row from 100 on (rows 100..299) (whole rows)"
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[5, 3] = bad[200, 9] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "scattered, 2 of 4,800 elements (first at (5, 3))"
    bad = torch.zeros(4, 128, dtype=torch.bool)
    bad[:, 64:] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "the last 64 columns of every row"
    assert describe_pattern(torch.ones(3, 3, dtype=torch.bool), Where()) == "every element"


def test_pattern_uses_original_row_ids_when_rows_were_sampled():
    bad = torch.zeros(5, 8, dtype=torch.bool)
    bad[2:] = True
    where = Where(("M", "N"), {}, {0: [0, 1, 14130, 14131, 14133]})
    assert describe_pattern(bad, where) == "rows 14130..14133 (whole rows)"


def test_contract_checks_dtype_shape_device_before_values():
    o = torch.zeros(4, 8, dtype=torch.float32)
    f = check_contract("y", o, (4, 8), "bfloat16", "cpu")
    assert f.check == "contract" and "dtype float32 where bfloat16 was expected" in message(f)
    f = check_contract("y", o, (4, 9), "float32", "cpu")
    assert "shape (4, 8) where (4, 9)" in message(f)
    assert check_contract("y", o, (4, 8), "float32", "cpu") is None
    assert "not a tensor" in message(check_contract("y", None, (4, 8), "float32", "cpu"))


def test_guard_finding_locates_the_overrun_in_elements():
    f = check_guards("out", [], [0, 1, 2, 3, 4, 5, 6, 7], 4)
    assert f.check == "guard" and "elements 0..1 past the last" in message(f)
    assert check_guards("out", [], [], 4) is None
    assert "before the start" in message(check_guards("out", [3], [], 4))


def test_pattern_spread_errors_say_how_many():
    bad = torch.ones(63, 64, dtype=torch.bool)
    bad[::7, ::3] = False
    assert describe_pattern(bad, Where(("M", "N"))).startswith("most elements of every row (")
    bad = torch.zeros(300, 16, dtype=torch.bool)
    bad[10:20, ::5] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "scattered elements of rows 10..19 (40 of 160)"


def test_pattern_whole_rows_that_are_not_contiguous():
    bad = torch.zeros(4096, 7, dtype=torch.bool)
    bad[[102, 243, 287]] = True
    assert describe_pattern(bad, Where(("M", "N"))) == "3 whole rows of 4,096 (rows 102, 243, 287)"


def test_the_rounding_spread_scales_a_cancelled_dot_product_by_its_terms():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(1, 7167, generator=g, dtype=torch.float64).to(torch.float16).double()
    b = torch.randn(7167, 1, generator=g, dtype=torch.float64).to(torch.float16).double()
    ref = a @ b
    # make the row cancel: a @ b = 0.2 while its terms are ~85 in size
    b[0, 0] -= (ref.item() - 0.2) / a[0, 0].item()
    ref = a @ b
    sp = rounding_spread(lambda x, y: x @ y, [a, b], ["float16", "float16"])
    terms = ((a * a) @ (b * b)).sqrt().item()                         # ~85: the rounding scale
    u = peer.UNIT_ROUNDOFF["float16"]
    assert 0.5 * terms * u * 2 ** 0.5 < sp.item() < 2 * terms * u * 2 ** 0.5    # two rounded inputs a term
    tol = DEFAULT_TOLERANCES["float16"]
    out = (ref + 0.03).to(torch.float16)                               # fp32 accumulation of fp16 terms: ~u x 85
    assert compare_values("c", out, ref, tol, Where(("M", "N"))) is not None          # the default alone fails it
    assert compare_values("c", out, ref, tol, Where(("M", "N")), spread=sp) is None   # the honest budget passes it
    dropped = (ref - (a[0, -1] * b[-1, 0]).abs() - 0.5).to(torch.float16)            # one term dropped still fails
    f = compare_values("c", dropped, ref, tol, Where(("M", "N")), spread=sp)
    assert f is not None and f.facts.budget == "spread" and f.facts.spread.draws == peer.SPREAD_DRAWS
    assert "allowed: the default at the scale of the terms that make the element" in budget_text(f.facts)
    assert "= the tolerance at the scale of the terms that make the element" in message(f)   # one line; no dtype given
    assert 0.5 * terms < f.facts.spread.terms < 2 * terms


def test_the_spread_of_an_elementwise_op_is_its_own_rounding():
    x = torch.randn(64, 64, dtype=torch.float64).to(torch.bfloat16).double()
    sp = rounding_spread(lambda t: 2 * t, [x], ["bfloat16"])
    ratio = sp / (2 * x.abs() * peer.UNIT_ROUNDOFF["bfloat16"])
    assert 0.7 < float(ratio.median()) < 1.3                              # one unit roundoff, in RMS


def test_a_kernel_precision_peer_widens_the_budget_and_a_broken_one_does_not():
    g = torch.Generator().manual_seed(3)
    ref = 100 * torch.randn(8, 256, generator=g, dtype=torch.float64)      # where rtol, not atol, decides
    noise = torch.randn(8, 256, generator=g, dtype=torch.float64)
    tol = DEFAULT_TOLERANCES["float32"]
    kernel = (ref * (1 + 1e-6 * noise)).to(torch.float32)               # a correct float32 kernel at a long K
    honest = (ref * (1 + 1e-6 * noise.roll(1, 1))).to(torch.float32)    # its peer: the same size of error, elsewhere
    assert compare_values("y", kernel, ref, tol, Where(("M", "N"))) is not None
    assert compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=honest) is None
    broken = honest.clone()
    broken[:, 7] = 0                                                     # a peer that underflowed to zero
    wrong = kernel.clone()
    wrong[2, 5] *= 1.1                                                   # a real 10% error
    f = compare_values("y", wrong, ref, tol, Where(("M", "N")), kernel_peer=broken)
    assert f is not None and f.largest.index == (2, 5) and f.facts.peer.capped
    nan_peer = torch.full_like(honest, float("nan"))                     # a non-finite peer never widens
    assert compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=nan_peer) is not None


def test_a_peer_widens_past_8x_the_default_up_to_half_the_digits():
    # a float32 GEMM at K = 16383 on the H200 was off by 1.3e-5 of the element, a float16 cumsum
    # that accumulates in float16 by 1.4% at N = 4096: rounding, more than 8 x the default allows
    g = torch.Generator().manual_seed(4)
    ref = 100 * torch.randn(16, 512, generator=g, dtype=torch.float64)
    tol = DEFAULT_TOLERANCES["float32"]
    kernel = (ref * (1 + 1.5e-5 * torch.randn(16, 512, generator=g, dtype=torch.float64))).to(torch.float32)
    honest = (ref * (1 + 1.5e-5 * torch.randn(16, 512, generator=g, dtype=torch.float64))).to(torch.float32)
    assert float(((kernel.double() - ref).abs() / ref.abs()).max()) > 8 * tol.rtol      # past the old cap
    assert compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=honest) is None
    # a peer that lost more than half the digits widens no further: a 1% error still fails
    bad_peer = (ref * (1 + 1e-2 * torch.randn(16, 512, generator=g, dtype=torch.float64))).to(torch.float32)
    wrong = kernel.clone()
    wrong[3, 9] *= 1.01
    f = compare_values("y", wrong, ref, tol, Where(("M", "N")), kernel_peer=bad_peer)
    assert f is not None and f.largest.index == (3, 9) and f.facts.peer.capped
    assert "sqrt(u) of the element's scale (half its float32 digits)" in budget_text(f.facts)
    assert "= a peer budget's cap (not 2 x " in message(f)


def test_a_peer_whose_errors_repeat_is_counted_at_the_tail():
    # identical weight rows: the peer rounds every column of a row the same way, so its largest
    # error is the largest of 8 draws; a correct kernel that orders each column's sum its own
    # way (split-K) reaches the tail of 4,096 draws
    g = torch.Generator().manual_seed(6)
    ref = 10 * (1 + torch.rand(8, 1, generator=g, dtype=torch.float64)).expand(8, 512).contiguous()
    tol = DEFAULT_TOLERANCES["float32"]
    kernel = (ref * (1 + 8e-6 * torch.randn(8, 512, generator=g, dtype=torch.float64))).to(torch.float32)
    row_err = 8e-6 * torch.randn(8, 1, generator=g, dtype=torch.float64).expand(8, 512)
    honest = (ref * (1 + row_err)).to(torch.float32)
    assert compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=honest) is None
    assert peer.tail_factor(2.0, 8 * 1.0, 8, 4096) > 4.0                 # RMS 1 over 4,096 elements
    assert peer.tail_factor(5.0, 8 * 1.0, 8, 4096) == 5.0                # its largest when that is more
    assert peer.tail_factor(3.0, 0.0, 0, 4096) == 3.0


def test_the_failures_are_rejudged_in_slabs(monkeypatch):
    from kladder.checks import values
    g = torch.Generator().manual_seed(8)
    ref = 100 * torch.randn(32, 64, generator=g, dtype=torch.float64)
    tol = DEFAULT_TOLERANCES["float32"]
    kernel = (ref * (1 + 1e-5 * torch.randn(32, 64, generator=g, dtype=torch.float64))).to(torch.float32)
    kernel[30, 2] *= 1.001                                                # one real error, in the last slab
    honest = (ref * (1 + 1e-5 * torch.randn(32, 64, generator=g, dtype=torch.float64))).to(torch.float32)
    whole = compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=honest)
    monkeypatch.setattr(values, "CHUNK", 7)
    slabs = compare_values("y", kernel, ref, tol, Where(("M", "N")), kernel_peer=honest)
    assert whole is not None and slabs is not None
    assert (whole.mismatched, whole.largest.index) == (slabs.mismatched, slabs.largest.index)
    assert abs(whole.largest.allowed - slabs.largest.allowed) < 1e-6 * whole.largest.allowed   # the row RMS in float32
    assert slabs.largest.index == (30, 2) and slabs.mismatched == 1


def test_float32_decides_as_float64_would_at_the_threshold():
    # errors a billionth over and under the allowed: float32 cannot tell them apart, float64 can
    tol = Tolerance(1e-3, 0.0)
    eps = torch.tensor([1e-9, -1e-9, 3e-9, -3e-9], dtype=torch.float64)
    delta = tol.rtol * (1 + eps) / (1 + tol.rtol * (1 + eps))       # |1 - ref| = rtol x |ref| x (1 + eps)
    ref = (1 - delta).reshape(4, 1)                                 # one-element rows: the scale is |ref|
    out = torch.ones(4, 1, dtype=torch.float32)
    f = compare("y", out, ref, tol, Where(("M", "N")))
    assert f is not None and f.mismatched == 2
    assert f.largest.index == (2, 0)                                # the one 3e-9 over
    assert pattern_text(f.pattern) == "scattered, 2 of 4 elements (first at (0, 0))"


def test_the_comparison_runs_in_slabs_of_rows(monkeypatch):
    from kladder.checks import values
    monkeypatch.setattr(values, "CHUNK", 64)          # 17 rows of 50 per slab: many slabs, one long row split
    r, o = ref_and_out((40, 50))
    o[33, 7] = float("nan")
    f = compare_values("y", o, r, BF16, Where(("M", "N")))
    assert f.mismatched == 1 and f.largest.index == (33, 7)
    long_r = torch.randn(1, 300, dtype=torch.float64)
    long_o = long_r.to(torch.bfloat16)
    long_o[0, 250] += 1
    f = compare_values("y", long_o, long_r, BF16, Where(("M", "N")))
    assert f.mismatched == 1 and f.largest.index == (0, 250)


def test_pattern_names_up_to_three_runs_of_rows_in_original_numbers():
    bad = torch.zeros(6, 8, dtype=torch.bool)
    bad[0:3] = True
    bad[5, :4] = True
    where = Where(("M", "N"), {}, {0: [0, 1, 2, 700, 14133, 14134]})
    assert describe_pattern(bad, where) == "most elements of rows 0..2, 14134 (28 of 32)"


def test_pattern_of_a_single_row():
    bad = torch.ones(1, 2879, dtype=torch.bool)
    bad[0, ::97] = False                                   # 30 scattered right answers
    assert describe_pattern(bad, Where(("M", "N"))) == "most elements of every row (2,849 of 2,879)"


def test_the_fused_fast_pass_counts_what_the_exact_comparison_finds():
    # kladder's own GPU kernel, run here under Triton's interpreter on CPU tensors
    pytest = __import__("pytest")
    pytest.importorskip("triton")
    from kladder.checks import fast
    from kladder.checks.values import mismatch
    g = torch.Generator().manual_seed(5)
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        ref = torch.randn(6, 300, generator=g, dtype=torch.float64)
        out = ref.to(dtype)
        assert fast.counts(out, ref.to(dtype), BF16.rtol, BF16.atol) == (0, 0)      # rounding only: sure
        out[1, 7] = float("nan")
        out[4, 299] += 1
        bad, doubt = fast.counts(out, ref.to(dtype), BF16.rtol, BF16.atol)
        assert bad == 1 and doubt == 1                    # the NaN is the exact path's to decide
        assert mismatch(out, ref, BF16).n_bad == 2
