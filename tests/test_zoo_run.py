"""`kladder zoo climb` over every case: typed rows with a verdict enum, the table worded from
them, and climbs side by side giving the table of climbs one at a time."""
import pathlib
import os
import types

import pytest

from kladder.tools import cases, zoo_run
from kladder.tools.cli import build_parser
from kladder.report.zoo import row_text, summary_text
from kladder.core.zoo_rows import CaseRow, Verdict, judge_case, tally

TINY = os.path.join(os.path.dirname(__file__), "specs", "zoo_tiny.py")
CASE = {"rung": 1, "gap": "shapes", "mirrors": "a test fixture", "needs": ""}


def report(lowest=None, failures=0, exit_code=0, nothing_ran=False, outcomes=()):
    return types.SimpleNamespace(lowest_failing_rung=lowest, failures=[object()] * failures, exit_code=exit_code,
                                 nothing_ran=nothing_ran, outcomes=list(outcomes))


def test_a_reference_found_not_independent_is_the_catch_of_a_case_whose_bug_is_its_reference():
    # shared_kernel_reference (issue 38): the climb flags the reference itself, a BROKEN point, no failure
    from kladder.core.outcome import Note, NoteKind, Outcome, Status
    from kladder.core.point import Point
    broken = Outcome(Point("s", 3, (("N", 4),)), Status.BROKEN, note=Note.of(
        NoteKind.REFERENCE_NOT_INDEPENDENT, reference="ref_via_library", jit_kernels=["_k (lib.py:3)"]))
    row = judge_case("c", {**CASE, "rung": 3}, report(exit_code=1, outcomes=[broken]), report(), "cpu", 1.0)
    assert row.verdict is Verdict.CAUGHT and row.reference_rung == 3 and row.ok
    assert "the reference not independent at rung 3 (broken: the bug is the reference's)" in row_text(row)
    other = Outcome(Point("s", 3, (("N", 4),)), Status.BROKEN, note=Note.of(NoteKind.REFERENCE_RAISED, error="E", text="t"))
    assert judge_case("c", CASE, report(exit_code=1, outcomes=[other]), report(), "cpu", 1.0).verdict is Verdict.MISSED


@pytest.mark.parametrize("bug,twin,needs,device,verdict,clean", [
    (report(1, 2, 1), report(), "", "cpu", Verdict.CAUGHT, True),
    (report(), report(), "", "cpu", Verdict.MISSED, True),
    (report(), report(exit_code=5, nothing_ran=True), "cuda", "cpu", Verdict.NEEDS_GPU, True),
    (report(), report(exit_code=5, nothing_ran=True), "cuda", "cuda", Verdict.MISSED, False),
    (report(4, 1, 1), report(4, 3, 1), "", "cpu", Verdict.CAUGHT, False),
])
def test_a_case_row_is_judged_from_its_two_reports(bug, twin, needs, device, verdict, clean):
    row = judge_case("c", {**CASE, "needs": needs}, bug, twin, device, 1.0)
    assert row.verdict is verdict and row.twin_clean is clean
    assert row.ok is (clean and verdict is not Verdict.MISSED)


def test_the_table_is_worded_from_the_rows():
    rows = [judge_case("a", CASE, report(1, 2, 1), report(), "cpu", 2.0),
            judge_case("b", {**CASE, "needs": "cuda"}, report(), report(exit_code=5, nothing_ran=True), "cpu", 1.5),
            judge_case("c", CASE, report(), report(1, 1, 1), "cpu", 3.25)]
    assert [row_text(r) for r in rows] == [
        "a                        rung 1  buggy: caught   (2 failed points, lowest failing rung 1); twin clean  [2.0 s]",
        "b                        rung 1  buggy: needs a GPU (skipped, or a race the CPU cannot run) (no failure); "
        "twin clean  [1.5 s]",
        "c                        rung 1  buggy: MISSED   (no failure); twin FALSE ALARM (1 failed)  [3.2 s]"]
    t = tally(rows)
    assert (t.cases, t.caught, t.need_gpu, t.twins_clean, t.ok) == (3, 1, 1, 2, False)
    assert summary_text(t, "cpu") == "\nzoo on cpu: 1/3 buggy kernels caught (1 need a GPU); 2/3 fixed twins clean\n"
    assert summary_text(tally(rows[:1]), "cpu") == "\nzoo on cpu: 1/1 buggy kernels caught; 1/1 fixed twins clean\n"


@pytest.fixture
def tiny_zoo(monkeypatch):
    """Two cases of three points each: `caught` (wrong at N = 3, its twin right) and `missed`
    (the buggy kernel is the right one: nothing can catch it)."""
    mods = {name: types.SimpleNamespace(CASE=CASE) for name in ("caught", "missed")}
    refs = {("caught", False): "spec", ("caught", True): "right", ("missed", False): "right", ("missed", True): "right"}
    monkeypatch.setattr(cases, "case_modules", lambda: mods)
    monkeypatch.setattr(cases, "case_ref", lambda name, fixed=False: f"{TINY}::{refs[name, fixed]}")


def climb_all(capsys, at_once):
    args = build_parser().parse_args(["zoo", "climb", "--device", "cpu", "-q", "--cases-at-once", str(at_once)])
    code = zoo_run.climb_all(args)
    return code, capsys.readouterr().out


def table(out):
    """The table's lines without their timings."""
    return [line.rsplit("  [", 1)[0] for line in out.splitlines() if " rung 1  buggy:" in line]


def test_climbs_side_by_side_give_the_table_of_climbs_one_at_a_time(tiny_zoo, capsys):
    side, out_side = climb_all(capsys, 2)
    alone, out_alone = climb_all(capsys, 1)
    assert side == alone == 1                  # `missed` is missed
    assert table(out_side) == table(out_alone) == [
        "caught                   rung 1  buggy: caught   (1 failed point, lowest failing rung 1); twin clean",
        "missed                   rung 1  buggy: MISSED   (no failure); twin clean"]
    for out in (out_side, out_alone):
        assert "zoo on cpu: 1/2 buggy kernels caught; 2/2 fixed twins clean" in out
        assert out.index("caught (rung 1") < out.index("missed (rung 1")    # the cases' order
        assert "env: python" in out


def test_the_rows_are_typed():
    assert {f for f in CaseRow.__dataclass_fields__} >= {"verdict", "twin_clean", "bug", "twin"}
    assert not any(isinstance(v.value, str) and " " in v.value for v in Verdict)   # members, not sentences


def test_a_cases_text_names_the_smallest_failing_point_of_its_lowest_failing_rung(monkeypatch):
    from kladder.core.results import ClimbReport
    from kladder.report.terminal import render_case_text
    point = {"spec": "s", "rung": 2, "dims": [["M", 1], ["N", 257]], "dtypes": []}
    bug, twin = ClimbReport("s", "s.py", "cpu"), ClimbReport("s", "s.py", "cpu")
    bug.shrunk = [{"rung": 2, "failed_id": "r2-M=8-N=513", "check": "values", "runs": 12, "complete": True,
                   "passes_at": {"N": {"size": 256, "status": "passed"}}, "smallest": point, "smallest_id": "r2-M=1-N=257",
                   "cannot_shrink": None, "repro": "kladder repro s.py '{}'"},
                  {"rung": 4, "failed_id": "r4-x", "check": "not_bitwise", "cannot_shrink": "its failure is a mode's"}]
    monkeypatch.setattr(ClimbReport, "lowest_failing_rung", property(lambda self: 2))   # no rungs needed here
    text = render_case_text("case", bug, twin)
    assert "smallest failing point:" in text
    assert "fails down to M = 1, N = 257, the same check (values), after 12 runs; one below: N = 256: passed" in text
    assert "kladder repro s.py" in text and "a mode's" not in text                # only the lowest failing rung's


def test_every_cases_climb_is_recorded_in_the_history_and_the_json(tiny_zoo, capsys, tmp_path):
    import json

    import jsonschema

    from kladder.history.store import History
    path, doc_path = str(tmp_path / "h.sqlite"), str(tmp_path / "zoo.json")
    args = build_parser().parse_args(["zoo", "climb", "--device", "cpu", "-q", "--cases-at-once", "2",
                                      "--history", path, "--json", doc_path])
    assert zoo_run.climb_all(args) == 1
    capsys.readouterr()
    h = History(path)
    try:
        climbs = h.climbs()
        assert len(climbs) == 4 and all(c["kind"] == "climb" and c["ended"] for c in climbs)   # two cases, two kernels
        assert sorted(c["verdict"] for c in climbs) == ["failed", "passed", "passed", "passed"]
        failed = next(c for c in climbs if c["verdict"] == "failed")
        assert failed["ref"].endswith("zoo_tiny.py::spec") and len(h.points(failed["id"])) == 3
        assert any(p["status"] == "failed" for p in h.points(failed["id"]))
    finally:
        h.close()
    doc = json.loads(pathlib.Path(doc_path).read_text())
    schema = json.loads(pathlib.Path(os.path.dirname(__file__), "..", "docs", "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert [(c["case"], c["verdict"], c["twin_clean"]) for c in doc["cases"]] == [("caught", "caught", True),
                                                                                  ("missed", "missed", True)]
    assert doc["cases"][0]["buggy"]["exit_code"] == 1 and doc["cases"][0]["fixed"]["exit_code"] == 0
    from kladder.history.record import recorded           # what each case's climb is recorded with
    off = build_parser().parse_args(["zoo", "climb", "--no-history", "--history", str(tmp_path / "none.sqlite")])
    opts = types.SimpleNamespace(on_outcome=None)
    _, recorder = recorded(off, "s", "s.py", "cpu", opts)
    assert recorder.h is None and opts.on_outcome == recorder.point and not os.path.exists(tmp_path / "none.sqlite")


@pytest.fixture
def gpu_zoo(monkeypatch):
    """`caught` as above, and `on_gpu`: a case that needs CUDA whose buggy kernel is the wrong one."""
    mods = {"caught": types.SimpleNamespace(CASE=CASE),
            "on_gpu": types.SimpleNamespace(CASE={**CASE, "needs": "cuda, 16 GiB"})}
    refs = {("caught", False): "spec", ("caught", True): "right", ("on_gpu", False): "spec", ("on_gpu", True): "right"}
    monkeypatch.setattr(cases, "case_modules", lambda: mods)
    monkeypatch.setattr(cases, "case_ref", lambda name, fixed=False: f"{TINY}::{refs[name, fixed]}")


def test_off_cuda_a_gpu_cases_buggy_kernel_is_not_climbed_unless_rungs_are_named(gpu_zoo, capsys, tmp_path):
    from conftest import report_json
    doc_path = str(tmp_path / "zoo.json")
    args = build_parser().parse_args(["zoo", "climb", "--device", "cpu", "-q", "--json", doc_path])
    assert zoo_run.climb_all(args) == 0
    out = capsys.readouterr().out
    assert "on_gpu                   rung 1  buggy: needs a GPU (skipped, or a race the CPU cannot run) " \
           "(not climbed on cpu); twin clean" in out
    assert "buggy kernel  not climbed on cpu" in out and "zoo on cpu: 1/2 buggy kernels caught (1 need a GPU)" in out
    on_gpu = report_json(doc_path)["cases"][1]                  # a whole report, to the schema (its fingerprint too)
    assert on_gpu["buggy"]["fingerprint"]["torch"] and on_gpu["buggy"]["fingerprint"]["python"]
    assert [r["climbed"] for r in on_gpu["buggy"]["rungs"]] == [False] * 8
    assert "the bug needs cuda, 16 GiB" in on_gpu["buggy"]["rungs"][0]["note"]
    assert on_gpu["fixed"]["exit_code"] == 0 and on_gpu["verdict"] == "needs_gpu"
    # --rungs: every kernel climbed as asked (the CPU catches this one: it is wrong at N = 3 anywhere)
    args = build_parser().parse_args(["zoo", "climb", "--device", "cpu", "-q", "--rungs", "1"])
    assert zoo_run.climb_all(args) == 0
    assert "on_gpu                   rung 1  buggy: caught   (1 failed point" in capsys.readouterr().out


def test_every_climb_forks_from_one_server_of_the_zoos(tiny_zoo, capsys, monkeypatch):
    from kladder.run import forkserver, isolation
    monkeypatch.delenv("KLADDER_FORKSERVER", raising=False)      # not the suite's server (tests/conftest.py)
    servers, given, forked = [], [], []

    class Counted(forkserver.Server):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            servers.append(self)

    real_pool, real_worker = isolation.Pool.__init__, isolation.Worker.__init__

    def pool(self, *a, server=None, **kw):
        given.append(server)
        real_pool(self, *a, server=server, **kw)

    def worker(self, *a, **kw):
        real_worker(self, *a, **kw)
        forked.append(isinstance(self.proc, forkserver.Forked))

    monkeypatch.setattr(forkserver, "Server", Counted)
    monkeypatch.setattr(isolation.Pool, "__init__", pool)
    monkeypatch.setattr(isolation.Worker, "__init__", worker)
    code, out = climb_all(capsys, 2)
    assert code == 1 and "2/2 fixed twins clean" in out
    assert len(servers) == 1 and len(given) == 4 and all(s is servers[0] for s in given)
    assert servers[0].proc.poll() is not None                     # closed with the zoo, by the zoo
    assert forked and forked[-1]                                  # a worker started once it served was forked


def test_several_cases_by_name_are_a_table_and_bad_names_are_usage_errors(tiny_zoo, capsys):
    from kladder.tools.cli import main
    assert main(["zoo", "climb", "missed", "caught", "--device", "cpu", "-q"]) == 1
    out = capsys.readouterr().out
    assert table(out) == ["caught                   rung 1  buggy: caught   (1 failed point, lowest failing rung 1); twin clean",
                          "missed                   rung 1  buggy: MISSED   (no failure); twin clean"]   # the zoo's order
    assert main(["zoo", "climb", "caught", "nope", "--device", "cpu"]) == 2
    assert "no zoo case 'nope'" in capsys.readouterr().err
    assert main(["zoo", "climb", "caught", "missed", "--fixed", "--device", "cpu"]) == 2
    assert "--fixed climbs one case's twin" in capsys.readouterr().err
