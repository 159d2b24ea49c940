"""kladder.core.stats: the Clopper-Pearson bounds, the chance of seeing a rate, the curve's steps."""
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core import stats


def test_no_trials_say_nothing_about_the_rate():
    assert stats.interval(0, 0) == (0.0, 1.0)
    assert stats.upper_bound(0, 0) == 1.0
    assert stats.upper_bound(3, 0) == 1.0


def test_one_clean_call_bounds_the_rate_at_the_confidence_itself():
    # 0 in 1: p < 1 - (1 - 0.95)^1
    assert stats.upper_bound(0, 1) == pytest.approx(0.95)
    assert stats.upper_bound(0, 10) == pytest.approx(1 - 0.05 ** 0.1, rel=1e-12)


def test_every_call_wrong_puts_the_upper_end_at_one():
    lo, hi = stats.interval(4, 4)
    assert hi == 1.0 and 0 < lo < 1
    assert lo == pytest.approx(0.025 ** (1 / 4), rel=1e-9)     # the lower end of k = n: (tail)^(1/n)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 10**7), data=st.data())
def test_the_interval_holds_the_observed_rate_and_is_finite(n, data):
    k = data.draw(st.integers(0, n))
    lo, hi = stats.interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert math.isfinite(lo) and math.isfinite(hi)
    assert lo == 0.0 if k == 0 else lo > 0.0
    # the one-sided bound at 95% is tighter than the two-sided 95% interval's upper end
    assert stats.upper_bound(k, n) <= hi


def test_a_wider_confidence_gives_a_wider_interval():
    lo95, hi95 = stats.interval(3, 1000, 0.95)
    lo99, hi99 = stats.interval(3, 1000, 0.99)
    assert lo99 < lo95 < 3 / 1000 < hi95 < hi99


@pytest.mark.parametrize("p,calls,want", [(0.0, 10, 0.0), (-0.1, 10, 0.0), (0.5, 0, 0.0), (0.5, -3, 0.0),
                                          (1.0, 1, 1.0), (1.5, 1, 1.0), (0.5, 1, 0.5), (0.5, 2, 0.75)])
def test_chance_to_see_at_its_edges(p, calls, want):
    assert stats.chance_to_see(p, calls) == pytest.approx(want)


def test_chance_to_see_a_tiny_rate_keeps_its_digits():
    # 1 - (1 - p)^N computed naively is 0.0 for p = 1e-300: the rate would vanish
    assert stats.chance_to_see(1e-300, 10) == pytest.approx(1e-299, rel=1e-12, abs=0)


@pytest.mark.parametrize("p,chance,want", [(0.0, 0.5, 0), (-1.0, 0.5, 0), (1.0, 0.99, 1), (2.0, 0.5, 1),
                                           (0.5, 0.5, 1), (0.5, 0.75, 2), (0.5, 0.76, 3), (0.9, 0.01, 1)])
def test_calls_to_see_at_its_edges(p, chance, want):
    assert stats.calls_to_see(p, chance) == want


@settings(max_examples=50, deadline=None)
@given(p=st.floats(1e-9, 0.999), chance=st.floats(0.01, 0.999))
def test_calls_to_see_is_the_fewest_calls_that_reach_the_chance(p, chance):
    n = stats.calls_to_see(p, chance)
    assert n >= 1
    assert stats.chance_to_see(p, n) >= chance * (1 - 1e-9)
    if n > 1:
        assert stats.chance_to_see(p, n - 1) < chance * (1 + 1e-9)


def test_the_curve_steps_one_two_five():
    rows = stats.curve(1e-20, 0.0, 1e-19, 5)
    ns = [r[0] for r in rows]
    assert ns[:10] == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    assert ns[-1] == 10 ** 13                     # a rate no climb can see: the curve stops at 10^13 calls


def test_the_curve_reaches_the_calls_run_when_they_are_more():
    rows = stats.curve(0.5, 0.1, 0.9, 1000)
    assert rows[-1][0] >= 1000 and rows[-2][0] < 1000
    assert rows[0] == [1, 0.5, pytest.approx(0.1), pytest.approx(0.9)]


def test_the_curve_of_a_clean_run_follows_its_bound_and_its_low_end_stays_zero():
    s = stats.summary(0, 1000)
    assert s["rate"] == 0.0 and s["lo"] == 0.0
    assert s["bound"] == pytest.approx(1 - 0.05 ** (1 / 1000), rel=1e-9)
    assert all(row[2] == 0.0 for row in s["curve"])              # lo is 0: no chance at the low end
    assert s["calls_50"] == stats.calls_to_see(s["bound"], 0.5)   # a clean run's "rate" is its bound
    assert s["curve"][-1][1] > 0.999


def test_a_summary_of_no_calls_is_strict_json_and_says_nothing_is_known():
    s = stats.summary(0, 0)
    assert (s["rate"], s["lo"], s["hi"], s["bound"]) == (0.0, 0.0, 1.0, 1.0)
    assert s["curve"] == [[1, 1.0, 0.0, 1.0]]
    assert json.loads(json.dumps(s, allow_nan=False)) == s


def test_a_summary_with_failures_reports_the_observed_rate():
    s = stats.summary(5, 50)
    assert s["rate"] == 0.1 and s["lo"] < 0.1 < s["hi"]
    assert s["calls_50"] == stats.calls_to_see(0.1, 0.5) == 7       # 1 - 0.9^7 = 0.52
    assert s["calls_95"] == stats.calls_to_see(0.1, 0.95) == 29
    json.dumps(s, allow_nan=False)
