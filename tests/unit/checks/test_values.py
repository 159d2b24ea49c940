"""checks/values.py: the comparison's own logic, directly: the slabs, each row's scale, the
NaN/inf/overflow rules, integer outputs, the count of failures a peer may excuse, the gate past
which no peer is asked, the budgets `settle` and `decided` apply, and the finding's largest
difference and facts (strict JSON). Both sides of every threshold: a correct output passes."""
import json
import math
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.checks import peer, values
from kladder.checks.pattern import Where
from kladder.checks.values import Mismatch, Tolerance, allowed_of, mismatch, row_rms
from kladder.core.outcome import Check, Finding
from kladder.core.spec import DEFAULT_TOLERANCES

F32, BF16, F16 = DEFAULT_TOLERANCES["float32"], DEFAULT_TOLERANCES["bfloat16"], DEFAULT_TOLERANCES["float16"]
MN = Where(("M", "N"))


def _ref(shape=(8, 64), seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---------------------------------------------------------------------------- slabs and scales
@settings(max_examples=30, deadline=None)
@given(st.integers(0, 40), st.integers(1, 40), st.integers(1, 64))
def test_the_slabs_cover_every_element_once(rows, cols, chunk):
    seen = torch.zeros(rows, cols, dtype=torch.int64)
    old = values.CHUNK
    values.CHUNK = chunk
    try:
        for rs, cs in values._slabs(rows, cols):
            seen[rs, cs] += 1
            if cols <= chunk:
                assert cs == slice(None)                  # whole rows where a row fits
            else:
                assert rs.stop - rs.start == 1 and cs.stop - cs.start <= chunk
    finally:
        values.CHUNK = old
    assert bool((seen == 1).all())


def test_each_rows_rms_is_over_its_finite_entries_only():
    r = torch.tensor([[3.0, 4.0, float("nan")], [float("inf"), float("-inf"), float("nan")], [1.0, 1.0, 1.0]],
                     dtype=torch.float64)
    assert row_rms(r).tolist() == pytest.approx([math.sqrt(12.5), 0.0, 1.0])
    assert row_rms(torch.tensor(2.0)).tolist() == [2.0]                      # a 0-d tensor is one row
    assert row_rms(torch.zeros(0, 5)).numel() == 0


def test_allowed_of_is_the_default_at_the_larger_of_the_element_and_its_rows_rms():
    r = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float32)
    tol = Tolerance(0.5, 0.25)                       # Tolerance(rtol, atol)
    rms = math.sqrt(12.5)
    assert allowed_of(r, tol).reshape(-1).tolist() == pytest.approx([0.25 + 0.5 * rms, 0.25 + 0.5 * 4, 0.25, 0.25])
    assert allowed_of(r, tol).dtype == torch.float32


# ---------------------------------------------------------------------------- the default verdict
def test_a_correct_rounding_passes_at_every_dtypes_default():
    ref = _ref()
    for dtype, tol in ((torch.float32, F32), (torch.float16, F16), (torch.bfloat16, BF16)):
        assert mismatch(ref.to(dtype), ref, tol) is None


def test_a_float64_output_is_judged_in_float64():
    ref = _ref()
    tol = Tolerance(1e-12, 0.0)
    out = ref.clone()
    assert mismatch(out, ref, tol) is None
    out[2, 3] = ref[2, 3] + 2e-12 * max(abs(float(ref[2, 3])), float(row_rms(ref)[2]))
    m = mismatch(out, ref, tol)
    assert m.n_bad == 1 and bool(m.bad[2, 3]) and m.n_excusable == 1


def test_one_element_just_past_the_default_fails_and_just_inside_passes():
    ref = 100 + torch.zeros(4, 4, dtype=torch.float64)                        # the row's RMS is 100
    tol = Tolerance(1e-3, 0.0)
    out = ref.clone().float()
    out[1, 1] = 100 * (1 + 1e-3 * 0.99)
    assert mismatch(out, ref, tol) is None
    out[1, 1] = 100 * (1 + 1e-3 * 1.01)
    assert mismatch(out, ref, tol).n_bad == 1


def test_integer_and_bool_outputs_are_exact_and_excuse_nothing():
    ref = torch.arange(12).reshape(3, 4)
    out = ref.clone()
    assert mismatch(out, ref, Tolerance(1.0, 100.0)) is None                 # a tolerance never applies
    out[2, 1] += 1
    m = mismatch(out, ref, Tolerance(1.0, 100.0))
    assert (m.n_bad, m.n_excusable, m.rms) == (1, 0, None) and bool(m.bad[2, 1])
    b = torch.tensor([True, False, True])
    assert mismatch(b, b.clone(), F32) is None
    assert mismatch(~b, b, F32).n_bad == 3


def test_an_empty_output_has_nothing_to_fail():
    assert mismatch(torch.zeros(0, 8), torch.zeros(0, 8, dtype=torch.float64), F32) is None
    assert mismatch(torch.zeros(3, 0), torch.zeros(3, 0, dtype=torch.float64), F32) is None


def test_a_scalar_output_is_one_row():
    assert mismatch(torch.tensor(1.0), torch.tensor(1.0, dtype=torch.float64), F32) is None
    m = mismatch(torch.tensor(2.0), torch.tensor(1.0, dtype=torch.float64), F32)
    assert m.n_bad == 1 and m.bad.shape == ()


def test_non_finite_elements_are_failures_no_peer_may_excuse():
    ref = _ref((2, 8))
    out = ref.float().clone()
    out[0, 0] = float("nan")
    out[0, 1] = float("inf")
    out[1, 2] += 1.0                                                          # finite and off: excusable
    m = mismatch(out, ref, F32)
    assert (m.n_bad, m.n_excusable) == (3, 1)


def test_overflow_is_the_right_answer_past_the_dtypes_largest():
    big = torch.finfo(torch.float16).max
    ref = torch.tensor([[2.0 * big, -2.0 * big, 2.0 * big, 1.0]], dtype=torch.float64)
    right = torch.tensor([[float("inf"), float("-inf"), big, 1.0]], dtype=torch.float16)   # inf, or saturated
    assert mismatch(right, ref, F16) is None
    wrong = torch.tensor([[float("-inf"), float("inf"), 1.0, 1.0]], dtype=torch.float16)
    m = mismatch(wrong, ref, F16)
    assert m.bad.tolist() == [[True, True, True, False]]
    # a true value well inside the range is no overflow: inf there fails
    assert mismatch(torch.tensor([float("inf")], dtype=torch.float16), torch.tensor([100.0], dtype=torch.float64),
                    F16).n_bad == 1


def test_nonfinite_ignore_skips_what_the_reference_cannot_say_but_not_a_non_finite_output():
    ref = torch.tensor([[float("nan"), float("inf"), 1.0, 1.0]], dtype=torch.float64)
    out = torch.tensor([[5.0, 7.0, 1.0, float("nan")]], dtype=torch.float32)
    m = mismatch(out, ref, F32, "ignore")
    assert m.bad.tolist() == [[False, False, False, True]]
    assert mismatch(out, ref, F32).bad.tolist() == [[True, True, False, True]]    # without the policy


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2 ** 16), st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
       st.integers(1, 9), st.integers(1, 70))
def test_the_float32_slab_verdict_is_float64s(seed, dtype, rows, cols):
    # errors drawn around the threshold: float32 with its doubtful elements re-decided agrees with
    # the verdict made wholly in float64 (the float64 output path) element by element
    g = torch.Generator().manual_seed(seed)
    tol = DEFAULT_TOLERANCES[str(dtype).removeprefix("torch.")]
    ref = torch.randn(rows, cols, generator=g, dtype=torch.float64)
    out = (ref * (1 + tol.rtol * 2 * torch.randn(rows, cols, generator=g, dtype=torch.float64))).to(dtype)
    m = mismatch(out, ref, tol)
    exact = mismatch(out.double(), ref, tol)              # a float64 output: decided in float64 only
    assert (m is None) == (exact is None)
    if m is not None:
        assert torch.equal(m.bad, exact.bad)


# ---------------------------------------------------------------------------- the gate before the peers
def test_beyond_peers_is_none_at_exactly_the_gate_and_a_number_past_it():
    ref = torch.ones(1, 4, dtype=torch.float64)
    tol = Tolerance(0.0, 1e-6)                                                # the budget is atol alone
    out = ref.clone()
    out[0, 2] += values.PEER_DECIDES * 1e-6 * 0.999
    assert values.beyond_peers(mismatch(out, ref, tol), out, ref, tol) is None
    out[0, 2] = 1 + values.PEER_DECIDES * 1e-6 * 1.5
    assert values.beyond_peers(mismatch(out, ref, tol), out, ref, tol) == pytest.approx(1.5 * values.PEER_DECIDES)
    ints = mismatch(torch.tensor([1]), torch.tensor([2]), tol)
    assert values.beyond_peers(ints, torch.tensor([1]), torch.tensor([2]), tol) is None    # nothing excusable


def test_not_needed_says_the_default_decided_and_by_how_much():
    m = Mismatch(torch.ones(2, dtype=torch.bool), torch.ones(1), 2, 2, 2)
    n = values.not_needed(m, 4321.0)
    assert n.facts["budget"] == "default" and n.facts["peer"].times == 4321.0
    assert n.facts["peer"].decides == values.PEER_DECIDES and m.facts == {}            # the input is left as it was


# ---------------------------------------------------------------------------- budgets
def test_ulp_is_one_unit_in_the_last_place_at_the_magnitude():
    x = torch.tensor([1.0, 1.5, 2.0, -3.0, 0.0], dtype=torch.float64)
    eps = torch.finfo(torch.bfloat16).eps
    assert values._ulp(x, torch.bfloat16).tolist() == [eps, eps, 2 * eps, 2 * eps, values._ulp(
        torch.tensor([torch.finfo(torch.bfloat16).tiny], dtype=torch.float64), torch.bfloat16).item()]


def test_settle_with_no_budget_but_the_default_keeps_every_failure():
    ref = _ref((2, 8))
    out = ref.float().clone()
    out[1, 3] += 1.0
    m = mismatch(out, ref, F32)
    kept = values.settle(m, out, ref, F32)
    assert kept.n_bad == 1 and kept.settled[0].tolist() == [11] and kept.facts == {}
    assert m.bad.sum() == 1 and kept.bad is not m.bad                      # the input mismatch is not changed


def test_settle_with_a_spread_excuses_an_error_within_the_terms_scale_and_says_so():
    ref = torch.full((1, 4), 0.5, dtype=torch.float64)
    tol = Tolerance(1e-3, 0.0)
    out = ref.clone().float()
    out[0, 1] = 0.5 + 0.01                                                   # 20 x the default there
    m = mismatch(out, ref, tol)
    unit = 2.0 ** -11
    small = torch.full((1, 4), 1.0 * unit, dtype=torch.float64)           # terms of size 1: budget 1e-3
    kept = values.settle(m, out, ref, tol, spread=small, unit=unit)
    assert kept is not None and kept.facts["budget"] == "spread" and kept.facts["spread"]["draws"] == peer.SPREAD_DRAWS
    assert kept.facts["spread"]["terms"] == pytest.approx(1.0)
    big = torch.full((1, 4), 20.0 * unit, dtype=torch.float64)            # terms of size 20: budget 0.02
    assert values.settle(m, out, ref, tol, spread=big, unit=unit) is None


def test_slack_ulps_adds_units_in_the_last_place_and_is_recorded():
    ref = torch.full((1, 4), 1.0, dtype=torch.float64)
    tol = Tolerance(0.0, 1e-9)
    out = ref.to(torch.bfloat16).clone()
    out[0, 0] = 1 + torch.finfo(torch.bfloat16).eps                       # one ulp off
    m = mismatch(out, ref, tol)
    kept = values.settle(m, out, ref, tol)
    assert kept is not None and "slack_ulps" not in kept.facts
    assert values.settle(m, out, ref, tol, slack_ulps=1) is None
    out[0, 0] = 1 + 2 * torch.finfo(torch.bfloat16).eps                   # two ulps: one ulp of slack is not enough
    kept = values.settle(mismatch(out, ref, tol), out, ref, tol, slack_ulps=1)
    assert kept.facts["slack_ulps"] == 1


def test_past_peer_max_elements_no_peer_is_asked_and_the_facts_say_so(monkeypatch):
    monkeypatch.setattr(values, "PEER_MAX_ELEMENTS", 3)
    ref = _ref((2, 8))
    out = ref.float() + 1.0
    m = mismatch(out, ref, F32)
    kept = values.settle(m, out, ref, F32, spread=torch.full(ref.shape, 1e9, dtype=torch.float64), unit=1.0)
    assert kept.n_bad == 16 and kept.facts == {"budget": "default", "peer": {"skipped": 16}}


def test_decided_needs_every_failure_excusable_and_passing_at_the_lower_bound():
    ref = torch.full((1, 4), 0.5, dtype=torch.float64)
    tol, unit = Tolerance(1e-3, 0.0), 2.0 ** -11
    out = ref.clone().float()
    out[0, 1] = 0.51
    m = mismatch(out, ref, tol)
    assert values.decided(m, out, ref, tol, torch.full((1, 4), 20.0 * unit), None, unit)
    assert not values.decided(m, out, ref, tol, torch.full((1, 4), 1.0 * unit), None, unit)
    # with the peer: C x its own error at the element, up to the cap (8 x the rest: 8e-3 here)
    out[0, 1] = 0.504
    m = mismatch(out, ref, tol)
    s1 = torch.full((1, 4), 1.0 * unit)                                      # the spread's budget: 1e-3 < 4e-3
    assert not values.decided(m, out, ref, tol, s1, None, unit)
    low = ref.clone().float()
    low[0, 1] = 0.5025                                                       # C x 2.5e-3 = 5e-3 >= 4e-3
    assert values.decided(m, out, ref, tol, s1, low, unit)
    low[0, 1] = 0.5015                                                       # C x 1.5e-3 = 3e-3 < 4e-3
    assert not values.decided(m, out, ref, tol, s1, low, unit)
    out[0, 1] = 0.51
    low[0, 1] = 0.51                                                         # C x 1e-2, but capped at 8e-3 < 1e-2
    assert not values.decided(mismatch(out, ref, tol), out, ref, tol, s1, low, unit)
    out[0, 2] = float("nan")                                                 # one failure no budget excuses
    assert not values.decided(mismatch(out, ref, tol), out, ref, tol, torch.full((1, 4), 20.0 * unit), None, unit)


def test_settle_with_no_peer_is_the_default_and_a_peer_without_more_runs_asks_for_none():
    ref = _ref((2, 8))
    out = ref.float().clone()
    out[0, 4] += 1.0
    m = mismatch(out, ref, F32)
    assert values.settle_with(m, out, ref, F32, None).n_bad == 1
    p = types.SimpleNamespace(kernel=ref.float(), spread=None, facts={"dtype": "float32"}, unit=2.0 ** -24)
    kept = values.settle_with(m, out, ref, F32, p)
    assert kept.n_bad == 1 and kept.facts["peer"]["factor"] >= 0 and kept.facts["budget"] in ("default", "peer")


def test_near_miss_is_within_the_margin_and_every_failure_excusable():
    m = Mismatch(torch.ones(2, dtype=torch.bool), None, 2, 2, 2, worst_ratio=peer.SETTLE_MARGIN)
    assert values.near_miss(m)
    assert not values.near_miss(Mismatch(m.bad, None, 2, 2, 2, worst_ratio=peer.SETTLE_MARGIN * 1.0001))
    assert not values.near_miss(Mismatch(m.bad, None, 2, 2, 2, worst_ratio=0.0))     # never judged against a budget
    assert not values.near_miss(Mismatch(m.bad, None, 2, 2, 1, worst_ratio=1.5))


# ---------------------------------------------------------------------------- the finding
def test_the_finding_names_the_largest_difference_and_what_was_allowed_there():
    ref = 10 + torch.zeros(3, 5, dtype=torch.float64)
    tol = Tolerance(1e-3, 1e-5)
    out = ref.float().clone()
    out[0, 1] += 0.5
    out[2, 4] -= 2.0
    m = mismatch(out, ref, tol)
    f = values.finding("y", m, out, ref, tol, MN, {"dtype": "float32", "shape": [3, 5], "mode": "eager"})
    assert f.check == Check.VALUES and f.output == "y" and (f.mismatched, f.total) == (2, 15)
    assert f.largest.index == (2, 4) and f.largest.kernel == 8.0 and f.largest.reference == 10.0
    assert f.largest.allowed == pytest.approx(1e-5 + 1e-3 * 10) and f.max_abs_err == 2.0
    assert (f.facts.rtol, f.facts.atol, f.facts.nonfinite, f.facts.sampled) == (1e-3, 1e-5, 0, False)
    assert (f.facts.dtype, f.facts.shape, f.facts.mode, f.facts.cliffs) == ("float32", [3, 5], "eager", None)


def test_a_non_finite_output_is_the_largest_difference_and_its_error_is_infinite():
    ref = _ref((2, 4))
    out = ref.float().clone()
    out[0, 0] += 100.0
    out[1, 2] = float("nan")
    f = values.finding("y", mismatch(out, ref, F32), out, ref, F32, MN)
    assert f.largest.index == (1, 2) and math.isnan(f.largest.kernel) and f.max_abs_err == float("inf")
    assert f.facts.nonfinite == 1


def test_a_sampled_output_names_the_original_row_and_the_budget_elements_index():
    ref = _ref((3, 4))
    out = ref.float().clone()
    out[2, 1] += 1.0
    m = values.settle(mismatch(out, ref, F32), out, ref, F32, spread=torch.zeros(3, 4), unit=2.0 ** -24)
    where = Where(("M", "N"), {}, {0: [0, 7, 4000]})
    f = values.finding("y", m, out, ref, F32, where)
    assert f.largest.index == (4000, 1) and f.facts.sampled and f.facts.budget_at == [4000, 1]
    assert f.largest.allowed == pytest.approx(float(m.settled[1][0]))     # the settled budget, not the default


def test_the_cliffs_an_output_crosses_are_in_the_facts():
    m = Mismatch(torch.tensor([[True]]), torch.ones(1, dtype=torch.float64), 1, 1, 1)

    def cliffs(shape):
        return values.finding("y", m, torch.zeros(1, 1), torch.ones(1, 1, dtype=torch.float64), F32, MN,
                              {"dtype": "float32", "shape": shape, "mode": "eager"}).facts.cliffs
    assert cliffs([1 << 20, 1 << 11]) == [[31, "bytes", 1 << 29], [32, "bytes", 1 << 30]]
    assert cliffs([1 << 20, 1 << 10]) == [[31, "bytes", 1 << 29]]           # 4 GiB exactly: no element past 2^32 bytes
    assert cliffs([1 << 10, 1 << 10]) is None


def test_a_shape_the_reference_does_not_share_is_a_contract_finding():
    assert values.shape_finding("y", torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64)) is None
    f = values.shape_finding("y", torch.zeros(2, 3), torch.zeros(3, 2))
    assert f.check == Check.CONTRACT and f.facts.reference_shape == [3, 2] and f.facts.kernel_shape == [2, 3]
    assert values.compare("y", torch.zeros(2, 3), torch.zeros(3, 2), F32, MN).check == Check.CONTRACT


def test_compare_is_none_for_a_correct_output_and_round_trips_a_failure_to_strict_json():
    ref = _ref()
    assert values.compare("y", ref.float(), ref, F32, MN) is None
    out = ref.float().clone()
    out[:, -3:] = 0.0
    f = values.compare("y", out, ref, F32, Where(("M", "N"), {"N": (61,)}), spread=torch.zeros(ref.shape),
                       peer=ref.float(), unit=2.0 ** -24)
    assert f.pattern.kind == "block" and f.pattern.cols.tile_note == ("N", 61, 3)
    back = Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False)))
    assert back == f


def test_a_backwards_rounded_spread_widens_the_spread_budget_and_never_narrows_it():
    ref = torch.full((1, 4), 0.5, dtype=torch.float64)
    tol, unit = Tolerance(1e-3, 0.0), 2.0 ** -11
    out = ref.clone().float()
    out[0, 1] = 0.51                                                         # 1e-2 off: 20 x the default
    m = mismatch(out, ref, tol)
    small, big = torch.full((1, 4), 1.0 * unit), torch.full((1, 4), 20.0 * unit)
    assert values.settle(m, out, ref, tol, spread=small, unit=unit) is not None
    assert values.settle(m, out, ref, tol, spread=small, unit=unit, rounded=big) is None     # the larger of the two
    assert values.settle(m, out, ref, tol, spread=big, unit=unit, rounded=small) is None
    nan = torch.full((1, 4), float("nan"))
    assert values.settle(m, out, ref, tol, spread=small, unit=unit, rounded=nan) is not None  # a non-finite one counts 0
