"""report/words/reuse.py: what a climb reused, a reused point, evidence kept across climbs, -x."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core.facts import AccumulatedFacts, ReusedFacts, ReuseFacts
from kladder.report.words.reuse import accumulated_text, changed_text, climbs_text, reuse_text, reused_text, stopped_text


def _reuse(**kw) -> ReuseFacts:
    base = dict(points=330, reused=312, ran=18, climbs=[12], run_ids=["abc"], fresh=False, accumulate=False)
    return ReuseFacts(**{**base, **kw})


def test_climbs_text():
    assert climbs_text([12], []) == "climb #12"
    assert climbs_text([10, 12], ["x"]) == "climbs #10, #12"
    assert climbs_text(list(range(1, 9)), []) == "climbs #1, #2, #3, #4, #5, #6 and 2 more"
    assert climbs_text([], ["r1", "r2", "r3"]) == "climb r1 and 2 more"
    assert climbs_text([], ["r1"]) == "climb r1"
    assert climbs_text([], []) == "earlier climbs"


def test_changed_text():
    assert changed_text(_reuse()) == ""
    assert changed_text(_reuse(changed=["kernel", "env"], since=12)) == ("the kernel's code, the environment changed "
                                                                         "since climb #12")
    assert changed_text(_reuse(changed=["something new"])) == "something new changed since the last climb"


def test_reuse_text_each_case():
    assert reuse_text(_reuse(changed=["kernel"], since=12)) == ("312 of 330 points reused from climb #12; 18 run (the "
                                                                "kernel's code changed since climb #12)")
    assert reuse_text(_reuse(why_not="no history", reused=0, ran=330)) == "no point reused: no history; 330 run"
    assert reuse_text(_reuse(fresh=True, reused=0, ran=1234)) == ("no point reused (--fresh): 1,234 run, their outcomes "
                                                                  "kept for the next climb")
    assert reuse_text(_reuse(reused=0, ran=330, changed=["spec"])) == ("no point reused: 330 run (the spec's "
                                                                       "declarations changed since the last climb)")
    assert reuse_text(_reuse(reused=0, ran=330)) == "no point reused: 330 run"
    assert reuse_text(_reuse(reused=330, ran=0, changed=["kernel"])) == "330 of 330 points reused from climb #12; 0 run"
    assert reuse_text(_reuse(accumulate=True)).endswith("; 18 run (--accumulate: rung 5's clean points ran again)")


def test_reused_text_by_number_or_run_id():
    assert reused_text(ReusedFacts(run_id="r", climb=12, kept="2026-12-06T18:20:36")) == (
        "reused from climb #12 (2026-12-06T18:20:36): not run in this climb, its key unchanged")
    assert reused_text(ReusedFacts(run_id="r9", climb=None, kept="t")).startswith("reused from climb r9 (t)")


def test_accumulated_text():
    x = AccumulatedFacts(climbs=1200, calls=1_200_000, bound=2.5e-06, conf=0.95, since="2026-12-01")
    assert accumulated_text(x) == ("over 1,200 climbs under the same key since 2026-12-01: 0 wrong in 1,200,000 calls: "
                                   "rate < 2.5e-06 at 95%")
    assert "0 differ in" in accumulated_text(x, "differ")


def test_stopped_text_joins_runs_of_rungs():
    assert stopped_text(2, []) == "stopped at rung 2, -x"
    assert stopped_text(2, [3]) == "rung 3 not climbed: stopped at rung 2, -x"
    assert stopped_text(2, [3, 4, 5, 6, 7, 8]) == "rungs 3-8 not climbed: stopped at rung 2, -x"
    assert stopped_text(1, [2, 3, 5, 7, 8]) == "rungs 2-3, 5, 7-8 not climbed: stopped at rung 1, -x"


@settings(max_examples=50, deadline=None)
@given(st.sets(st.integers(1, 40), min_size=1))
def test_stopped_text_names_each_rung_once_in_its_span(rungs):
    """Every rung listed lies in exactly one span, and no rung outside the list does."""
    rs = sorted(rungs)
    text = stopped_text(0, rs)
    spans = text.split(" not climbed")[0].split(" ", 1)[1].split(", ")
    covered = []
    for s in spans:
        a, _, b = s.partition("-")
        covered += list(range(int(a), int(b or a) + 1))
    assert covered == rs
