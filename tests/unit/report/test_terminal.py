"""report/terminal.py: the ladder as text, from a ClimbReport built here: the header, the ladder's
rows, failures grouped with the points they stand for, what could not be judged, skips,
warnings, what ran and what passing points proved, the summary; a point's outcome for
`kladder repro`; a zoo case. A user's strings are never markup and never escape codes."""
from __future__ import annotations

from kladder.core import facts as F
from kladder.core.outcome import (
    Check,
    Finding,
    Largest,
    Note,
    NoteKind,
    Outcome,
    Pattern,
    Replay,
    RowsChecked,
    Span,
    Status,
    Wait,
    Waited,
)
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.report.terminal import OUTPUT_LINES, SHOWN_IDS, render_case_text, render_outcome, render_text

F32 = dict(dtype="float32", rtol=1.3e-06, atol=1e-05)


def _point(rung=1, m=4, n=7, why="", mode="eager") -> Point:
    return Point(spec="s", rung=rung, dims=(("M", m), ("N", n)), why=why, mode=mode)


def _tail_failure(m=4, n=7, **kw) -> Outcome:
    rem = n % 8
    f = Finding(Check.VALUES, output="y", mismatched=m * rem, total=m * n, max_abs_err=0.5,
                pattern=Pattern(kind="block", cols=Span(n - rem, n - 1, n, ("N", 8, rem)), rows=("every",)),
                largest=Largest(index=(0, n - 1), kernel=1.5, reference=1.0, allowed=1.2e-05),
                facts=F.ValuesFacts(shape=[m, n], mode="eager", **F32))
    return Outcome(_point(m=m, n=n, why="the tail of a tile"), Status.FAILED, [f], repro=f"kladder repro s 'M={m}'", **kw)


def _report(outcomes_by_rung: dict[int, list[Outcome]], **kw) -> ClimbReport:
    rungs = [RungReport(r, f"rung{r}", os, seconds=1.0) for r, os in outcomes_by_rung.items()]
    return ClimbReport(**{"spec": "s", "ref": "specs/s.py", "device": "cpu", "rungs": rungs, "seconds": 3.21,
                          "kladder_version": "0.9", **kw})


def _text(report, **kw) -> str:
    return render_text(report, width=240, **kw)


# ---------------------------------------------------------------------------- header and ladder
def test_the_header_names_the_interpreter_on_the_cpu_and_the_device_elsewhere():
    assert _text(_report({})).split("\n")[0] == "kladder climb specs/s.py  on cpu (Triton interpreter)  (kladder 0.9)"
    gpu = _report({}, device="cuda", device_name="NVIDIA H100")
    assert _text(gpu).split("\n")[0] == "kladder climb specs/s.py  on NVIDIA H100  (kladder 0.9)"


def test_the_header_shows_the_environment_and_its_warnings():
    fp = {"python": "3.11", "torch": "2.13", "kladder": "0.9", "device": {"kind": "cpu", "name": "x"},
          "warnings": [{"var": "ARCH", "value": "8.0", "name": "H100", "device": "sm_90"}]}
    lines = _text(_report({}, fingerprint=fp)).split("\n")
    assert lines[1] == "  env: python 3.11, torch 2.13, no triton, cpu (x), kladder 0.9; no compile-steering env"
    assert lines[2].startswith("  warning: ARCH=8.0 names a build target that the live device (H100, sm_90) is not")


def test_the_ladder_rows_count_each_status_and_say_why_a_rung_was_not_climbed():
    note = Note.of(NoteKind.INPUTS_OOM, text="x")
    outcomes = [Outcome(_point(), s, note=None if s in (Status.PASSED, Status.FLAKY) else note)
                for s in (Status.PASSED, Status.PASSED, Status.FLAKY, Status.SKIPPED, Status.OOM, Status.NOT_JUDGED)]
    report = _report({1: outcomes})
    report.rungs.append(RungReport(2, "values", climbed=False, stopped=True))
    report.rungs.append(RungReport(3, "contracts", climbed=False, note="not asked (--rungs)"))
    report.stopped_at = 1
    rows = [line.split() for line in _text(report).split("\n")[1:5]]
    assert rows[0] == ["rung", "gap", "points", "passed", "failed", "skipped", "other", "time", "verdict"]
    assert rows[1] == ["1", "rung1", "6", "2", "1", "1", "2", "1.0", "s", "FAILED"]
    assert rows[2] == ["2", "values", "stopped", "at", "rung", "1", "(-x)"]
    assert rows[3] == ["3", "contracts", "not", "asked", "(--rungs)"]


def test_waits_are_listed_per_rung():
    report = _report({1: []})
    report.rungs[0].waits = [Waited(Wait.WORKER, 0.5)]
    assert "\nWaited (a lane idle before its point could run):\n  rung 1: 0.5 s for a worker to start\n" in _text(report)


# ---------------------------------------------------------------------------- failures
def test_one_failure_with_its_finding_lines():
    o = _tail_failure(rows=RowsChecked(checked=2, rows=4, dim="M", sampled=0), output="line 1\nline 2\n")
    text = _text(_report({1: [o]}))
    block = text.split("\n1 failed point\n")[1].split("\n\n")[0]
    assert block.split("\n") == [
        "",
        "FAILED r1-M=4-N=7  rung 1, values, output `y`",
        "  why:      the tail of a tile",
        "  pattern:  the last 7 columns (N % 8 = 7) of every row",
        "  largest:  kernel 1.5 vs reference 1 at (0, 6) (up to 1.2e-05 allowed)",
        "  wrong:    28 / 28 elements (100%) of `y` (float32, 4 x 7, eager)",
        "  budget:   allowed 1.2e-05 = float32 default",
        "  rows:     2 of 4 rows of M: the first and last tiles, the tiles at each 2^31 / 2^32 byte boundary, and 0 "
        "sampled",
        "  output:", "    | line 1", "    | line 2",
        "  repro:    kladder repro s 'M=4'"]


def test_failures_alike_are_one_group_with_its_points_and_general_pattern():
    group = [_tail_failure(m=m, n=n) for m, n in ((4, 7), (64, 15), (1, 4095), (2, 23), (3, 31), (5, 39), (6, 47),
                                                  (7, 55))]
    text = _text(_report({1: group}))
    assert "\n8 failed points\n" in text
    lines = text.split("FAILED r1-M=4-N=7")[1].split("\n")
    assert lines[0] == "  rung 1, values, output `y`  and 7 more points like it"
    assert lines[1] == "  points:   8 points: M = 1..64, N = 7..4095 (N % 8 != 0)"
    ids = ", ".join(o.point.id for o in group[1:1 + SHOWN_IDS])
    assert lines[2] == f"  also:     {ids}, ... (1 more; every point with its repro in --json)"
    assert lines[4] == "  pattern:  the last N % 8 columns of every row"
    assert text.count("\nFAILED ") == 1


def test_a_flaky_failure_and_a_failure_that_passes_alone_say_so():
    flaky = _tail_failure(replay=Replay.FLAKY, replay_status=Status.PASSED)
    flaky.status = Status.FLAKY
    alone = Outcome(_point(rung=4, mode="aba"), Status.FAILED, [Finding(Check.RAISED, call="A after B",
                                                                        facts=F.RaisedFacts(error="E", text="t"))],
                    replay=Replay.ALONE_PASSES)
    text = _text(_report({1: [flaky], 4: [alone]}))
    assert "FLAKY r1-M=4-N=7" in text and "  flaky:    failed 1 of 2 runs (the replay passed)" in text
    assert "  call:     A after B (aba mode)" in text
    assert "  raised:   the kernel raised E (A after B): t" in text
    assert "  state:    passes when run alone in a fresh process" in text


def test_a_long_output_shows_its_last_lines():
    o = _tail_failure(output="\n".join(f"l{i}" for i in range(30)))
    text = _text(_report({1: [o]}))
    assert f"  output:   (last {OUTPUT_LINES} of 30 lines)" in text
    assert "    | l29" in text and "    | l17" not in text and "    | l18" in text


def test_verbose_adds_the_budgets_derivation():
    o = _tail_failure()
    o.findings[0].facts = F.ValuesFacts(shape=[4, 7], mode="eager", budget="default", budget_allowed=1.2e-05,
                                        budget_default=1.2e-05, **F32)
    assert "            allowed: the float32 default (rtol" in _text(_report({1: [o]}), verbose=True)
    assert "allowed: the float32 default (rtol" not in _text(_report({1: [o]}))


# ---------------------------------------------------------------------------- could not judge, skips, warnings
def test_points_not_judged_are_grouped_by_their_reason():
    note = Note.of(NoteKind.REFERENCE_RAISED, error="E", text="bad")
    broken = [Outcome(_point(m=m), Status.BROKEN, note=note, repro="r") for m in range(1, 7)]
    other = Outcome(_point(m=9), Status.NOT_JUDGED, note=Note.of(NoteKind.INPUTS_OOM, text="x"))
    text = _text(_report({1: [*broken, other]}))
    assert ("\nPoints that could not be judged\n  BROKEN  r1-M=1-N=7: the reference raised E: bad (a spec problem, "
            "not a kernel failure)\n          and 5 more points with the same reason: r1-M=2-N=7, r1-M=3-N=7, "
            "r1-M=4-N=7 ...\n          repro: r\n  NOT JUDGED r1-M=9-N=7: the inputs or the reference ran out of "
            "memory: x\n") in text


def test_skips_are_grouped_by_note_with_the_size_only_for_one():
    big = [Outcome(_point(m=m, why=f"big {m}"), Status.SKIPPED,
                   note=Note.of(NoteKind.GPU_POINT, need_bytes=m << 30, budget="1 GiB")) for m in range(1, 9)]
    one = Outcome(_point(rung=4, mode="graph"), Status.SKIPPED, note=Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph"))
    lone_big = Outcome(_point(m=99), Status.SKIPPED, note=Note.of(NoteKind.GPU_POINT, need_bytes=2 << 30, budget="2 GiB"))
    text = _text(_report({1: [*big, lone_big], 4: [one]}))
    assert "\nSkipped (10), each with its reason:\n  8 x a GPU point: over the CPU budget (1 GiB)," in text
    assert "      r1-M=6-N=7: big 6\n      ... and 2 more (see --json)\n" in text and "r1-M=7-N=7: big 7" not in text
    assert "  1 x a GPU point (2.00 GiB of tensors): over the CPU budget (2 GiB)" in text
    assert "  1 x the graph mode needs CUDA; on the CPU it is skipped, never passed" in text


def test_a_climb_that_skipped_everything_says_nothing_ran():
    skip = Outcome(_point(), Status.SKIPPED, note=Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph"))
    assert _text(_report({1: [skip]})).rstrip("\n").endswith(
        "0 failed, 0 passed, 1 skipped of 1 point in 3.2 s\nnothing ran: the one point was skipped (each with its "
        "reason above), so nothing was tested; the climb exits 5, not 0")


def _bias(up, down) -> Finding:
    return Finding(Check.BIAS, output="y", facts=F.BiasFacts(lean="offset", up=up, down=down, p=1e-3, mean_ulps=0.5,
                                                             rel=1e-4, peer=False, dtype="bfloat16"))


def test_warnings_alike_are_shown_once_with_the_points_that_showed_them():
    warned = [Outcome(_point(m=m), Status.PASSED, warnings=[_bias(9 + m, 1)]) for m in range(1, 6)]
    text = _text(_report({1: warned}))
    assert "\nWarnings (5 points): not failures; each says what a model or a deployment will feel\n" in text
    assert "  r1-M=1-N=7: `y` leans above the reference: 10 of 11 differing rows" in text
    assert "      and 4 more points like it: r1-M=2-N=7, r1-M=3-N=7, r1-M=4-N=7 ...\n" in text
    assert text.count("leans above") == 1


def test_what_ran_and_what_passing_points_proved():
    ran = [Outcome(_point(rung=7, m=m), Status.PASSED, note=Note.of(NoteKind.RAN, functions=["f"], n_functions=1))
           for m in range(1, 7)]
    clean = F.SanitizerCleanFacts(tool="memcheck", calls=3)
    proved = [Outcome(_point(rung=5, m=m), Status.PASSED, note=Note(NoteKind.SANITIZER_CLEAN, clean),
                      reused=F.ReusedFacts(run_id="r", climb=3, kept="t") if m == 1 else None) for m in range(1, 23)]
    text = _text(_report({5: proved, 7: ran}))
    assert ("\nWhat ran (rung 7, 6 dispatch points):\n  r7-M=1-N=7, r7-M=2-N=7, r7-M=3-N=7, r7-M=4-N=7 and 2 more: ran "
            "Python f\n") in text
    assert "\nWhat the passing rung-5 points proved (22):\n  r5-M=1-N=7: compute-sanitizer memcheck: no errors in 3 " \
           "calls." in text
    assert "(reused from climb #3 (t): not run in this climb, its key unchanged)" in text
    assert "  ... and 2 more (see --json)" in text


# ---------------------------------------------------------------------------- summary
def test_the_summary_line_and_its_tails():
    report = _report({1: [_tail_failure(), Outcome(_point(m=1), Status.PASSED), Outcome(_point(m=2), Status.OOM)]},
                     log_path="/tmp/l.jsonl", stopped_at=1,
                     reuse=F.ReuseFacts(points=3, reused=0, ran=3, climbs=[], run_ids=[], fresh=True, accumulate=False))
    report.rungs.append(RungReport(2, "values", climbed=False, stopped=True))
    tail = _text(report).rstrip("\n").split("\n")[-4:]
    assert tail == ["1 failed, 1 passed, 0 skipped, 1 oom of 3 points in 3.2 s; lowest failing rung: 1",
                    "no point reused (--fresh): 3 run, their outcomes kept for the next climb",
                    "rung 2 not climbed: stopped at rung 1, -x",
                    "outcomes logged to /tmp/l.jsonl"]


def test_an_interrupted_climb_says_what_the_report_holds():
    report = _report({1: [Outcome(_point(), Status.PASSED)]}, interrupted=True)
    assert _text(report).rstrip("\n").endswith("0 failed, 1 passed, 0 skipped of 1 point in 3.2 s; interrupted: the "
                                               "report holds the points run so far")


# ---------------------------------------------------------------------------- literal, never markup
def test_a_users_strings_are_neither_markup_nor_escape_codes():
    hostile = "[bold red]x[/] \x1b[31mred\x1b[0m \x1b]8;;http://e\x07link"
    o = _tail_failure(output=hostile)
    o.point = Point(spec="s", rung=1, dims=(("M", 4), ("N", 7)), why=hostile)
    text = _text(_report({1: [o]}, ref=f"specs/{hostile}.py"), color=True)
    shown = "[bold red]x[/] \\x1b[31mred\\x1b[0m \\x1b]8;;http://e\\x07link"
    assert f"  why:      {shown}" in _plain(text) and f"    | {shown}" in _plain(text)
    assert f"specs/{shown}.py" in _plain(text)
    assert "\x07" not in text and "\x1b]8" not in text


def _plain(text: str) -> str:
    """The text without rich's own SGR codes (colour on), which kladder's styles put there."""
    import re
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_no_colour_writes_no_escape_code():
    assert "\x1b" not in _text(_report({1: [_tail_failure()]}))
    assert "\x1b[" in _text(_report({1: [_tail_failure()]}), color=True)


# ---------------------------------------------------------------------------- one outcome, a zoo case
def test_render_outcome_of_a_failure_and_of_a_skip_with_the_kernels_trace():
    fp = {"python": "3.11", "torch": "2.13", "kladder": "0.9"}
    text = render_outcome(_tail_failure(), fingerprint=fp)
    assert text.startswith("env: python 3.11, torch 2.13, no triton, device not queried, kladder 0.9; no "
                           "compile-steering env\nFAILED r1-M=4-N=7  rung 1, values")
    trace = F.TraceFacts(frames=[F.FrameFacts(file="k.py", line=3, function="kern", code="x = y[i]")])
    skip = Outcome(_point(), Status.SKIPPED, seconds=0.25,
                   note=Note.of(NoteKind.LAYOUT_REFUSED, error="ValueError", text="strided", trace=trace))
    assert render_outcome(skip).split("\n") == [
        "SKIPPED r1-M=4-N=7: refused: the kernel raised ValueError on this layout: strided  (0.25 s)",
        "  trace:    k.py:3 in kern", "                x = y[i]", ""]
    assert render_outcome(Outcome(_point(), Status.PASSED, seconds=1.0)) == "PASSED r1-M=4-N=7  (1.00 s)\n"


def test_render_case_text_shows_both_ladders_the_first_failure_and_the_smallest_point():
    bug = _report({1: [_tail_failure()]})
    bug.shrunk = [F.ShrunkFacts(from_={}, check="values", method="bisect", runs=3, complete=True, passes_at={},
                                smallest={"dims": [["M", 1], ["N", 7]]}, cannot_shrink=None, cause=None,
                                smallest_id="r1-M=1-N=7", rung=1, failed_id="r1-M=4-N=7", repro="R")]
    twin = _report({1: [Outcome(_point(), Status.PASSED)]})
    gpu_only = _report({}, device="cpu")
    gpu_only.rungs = [RungReport(6, "multi-GPU", climbed=False)]
    text = render_case_text("tail_bug", bug, twin)
    lines = text.split("\n")
    assert lines[1] == "tail_bug"
    assert lines[2] == "  buggy kernel  rung 1 rung1: 1 points, 0 passed, 1 failed, 0 skipped  FAILED  [1.0 s]"
    assert lines[3] == "  fixed twin    rung 1 rung1: 1 points, 1 passed, 0 failed, 0 skipped  passed  [1.0 s]"
    assert lines[4] == "  first failure:" and lines[5] == "  FAILED r1-M=4-N=7  rung 1, values, output `y`"
    assert "  smallest failing point:\n    rung 1, from r1-M=4-N=7: fails down to M = 1, N = 7" in text
    assert "  buggy kernel  not climbed on cpu" in render_case_text("gpu", gpu_only, twin)


def test_a_small_share_of_wrong_elements_keeps_two_digits():
    o = _tail_failure(m=4096)
    o.findings[0].mismatched, o.findings[0].total = 3, 4096 * 7
    assert "  wrong:    3 / 28,672 elements (0.01%) of `y`" in _text(_report({1: [o]}))
    o.findings[0].mismatched = 0
    assert "  wrong:    0 / 28,672 elements (0%) of `y`" in _text(_report({1: [o]}))


def test_the_time_budget_and_a_failing_golden_check_come_before_the_summary():
    from kladder.core.budgets import BudgetSummary
    golden = F.GoldenFacts(recorded="2026-12-01", target={}, toolchain={}, strict=True, fails=True, equal=[],
                           changed=[F.GoldenChangedFacts(id="r1-M=4-N=7", outputs=["y"])], not_kept=[],
                           nondeterministic=[])
    report = _report({1: [Outcome(_point(), Status.PASSED)]}, budget=BudgetSummary(name="release"), golden=golden)
    text = _text(report)
    assert ("\nbudget release (the longest): rung 5 made no repetition or stream calls.\n\n"
            "golden (--golden=strict: a change fails the climb): 0 points' bits equal to golden of 2026-12-01; 1 changed\n"
            "  r1-M=4-N=7: bits changed since 2026-12-01: y\n\n"
            "0 failed, 1 passed, 0 skipped of 1 point in 3.2 s; golden: bits changed at 1 point (--golden=strict fails "
            "the climb)\n") in text


def test_warnings_past_the_kinds_shown_are_counted_never_dropped_unsaid():
    from kladder.report.terminal import WARNING_KINDS_SHOWN
    n = WARNING_KINDS_SHOWN + 5                   # each its own kind: another output each
    warned = [Outcome(_point(m=m), Status.PASSED,
                      warnings=[Finding(Check.BIAS, output=f"y{m}", facts=F.BiasFacts(
                          lean="offset", up=10, down=1, p=1e-3, mean_ulps=0.5, rel=1e-4, peer=False, dtype="bfloat16"))])
              for m in range(1, n + 1)]
    text = _text(_report({1: warned}))
    assert text.count("leans above") == WARNING_KINDS_SHOWN
    assert "  and 5 more kinds of warning on 5 points: every one is in the JSON report (--json) and the log\n" in text
    assert f"r1-M={WARNING_KINDS_SHOWN}-N=7: `y{WARNING_KINDS_SHOWN}`" in text
