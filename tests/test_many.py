"""Many kernels at once (issue 32 item 2): `kladder climb PATH...` climbs every spec it finds
(files, folders, modules), one line each and the totals; with the outcome store a second climb
runs only what changed or failed; -x stops at the first rung with a failure and climbs no spec
after it; --lf puts last time's failures first; --json is one document the schema describes."""
import os
import sys

import pytest
from conftest import report_json, run_cli

GOOD = '''
import kladder as kl

spec = kl.Spec("twice", kernel=lambda x: x + x, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 9, tile=8)})
'''

BAD = '''
import kladder as kl


def kernel(x):
    return 2 * x if x.numel() != 7 else 3 * x      # wrong at N = 7 only


spec = kl.Spec("wrong_at_7", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 9, tile=8)})
'''

TWO = '''
import kladder as kl

a = kl.Spec("thrice", kernel=lambda x: 3 * x, reference=lambda x: x * 3, args={"x": kl.Tensor("N", dtype="float32")},
            returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 9, tile=8)})
b = kl.Spec("halve", kernel=lambda x: x / 2, reference=lambda x: x * 0.5, args={"x": kl.Tensor("N", dtype="float32")},
            returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 9, tile=8)})
'''


def _climb(folder, *args):
    env = {**os.environ, "KLADDER_STORE": "1", "KLADDER_HISTORY": str(folder / "history.sqlite")}
    return run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", *args, "--device", "cpu", "--quiet",
                           "--shrink-s", "0"], cwd=folder, env=env, capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def climbs(tmp_path_factory):
    d = tmp_path_factory.mktemp("many")
    (d / "specs").mkdir()
    (d / "specs" / "good.py").write_text(GOOD)
    (d / "specs" / "bad.py").write_text(BAD)
    (d / "specs" / "notes.py").write_text("# no spec here, and no mention of the tool either\n")
    (d / "two.py").write_text(TWO)
    first = _climb(d, "specs/good.py", "specs/bad.py", "--rungs", "1", "--json", "first.json", "--html", "pages/r.html")
    again = _climb(d, "specs", "--rungs", "1", "--json", "again.json")
    stopped = _climb(d, "specs/good.py", "specs/bad.py", "--rungs", "1-2", "--lf", "-x", "--json", "lf.json",
                     "--log", "lf.jsonl")
    two = _climb(d, "two.py", "--rungs", "1")
    return d, first, again, stopped, two


def test_several_specs_one_line_each_then_the_totals(climbs):
    d, first, *_ = climbs
    assert first.returncode == 1, first.stderr[-3000:]
    lines = first.stdout.splitlines()
    assert lines[0].startswith("PASSED") and "twice" in lines[0] and "specs/good.py::spec" in lines[0]
    assert lines[1].startswith("FAILED") and "wrong_at_7" in lines[1] and "lowest failing rung 1" in lines[1]
    assert "FAILED r1-N=7" in first.stdout                   # the failing spec's report follows
    assert "2 specs: 1 passed, 1 failed;" in first.stdout and "0 reused" in first.stdout
    doc = report_json(d / "first.json")
    assert doc["many"] and doc["exit_code"] == 1 and [c["spec"] for c in doc["climbs"]] == ["twice", "wrong_at_7"]
    assert [c["exit_code"] for c in doc["climbs"]] == [0, 1]
    pages = sorted(os.listdir(d / "pages"))                   # --html: one page a spec
    assert pages == ["r-1-twice.html", "r-2-wrong_at_7.html"]
    assert "wrong_at_7" in (d / "pages" / "r-2-wrong_at_7.html").read_text()


def test_a_second_climb_of_a_folder_runs_only_the_failed_point(climbs):
    d, first, again, *_ = climbs
    assert again.returncode == 1, again.stderr[-3000:]
    doc = report_json(d / "again.json")
    by = {c["spec"]: c for c in doc["climbs"]}
    assert set(by) == {"twice", "wrong_at_7"}                 # notes.py holds none
    good, bad = by["twice"], by["wrong_at_7"]
    assert good["reuse"]["ran"] == 0 and good["reuse"]["reused"] == len(good["rungs"][0]["points"])
    ran = [p["id"] for p in bad["rungs"][0]["points"] if p["reused"] is None]
    assert ran == ["r1-N=7"]
    first_ids = {c["spec"]: c["run_id"] for c in report_json(d / "first.json")["climbs"]}
    assert {p["reused"]["run_id"] for p in good["rungs"][0]["points"]} == {first_ids["twice"]}
    assert all(isinstance(p["reused"]["climb"], int) for p in good["rungs"][0]["points"])   # the history's #N
    n = len(good["rungs"][0]["points"]) + len(bad["rungs"][0]["points"])
    assert f"{n} points: {n - 1} reused, 1 run" in again.stdout


def test_lf_puts_last_times_failures_first_and_x_stops_at_the_first_failing_rung(climbs):
    d, *_, stopped, _ = climbs
    assert stopped.returncode == 1, stopped.stderr[-3000:]
    doc = report_json(d / "lf.json")
    assert [c["spec"] for c in doc["climbs"]] == ["wrong_at_7"]            # failed last time: first; then -x
    assert doc["not_climbed"] == [{"spec": "twice", "ref": "specs/good.py::spec",
                                   "why": "not climbed: -x stopped at an earlier spec's failure"}]
    bad = doc["climbs"][0]
    assert bad["stopped_at"] == 1 and bad["rungs"][1]["stopped"] and not bad["rungs"][1]["climbed"]
    assert bad["rungs"][0]["points"][0]["id"] == "r1-N=7"                  # its failed point first
    assert "rung 2 not climbed: stopped at rung 1, -x" in stopped.stdout
    assert "NOT CLIMBED" in stopped.stdout and "twice" in stopped.stdout
    records = report_json(d / "lf.jsonl")                                  # the log: every record valid
    assert records[-1]["record"] == "end" and records[-1]["stopped_at"] == 1


def test_a_file_holding_two_specs_climbs_both(climbs):
    *_, two = climbs
    assert two.returncode == 0, two.stderr[-3000:]
    assert "thrice" in two.stdout and "halve" in two.stdout and "2 specs: 2 passed;" in two.stdout


def test_a_path_that_holds_no_spec_is_a_usage_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.py").write_text("import kladder\n")
    p = _climb(tmp_path, "empty", str(tmp_path / "missing.py"))
    assert p.returncode == 2 and "no kl.Spec found under 'empty'" in p.stderr, p.stderr


def test_html_paths_are_one_a_spec():
    from kladder.tools.many import html_paths
    from kladder.core.results import ClimbReport
    reports = [ClimbReport("rms norm", "a.py::spec", "cpu"), ClimbReport("gemm", "b.py::spec", "cpu")]
    assert html_paths("out/r.html", reports) == ["out/r-1-rms_norm.html", "out/r-2-gemm.html"]


def test_the_exit_status_of_many_specs():
    from kladder.tools.many import Many

    class R:
        def __init__(self, code):
            self.exit_code = code
    assert Many("cpu", [R(0), R(5)]).exit_code == 0
    assert Many("cpu", [R(0), R(1), R(2)]).exit_code == 1
    assert Many("cpu", [R(0), R(2)]).exit_code == 2
    assert Many("cpu", [R(5), R(5)]).exit_code == 5
    assert Many("cpu", [R(0)], interrupted=True).exit_code == 130


def test_lf_finds_the_last_climb_by_the_specs_name_when_its_path_was_written_otherwise(tmp_path):
    from kladder.history.store import History
    h = History(str(tmp_path / "h.sqlite"))
    cid = h.begin("climb", "s", "a.py::spec", "cpu", "0", "t0", "r1", {})
    h.point(cid, {"id": "r1-N=7", "rung": 1, "status": "failed"})
    h.point(cid, {"id": "r1-N=8", "rung": 1, "status": "passed"})
    h.point(cid, {"id": "r1-N=9", "rung": 1, "status": "flaky"})
    h.end(cid, "t1", "failed", 1, {}, "", [])
    unfinished = h.begin("climb", "s", "a.py::spec", "cpu", "0", "t2", "r2", {})
    h.point(unfinished, {"id": "r1-N=1", "rung": 1, "status": "failed"})     # killed: never ended, not "last time"
    assert h.last_failures("s", "./a.py::spec") == (cid, ["r1-N=7", "r1-N=9"])
    assert h.last_failures("s", "a.py::spec") == (cid, ["r1-N=7", "r1-N=9"])
    assert h.last_failures("other", None) == (None, [])
    h.close()


def test_a_folder_of_one_spec_climbs_it_as_one_spec(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "good.py").write_text(GOOD)
    p = _climb(tmp_path, "one", "--rungs", "1", "--json", "r.json")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith("kladder climb one/good.py::spec") and " specs:" not in p.stdout
    assert report_json(tmp_path / "r.json")["spec"] == "twice"            # a report, not the many document


@pytest.mark.parametrize("device,likely,started", [("cuda", False, True), ("auto", True, True), ("auto", False, False),
                                                   ("cpu", True, False)])
def test_on_cuda_the_shared_fork_server_starts_before_the_device_is_resolved_and_closes_when_it_cannot_be(
        monkeypatch, device, likely, started):
    # the climbs of many specs start their one server before this process imports torch on CUDA,
    # as the one spec's climb does (climbing/session.early_server); here no CUDA device resolves
    import argparse

    from kladder.core.errors import UsageProblem
    from kladder.tools import many
    seen = []

    class _Server:
        def close(self):
            seen.append("closed")

    def resolved(word):
        seen.append("resolve")
        if word == "cuda":
            raise UsageProblem("--device cuda: torch sees no CUDA device here")
        return "cpu"
    monkeypatch.setattr(many, "_server", lambda dev: seen.append(("server", dev)) or _Server())
    monkeypatch.setattr("kladder.climbing.session.cuda_likely", lambda: likely)
    monkeypatch.setattr(many, "device_of", resolved)
    monkeypatch.setattr(many, "_climb_found", lambda *a: 0)
    args = argparse.Namespace(device=device, json=None, log=None, html=None, ray=None, shard=None)
    if device == "cuda":
        with pytest.raises(UsageProblem):
            many.climb_many(["a.py", "b.py"], args)
        assert seen == [("server", "cuda"), "resolve", "closed"]           # a CUDA worker's server, closed
        return
    assert many.climb_many(["a.py", "b.py"], args) == 0
    first = [("server", "cuda"), "resolve", "closed"] if started else ["resolve"]
    assert seen == first + [("server", "cpu"), "closed"]                   # then the CPU's, as before
