"""report/history_text.py: the history's lines, `kladder diff` and the golden check in words,
from the facts built here."""
from __future__ import annotations

from kladder.core.facts import (
    ClimbLoadFacts,
    DiffBitsFacts,
    DiffClimbFacts,
    DiffFacts,
    DiffPointFacts,
    GoldenChangedFacts,
    GoldenFacts,
    GoldenRecordFacts,
    SlowerRungFacts,
    TimingFacts,
)
from kladder.report.history_text import (
    bits_lines,
    diff_text,
    golden_check_text,
    golden_reason,
    golden_record_text,
    golden_summary_text,
    history_line,
    history_text,
    slower_line,
    timing_text,
    verdict_line,
)


# ---------------------------------------------------------------------------- the history
def _climb(**kw) -> dict:
    base = {"id": 12, "started": "2026-12-07T04:00", "spec": "add", "kind": "climb", "verdict": "passed",
            "counts": {"passed": 10, "failed": 2, "flaky": 1}, "kladder_version": "0.9", "git_commit": "0123456789abcdef",
            "toolchain": {"device": "cpu", "torch": "2.13", "triton": None, "cuda": ""}}
    return {**base, **kw}


def test_history_line():
    assert history_line(_climb()) == ("#12   2026-12-07T04:00  add  passed  (13 points, 3 failed)  kladder 0.9  "
                                      "git 0123456789  device cpu torch 2.13")


def test_history_line_of_an_unfinished_explore_without_git_or_toolchain():
    c = _climb(verdict=None, kind="explore", git_commit=None, toolchain=None, counts={"passed": 1})
    assert history_line(c) == ("#12   2026-12-07T04:00  add [explore]  unfinished (killed, or still running)  "
                               "(1 point)  kladder 0.9  no git")


def test_history_line_says_why_golden_failed_the_climb():
    g = {"fails": True, "recorded": "2026-12-01", "changed": [{"id": "a"}]}
    assert "  failed (--golden=strict: bits changed at 1 point since 2026-12-01)  " in \
        history_line(_climb(verdict="failed", golden=g))


def test_golden_reason():
    assert golden_reason(None) == "" and golden_reason({"fails": False, "recorded": "x"}) == ""
    assert golden_reason({"fails": True, "recorded": None}) == "(--golden=strict: no golden hashes kept)"
    assert golden_reason({"fails": True, "recorded": "d", "changed": [1, 2]}) == \
        "(--golden=strict: bits changed at 2 points since d)"
    assert golden_reason({"fails": True, "recorded": "d"}) == "(--golden=strict: bits changed at 0 points since d)"


def test_history_text():
    assert history_text([]) == "no climbs in the history yet\n"
    assert history_text([_climb(), _climb(id=13)]).count("\n") == 2


# ---------------------------------------------------------------------------- a diff
def _diff_climb(i, **kw) -> DiffClimbFacts:
    base = dict(id=i, run_id=f"r{i}", spec="add", started=f"2026-12-0{i}", ended="e", verdict="passed",
                git_commit=None, kladder_version="0.9", toolchain={})
    return DiffClimbFacts(**{**base, **kw})


def _load(**kw) -> ClimbLoadFacts:
    base = dict(points=10, seconds=5.0, others_cores=0.25, wait_share=0.1, lanes=1.0, device_processes=0.0)
    return ClimbLoadFacts(**{**base, **kw})


def _timing(why="compared", **kw) -> TimingFacts:
    base = dict(compared=why == "compared", why=why, device_a="cpu", device_b="cpu", load_a=_load(), load_b=_load(),
                differed=[])
    return TimingFacts(**{**base, **kw})


def _diff(**kw) -> DiffFacts:
    base = dict(a=_diff_climb(1), b=_diff_climb(2, verdict="failed", git_commit="abcdef0123456"),
                newly_failing=[], newly_passing=[], bits_changed=[], nondeterministic=[], only_a=[], only_b=[],
                slower_rungs=[], timing=_timing(), toolchain={}, fail_on=[], worse=False)
    return DiffFacts(**{**base, **kw})


def _slower(rung=3) -> SlowerRungFacts:
    return SlowerRungFacts(rung=rung, ratio=1.456, p=0.0123, pairs=20, before_s=10.0, after_s=14.56, spread_a=1.05,
                           spread_b=1.1, kernel_stage=True)


def test_no_change():
    assert diff_text(_diff()) == ("add: #1 (2026-12-01, passed, no git) -> #2 (2026-12-02, failed, git abcdef0123)\n"
                                  "no change: the same verdicts, the same bits, no rung slower beyond noise\n"
                                  "not worse\n")
    assert "no change: the same verdicts, the same bits\n" in diff_text(_diff(timing=_timing("device")))


def test_a_diff_with_every_section():
    fail = DiffPointFacts(id="p1", rung=1, before="passed", after="failed", failure_before=None, failure_after="values")
    heal = DiffPointFacts(id="p2", rung=2, before="failed", after="passed", failure_before="guard", failure_after=None)
    d = _diff(newly_failing=[fail], newly_passing=[heal], toolchain={"torch": ["2.12", "2.13"]},
              nondeterministic=["p3", "p4"], only_a=["p5", "p8"], only_b=["p6", "p7"], slower_rungs=[_slower()],
              fail_on=["slower"], worse=True)
    assert diff_text(d).split("\n") == [
        "add: #1 (2026-12-01, passed, no git) -> #2 (2026-12-02, failed, git abcdef0123)",
        "toolchain: torch 2.12 -> 2.13",
        "newly failing (1):", "  p1: passed -> failed (values)",
        "newly passing (1):", "  p2: failed -> passed",
        "not compared bit for bit (nondeterministic outputs): 2 points",
        slower_line(_slower()),
        "only in the first: 2 points", "only in the second: 2 points",
        "worse: 1 point newly fails; rung 3 slower (--fail-on slower)", ""]


def test_slower_line():
    assert slower_line(_slower()) == ("rung 3 slower: x1.46 per point in the kernel's seconds (median of 20 points, "
                                      "10.0 s -> 14.6 s, Wilcoxon p = 0.01), past each climb's own spread (x1.05, "
                                      "x1.10: waits for a CPU)")


def test_verdict_line():
    assert verdict_line(_diff()) == "not worse"
    assert verdict_line(_diff(slower_rungs=[_slower(3), _slower(5)])) == \
        "not worse (rung 3, rung 5 slower: a failure of the gate only with --fail-on slower)"
    two = [DiffPointFacts(id=i, rung=1, before="passed", after="failed", failure_before=None, failure_after=None)
           for i in "ab"]
    assert verdict_line(_diff(newly_failing=two, worse=True, slower_rungs=[_slower()])) == "worse: 2 points newly fail"


def test_bits_lines_short_and_verbose():
    bits = [DiffBitsFacts(id="p1", rung=1, before="passed", after="passed", failure_before=None, failure_after=None,
                          outputs=["y"]),
            DiffBitsFacts(id="p2", rung=1, before="passed", after="passed", failure_before=None, failure_after=None,
                          outputs=["y", "z"]),
            DiffBitsFacts(id="p3", rung=1, before="failed", after="passed", failure_before="values", failure_after=None,
                          outputs=["y"]),
            DiffBitsFacts(id="p4", rung=1, before="failed", after="failed", failure_before="v", failure_after="v",
                          outputs=["y"])]
    assert bits_lines(_diff(), False) == []
    assert bits_lines(_diff(bits_changed=bits), False) == [
        "output bits changed at 4 points (2 passing in both, 1 failed -> passed, 1 failed in both); --verbose lists them"]
    assert bits_lines(_diff(bits_changed=bits[:1]), False, more="") == [
        "output bits changed at 1 point (1 passing in both)"]
    assert bits_lines(_diff(bits_changed=bits[:2]), True) == [
        "output bits changed (2: 2 passing in both):", "  p1: y (passed -> passed)", "  p2: y, z (passed -> passed)"]


def test_timing_text_says_why_not_compared():
    assert timing_text(_diff()) == ""
    assert timing_text(_diff(timing=_timing("device", device_a="cpu", device_b="H100"))) == \
        "timing not compared: the device differed (#1 on cpu, #2 on H100)"
    assert timing_text(_diff(timing=_timing("not_recorded", load_a=None))) == (
        "timing not compared: what ran beside the points was not recorded for #1 (an older kladder's climb)")
    assert "for #1 and #2 (" in timing_text(_diff(timing=_timing("not_recorded", load_a=None, load_b=None)))


def test_timing_text_names_each_load_that_differed():
    t = _timing("load", load_a=_load(), load_b=_load(others_cores=1.5, wait_share=0.456, lanes=3.0, device_processes=2),
                differed=["others_cores", "wait_share", "lanes", "device_processes"])
    assert timing_text(_diff(timing=t)) == (
        "timing not compared: load differed (other processes kept 1.50 cores busy on average during #2, 0.25 during #1; "
        "#2's workers waited for a CPU 46% of the time, #1's 10%; 3.0 other lanes on average during #2 (--jobs), 1.0 "
        "during #1; 2.0 other processes on the device during #2, 0.0 during #1)")


# ---------------------------------------------------------------------------- golden
def test_golden_record_text():
    r = GoldenRecordFacts(spec="add", climb=12, target={"device": "cpu", "torch": "2.13"}, kept=40, recorded="d",
                          nondeterministic=["p1", "p2"], no_hashes=["p3", "p4"])
    assert golden_record_text(r) == ("golden hashes of add kept from climb #12: 40 points, for device cpu torch 2.13\n"
                                     "not kept, nondeterministic outputs (2): p1, p2\n"
                                     "not kept, no output made (skipped, crashed, ...): 2 points\n")


def _golden(**kw) -> GoldenFacts:
    base = dict(recorded="2026-12-01", target={}, toolchain={}, strict=False, fails=False, equal=["a", "b"], changed=[],
                not_kept=[], nondeterministic=[])
    return GoldenFacts(**{**base, **kw})


def test_golden_check_text_with_nothing_kept():
    assert golden_check_text(_golden(recorded=None)) == (
        "golden (--golden: a change is a warning): no golden hashes of this spec in the history; record them with "
        "`kladder golden record SPEC`\n")
    assert golden_check_text(_golden(recorded=None, strict=True, fails=True)).endswith(
        "(the climb fails: nothing to compare the bits with)\n")


def test_golden_check_text_with_changes_and_a_new_toolchain():
    g = _golden(strict=True, fails=True, toolchain={"triton": ["3.8", "3.9"]},
                changed=[GoldenChangedFacts(id="c", outputs=["y", "z"])], nondeterministic=["n"], not_kept=["k1", "k2"])
    assert golden_check_text(g).split("\n") == [
        "golden (--golden=strict: a change fails the climb): 2 points' bits equal to golden of 2026-12-01 (toolchain: "
        "triton 3.8 -> 3.9); 1 changed",
        "  c: bits changed since 2026-12-01 (toolchain: triton 3.8 -> 3.9): y, z",
        "  not compared, nondeterministic outputs (1): n",
        "  no golden hashes for 2 points", ""]
    assert golden_check_text(_golden()) == "golden (--golden: a change is a warning): 2 points' bits equal to golden of 2026-12-01\n"


def test_golden_summary_text_only_when_it_fails_the_climb():
    assert golden_summary_text(None) == "" and golden_summary_text(_golden()) == ""
    assert golden_summary_text(_golden(fails=True, recorded=None)) == "; golden: none kept (--golden=strict fails the climb)"
    one = _golden(fails=True, changed=[GoldenChangedFacts(id="c", outputs=["y"])])
    assert golden_summary_text(one) == "; golden: bits changed at 1 point (--golden=strict fails the climb)"


def test_one_point_is_one_point_in_every_history_line():
    from kladder.report import history_text as ht
    assert ht._counts({"counts": {"failed": 1}}) == "1 point, 1 failed"
    assert ht._counts({"counts": {"passed": 2}}) == "2 points"
