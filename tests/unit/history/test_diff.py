"""history/diff.py: verdict changes, bits, load comparability and the slower-rung rule, on points
as the history reads them (tests/test_history.py covers the noise cases end to end)."""
import json

import pytest

from kladder.core.facts import ClimbLoadFacts
from kladder.history import diff as diffmod
from kladder.history.diff import _keyed, climb_load, diff, differed, last_two, stretch
from kladder.history.store import History

A = {"id": 1, "device": "cpu", "toolchain": {"torch": "2.12", "triton": "3.9"}}
B = {"id": 2, "device": "cpu", "toolchain": {"torch": "2.13", "triton": "3.9"}}


def _p(pid, status="passed", seconds=1.0, hashes=None, nondet=False, rung=1, load=None, kernel=None):
    return {"id": pid, "rung": rung, "status": status, "failure": None if status == "passed" else "why", "seconds": seconds,
            "stages": {} if kernel is None else {"kernel": kernel}, "hashes": {"out": "a"} if hashes is None else hashes,
            "nondeterministic": nondet, "point": None, "load": load}


def _load(seconds, cores=0.0, wait=0.0, lanes=0, processes=0):
    return {"seconds": seconds, "host_cpu_s": cores * seconds, "worker_wait_s": wait * seconds, "lanes": lanes,
            "processes": processes}


def test_points_with_one_id_are_told_apart_in_order():
    assert list(_keyed([_p("x"), _p("y"), _p("x"), _p("x")])) == ["x", "y", "x#2", "x#3"]


def test_which_verdict_changes_are_new_failures_and_new_passes():
    before = [_p("pf"), _p("fp", "failed"), _p("fl", "flaky"), _p("bp", "broken"), _p("pb"), _p("ff", "failed"),
              _p("pk", "passed")]
    after = [_p("pf", "failed"), _p("fp"), _p("fl"), _p("bp"), _p("pb", "broken"), _p("ff", "flaky"),
             _p("pk", "flaky")]
    d = diff(A, before, B, after)
    assert [x.id for x in d.newly_failing] == ["pf", "pk"]               # failed->flaky is no new failure
    assert [x.id for x in d.newly_passing] == ["fp", "fl"]               # broken->passed: it was never failing
    assert d.worse and d.newly_failing[0].before == "passed" and d.newly_failing[0].failure_after == "why"
    assert d.bits_changed == []                                          # a new verdict says more than its bits


def test_only_a_only_b_and_the_toolchain_change():
    d = diff(A, [_p("a"), _p("both")], B, [_p("both"), _p("b")])
    assert d.only_a == ["a"] and d.only_b == ["b"] and not d.worse
    assert d.toolchain == {"torch": ["2.12", "2.13"]}
    assert diff(A, [], A, []).toolchain == {}


def test_bits_compare_only_outputs_both_climbs_hashed():
    d = diff(A, [_p("x", hashes={"o1": "a", "o2": "b", "gone": "c"})], B,
             [_p("x", hashes={"o1": "a", "o2": "Z", "new": "d"})])
    assert [(b.id, b.outputs) for b in d.bits_changed] == [("x", ["o2"])]
    assert not d.worse                                                   # changed bits alone never fail the gate
    d = diff(A, [_p("x", "failed", hashes={"o": "a"})], B, [_p("x", "failed", hashes={"o": "b"})])
    assert [b.before for b in d.bits_changed] == ["failed"]


def test_climb_load_weights_by_seconds_and_ignores_unrecorded_points():
    assert climb_load([_p("x")]) is None
    assert climb_load([_p("x", load=_load(0.0, cores=5))]) is None
    load = climb_load([_p("x", load=_load(1.0, cores=1.0, wait=0.5, lanes=2)),
                       _p("y", load=_load(3.0, cores=0.0, wait=0.0, lanes=0, processes=1)), _p("z")])
    assert (load.points, load.seconds, load.others_cores, load.wait_share, load.lanes, load.device_processes) == \
        (2, 4.0, 0.25, 0.125, 1.0, 0.5)


def _facts(**kw):
    base = dict(points=1, seconds=1.0, others_cores=0.0, wait_share=0.0, lanes=0.0, device_processes=0.0)
    return ClimbLoadFacts(**{**base, **kw})


@pytest.mark.parametrize("field,limit", sorted(diffmod.LIMITS.items()))
def test_load_differs_only_past_each_limit(field, limit):
    assert differed(_facts(), _facts(**{field: limit})) == []
    assert differed(_facts(**{field: 0.25}), _facts(**{field: 0.25 + limit + 0.01})) == [field]


def test_stretch_is_the_wait_for_a_cpu_capped():
    assert stretch(_p("x")) == 1.0
    assert stretch(_p("x", load=_load(0.0))) == 1.0
    assert stretch(_p("x", load=_load(2.0, wait=0.5))) == pytest.approx(2.0)
    assert stretch(_p("x", load=_load(2.0, wait=1.0))) == pytest.approx(1 / (1 - diffmod.MAX_WAIT))


def test_timing_not_compared_names_why():
    loaded = [_p(f"p{i}", load=_load(1.0)) for i in range(3)]
    assert diff(A, loaded, B, loaded).timing.why == "compared"
    other = diff(A, loaded, {**B, "device": "cuda", "device_name": "H100"}, loaded).timing
    assert (other.why, other.device_a, other.device_b) == ("device", "cpu", "cuda (H100)")
    assert diff(A, [_p("x")], B, loaded).timing.why == "not_recorded"
    busy = diff(A, loaded, B, [_p(f"p{i}", load=_load(1.0, lanes=2)) for i in range(3)]).timing
    assert (busy.compared, busy.why, busy.differed) == (False, "load", ["lanes"])


def _timed(seconds, rung=1):
    return [_p(f"p{i}", seconds=s, rung=rung, load=_load(s)) for i, s in enumerate(seconds)]


def test_a_slower_rung_needs_min_paired_points():
    base = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.02]
    slow = [s * f for s, f in zip(base, [3.0, 3.1, 2.9, 3.2, 3.05, 2.95, 3.02], strict=True)]
    seven = diff(A, _timed(base), B, _timed(slow), fail_on=("slower",))
    assert [s.rung for s in seven.slower_rungs] == [1] and seven.worse
    s = seven.slower_rungs[0]
    assert (s.pairs, s.kernel_stage) == (7, False) and 2.9 < s.ratio < 3.2 and s.p < diffmod.ALPHA
    assert s.before_s == pytest.approx(sum(base)) and s.after_s == pytest.approx(sum(slow))
    n = diffmod.MIN_PAIRED - 1
    few = diff(A, _timed(base[:n]), B, _timed(slow[:n]), fail_on=("slower",))
    assert few.slower_rungs == [] and not few.worse
    assert not diff(A, _timed(base), B, _timed(slow)).worse               # slower fails the gate only when asked


def test_a_slower_rung_needs_min_s_more_in_all():
    base = [0.01, 0.011, 0.009, 0.012, 0.0105, 0.0095, 0.01]         # x3 but 0.15 s more in all
    assert diff(A, _timed(base), B, _timed([3 * s for s in base])).slower_rungs == []


def test_each_rung_is_judged_on_its_own_points():
    base = [1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.02]
    pa = _timed(base, rung=1) + [dict(p, id=f"q{i}", rung=3) for i, p in enumerate(_timed(base, rung=3))]
    pb = _timed(base, rung=1) + [dict(p, id=f"q{i}", rung=3, seconds=(3 + i / 10) * p["seconds"])
                                 for i, p in enumerate(_timed(base, rung=3))]
    assert [s.rung for s in diff(A, pa, B, pb).slower_rungs] == [3]


def test_the_diff_is_strict_json():
    d = diff(A, [_p("x"), _p("y", "failed")], B, [_p("x", "failed"), _p("y")])
    assert json.loads(json.dumps(d.to_dict(), allow_nan=False))["newly_failing"][0]["id"] == "x"


def test_last_two_are_the_newest_two_of_one_spec_and_kind(tmp_path):
    h = History(str(tmp_path / "h.sqlite"))
    try:
        def climb(spec, kind):
            return h.begin(kind, spec, f"{spec}.py", "cpu", "1", "t", None, {})
        assert last_two(h, None) is None
        a1 = climb("a", "climb")
        assert last_two(h, "a") is None
        a2 = climb("a", "climb")
        climb("a", "repro")                                  # a repro's one point is never compared
        b1 = climb("b", "pytest")
        assert [c["id"] for c in last_two(h, "a")] == [a1, a2]
        assert last_two(h, None) is None                     # the newest is b's only pytest run
        b2 = climb("b", "pytest")
        assert [c["id"] for c in last_two(h, None)] == [b1, b2]
    finally:
        h.close()


def test_at_min_paired_pairs_the_test_can_reach_alpha():
    """All pairs slower is the strongest evidence n pairs can give: p = 2^-n exactly. At
    MIN_PAIRED it must be below ALPHA, or a rung of MIN_PAIRED points is never called slower."""
    from scipy.stats import wilcoxon
    n = diffmod.MIN_PAIRED
    assert float(wilcoxon([0.5 + k / 100 for k in range(n)], alternative="greater").pvalue) < diffmod.ALPHA
    assert float(wilcoxon([0.5 + k / 100 for k in range(n - 1)], alternative="greater").pvalue) >= diffmod.ALPHA
