"""kladder.core.zoo_rows: a case's row judged from two real ClimbReports, and the tally."""
from kladder.core.outcome import Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.core.zoo_rows import CaseRow, Tally, Verdict, judge_case, reference_rung, tally

CASE = {"rung": 2, "needs": ""}


def _report(*outcomes, climbed=True):
    rungs = {}
    for o in outcomes:
        rungs.setdefault(o.point.rung, []).append(o)
    return ClimbReport("s", "s.py", "cpu", rungs=[RungReport(r, "t", os_, climbed=climbed) for r, os_ in rungs.items()])


def _o(status, rung=1, note=None, n=4):
    return Outcome(Point("s", rung, (("N", n),)), Status(status), note=note)


def _not_independent():
    return Note.of(NoteKind.REFERENCE_NOT_INDEPENDENT, reference="ref", jit_kernels=["_k (lib.py:3)"])


def test_reference_rung_is_the_lowest_of_the_broken_points_that_say_it():
    rep = _report(_o("broken", 4, _not_independent()), _o("broken", 2, _not_independent(), n=5),
                  _o("broken", 1), _o("passed", 1, n=6),
                  _o("broken", 1, Note.of(NoteKind.REFERENCE_RAISED, error="E", text="t"), n=7))
    assert reference_rung(rep) == 2
    assert reference_rung(_report(_o("passed"))) is None
    assert reference_rung(_report()) is None


def test_a_failure_anywhere_is_caught_and_its_twin_clean_only_at_exit_zero():
    bug = _report(_o("passed", 1), _o("failed", 3))
    row = judge_case("c", CASE, bug, _report(_o("passed")), "cpu", 2.5)
    assert (row.verdict, row.twin_clean, row.ok, row.rung, row.seconds) == (Verdict.CAUGHT, True, True, 2, 2.5)
    assert row.reference_rung is None and row.bug_climbed is True
    for twin in (_report(_o("broken")), _report(_o("skipped")), _report()):      # exit 1, 5, 5: not clean on its device
        assert judge_case("c", CASE, bug, twin, "cpu", 1.0).twin_clean is False


def test_a_gpu_case_off_cuda_needs_a_gpu_and_its_twin_may_run_nothing():
    case = {"rung": 5, "needs": "cuda, 2 GPUs"}
    row = judge_case("c", case, _report(_o("skipped")), _report(_o("skipped")), "cpu", 1.0, bug_climbed=False)
    assert (row.verdict, row.twin_clean, row.ok, row.bug_climbed) == (Verdict.NEEDS_GPU, True, True, False)
    noisy = judge_case("c", case, _report(_o("skipped")), _report(_o("passed"), _o("oom", n=5)), "cpu", 1.0)
    assert noisy.twin_clean is False and noisy.ok is False            # ran something and it was not clean
    on_gpu = judge_case("c", case, _report(_o("passed")), _report(_o("skipped")), "cuda", 1.0)
    assert on_gpu.verdict is Verdict.MISSED and on_gpu.twin_clean is False


def test_a_failure_of_a_rung_not_climbed_is_no_catch():
    bug = _report(_o("failed", 3), climbed=False)
    assert judge_case("c", CASE, bug, _report(_o("passed")), "cpu", 1.0).verdict is Verdict.MISSED


def test_tally():
    caught = judge_case("a", CASE, _report(_o("failed")), _report(_o("passed")), "cpu", 1.0)
    gpu = judge_case("b", {"rung": 4, "needs": "cuda"}, _report(_o("skipped")), _report(_o("skipped")), "cpu", 1.0)
    assert tally([caught, gpu]) == Tally(cases=2, caught=1, need_gpu=1, twins_clean=2, ok=True)
    missed = judge_case("c", CASE, _report(_o("passed")), _report(_o("passed")), "cpu", 1.0)
    assert tally([caught, gpu, missed]) == Tally(3, 1, 1, 3, False)
    assert tally([]) == Tally(0, 0, 0, 0, True)


def test_a_row_is_ok_only_with_a_clean_twin_and_no_miss():
    base = dict(name="n", rung=1, bug=None, twin=None, seconds=0.0)
    assert CaseRow(verdict=Verdict.CAUGHT, twin_clean=True, **base).ok
    assert CaseRow(verdict=Verdict.NEEDS_GPU, twin_clean=True, **base).ok
    assert not CaseRow(verdict=Verdict.CAUGHT, twin_clean=False, **base).ok
    assert not CaseRow(verdict=Verdict.MISSED, twin_clean=True, **base).ok
