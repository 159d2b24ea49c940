"""history/commands.py: the history commands' choices and refusals, called directly with the args
argparse makes (no process): which climbs a diff compares, a damaged history, --store-size, a
report edited by hand."""
import argparse
import json

import pytest

from kladder.core.errors import UsageProblem
from kladder.history import commands as cmd
from kladder.history.store import History


def _parser():
    p = argparse.ArgumentParser()
    cmd.add_parsers(p.add_subparsers(dest="command"))
    return p


@pytest.fixture
def hist(tmp_path):
    path = str(tmp_path / "h.sqlite")
    h = History(path)

    def climb(spec="s", kind="climb", points=(), end=True):
        cid = h.begin(kind, spec, f"{spec}.py::{spec}", "cpu", "1", "t", None, {})
        for pid, status in points:
            h.point(cid, {"id": pid, "rung": 1, "status": status, "hashes": {"o": "a"}})
        if end:
            h.end(cid, "t2", "passed", 0, None, "cpu", [])
        return cid
    yield path, h, climb
    h.close()


def _args(path, *argv):
    return _parser().parse_args([*argv, "--history", path])


# ---------------------------------------------------------------------------- which climbs a diff compares
def test_pick_needs_two_climbs(hist):
    path, h, climb = hist
    with pytest.raises(UsageProblem, match="fewer than two climbs of any spec; climb twice first"):
        cmd._pick(h, None, None)
    climb()
    with pytest.raises(UsageProblem, match="fewer than two climbs of spec 's'"):
        cmd._pick(h, "s", None)


def test_pick_by_spec_by_number_and_by_two_numbers(hist):
    path, h, climb = hist
    a, b = climb(), climb()
    climb(spec="other")
    c = climb()
    assert [x["id"] for x in cmd._pick(h, "s", None)] == [b, c]           # a spec's name: its last two
    assert [x["id"] for x in cmd._pick(h, str(a), None)] == [a, c]         # a number: the newest of its spec and kind
    assert [x["id"] for x in cmd._pick(h, str(c), str(a))] == [c, a]       # two numbers: as given
    with pytest.raises(UsageProblem, match=f"A: climb #{c} is the newest of 's'; give B"):
        cmd._pick(h, str(c), None)
    with pytest.raises(UsageProblem, match="A: no climb '999' in the history"):
        cmd._pick(h, "999", str(a))
    with pytest.raises(UsageProblem, match="B: no climb 'nope' in the history"):
        cmd._pick(h, str(a), "nope")


def test_diff_exits_1_on_a_new_failure_and_writes_strict_json(hist, tmp_path, capsys):
    path, h, climb = hist
    climb(points=[("p", "passed"), ("q", "passed")])
    climb(points=[("p", "failed"), ("q", "passed")])
    out = tmp_path / "d.json"
    assert cmd.cmd_diff(_args(path, "diff", "--json", str(out))) == 1
    doc = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert [x["id"] for x in doc["newly_failing"]] == ["p"] and doc["worse"] is True
    assert "p" in capsys.readouterr().out
    climb(points=[("p", "failed"), ("q", "passed")])
    assert cmd.cmd_diff(_args(path, "diff", "s")) == 0                        # still failing: nothing new


def test_a_damaged_history_is_a_usage_error_naming_the_row_and_the_fix(hist):
    path, h, climb = hist
    a, b = climb(points=[("p", "passed")]), climb(points=[("p", "passed"), ("q", "passed")])
    h.db.execute("UPDATE points SET hashes = '{broken'")
    with pytest.raises(UsageProblem) as e:
        cmd.cmd_diff(_args(path, "diff", str(a), str(b)))
    text = str(e.value)
    assert text.startswith(f"--history {path!r} is damaged: climb #{a}'s point 0 ('p'): hashes is not JSON")
    assert "(and 2 more)" in text and "sqlite3 FILE .recover" in text


def test_a_climb_whose_row_is_damaged_is_named_not_missing(hist):
    path, h, climb = hist
    a = climb()
    h.db.execute("UPDATE climbs SET toolchain = '\"text\"' WHERE id = ?", (a,))
    with pytest.raises(UsageProblem, match=f"is damaged: climb #{a}: toolchain is a str"):
        cmd.cmd_diff(_args(path, "diff", str(a)))


def test_a_history_that_cannot_be_opened_is_a_usage_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageProblem, match=r"^--history: "):
        cmd.cmd_history(_args(str(tmp_path / "f" / "h.sqlite"), "history"))


def test_golden_record_without_a_finished_climb_says_so(hist):
    path, h, climb = hist
    climb(end=False)
    with pytest.raises(UsageProblem, match="SPEC: no finished climb of 's' in the history; climb it first"):
        cmd.cmd_golden(_args(path, "golden", "record", "s"))


def test_history_lists_newest_first(hist, capsys):
    path, h, climb = hist
    climb(spec="first")
    climb(spec="second")
    assert cmd.cmd_history(_args(path, "history")) == 0
    out = capsys.readouterr().out
    assert out.index("second") < out.index("first")


# ---------------------------------------------------------------------------- the store's options and --lf
def _store_args(tmp_path, *argv):
    p = argparse.ArgumentParser()
    cmd.add_store_options(p)
    cmd.add_climb_options(p)
    return p.parse_args([*argv, "--history", str(tmp_path / "h.sqlite")])


def test_outcome_store_is_off_without_its_options_with_no_history_or_store_0(tmp_path, monkeypatch):
    monkeypatch.delenv("KLADDER_STORE", raising=False)
    assert cmd.outcome_store(argparse.Namespace(history=None)) is None
    assert cmd.outcome_store(_store_args(tmp_path, "--no-history")) is None
    monkeypatch.setenv("KLADDER_STORE", "0")
    assert cmd.outcome_store(_store_args(tmp_path)) is None
    monkeypatch.setenv("KLADDER_STORE", "1")
    s = cmd.outcome_store(_store_args(tmp_path, "--fresh", "--store-size", "7", "--accumulate"))
    try:
        assert (s.size, s.fresh, s.accumulate, s.path) == (7, True, True, str(tmp_path / "h.sqlite"))
    finally:
        s.close()
    with pytest.raises(UsageProblem, match=r"--store-size -1: give a number of outcomes, 0 or more"):
        cmd.outcome_store(_store_args(tmp_path, "--store-size", "-1"))


def test_store_option_defaults():
    p = argparse.ArgumentParser()
    cmd.add_store_options(p)
    a = p.parse_args([])
    from kladder.history.store import STORE_SIZE
    assert (a.fresh, a.accumulate, a.store_size, a.exitfirst, a.lf) == (False, False, STORE_SIZE, False, False)


def test_last_failures_read_from_the_history_or_none(hist, tmp_path):
    path, h, climb = hist
    cid = climb(points=[("p", "failed"), ("q", "passed"), ("r", "flaky")])
    assert cmd.last_failures(argparse.Namespace(history=path), "s", "s.py::s") == (cid, ["p", "r"])
    assert cmd.last_failures(argparse.Namespace(history=path, no_history=True), "s", "s.py::s") == (None, [])
    (tmp_path / "f").write_text("")
    assert cmd.last_failures(argparse.Namespace(history=str(tmp_path / "f" / "x")), "s", "r") == (None, [])


# ---------------------------------------------------------------------------- a report edited by hand
GOOD = {"rungs": [{"rung": 1, "points": [{"id": "p", "status": "passed", "rung": 1, "findings": [{"check": "values"}]}]}]}


@pytest.mark.parametrize("edit,problem", [
    (lambda d: d.pop("rungs"), "rungs is missing"),
    (lambda d: d.update(exit_code=True), "exit_code is true/false, not an integer or null"),
    (lambda d: d.update(fingerprint=[1]), "fingerprint is a list, not an object or null"),
    (lambda d: d["rungs"].append("x"), "rungs[1] is a string, not an object"),
    (lambda d: d["rungs"][0].update(seconds="1"), "rungs[0].seconds is a string, not a number or null"),
    (lambda d: d["rungs"][0]["points"][0].update(rung=1.0), "rungs[0].points[0].rung is a number, not an integer"),
    (lambda d: d["rungs"][0]["points"][0]["findings"][0].pop("check"), "rungs[0].points[0].findings[0].check is missing"),
    (lambda d: d["rungs"][0]["points"][0].update(findings=[None]), "rungs[0].points[0].findings[0] is null, not an object"),
])
def test_report_problem_names_the_first_field_not_a_reports(edit, problem):
    doc = json.loads(json.dumps(GOOD))
    assert cmd.report_problem(doc) is None
    edit(doc)
    if "rungs" not in doc:
        assert cmd._shape(doc, cmd.REPORT_SHAPE, "") == problem
    else:
        assert cmd.report_problem(doc) == problem


def test_report_refuses_what_is_not_a_report(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{not json")
    html = str(tmp_path / "r.html")
    with pytest.raises(UsageProblem, match=r"REPORT.json .*: cannot read a report there"):
        cmd.cmd_report(argparse.Namespace(json=str(bad), html=html))
    bad.write_text('{"spec": "s"}')
    with pytest.raises(UsageProblem, match=r"not a climb's report \(no 'rungs'\)"):
        cmd.cmd_report(argparse.Namespace(json=str(bad), html=html))
    bad.write_text('{"rungs": [3]}')
    with pytest.raises(UsageProblem, match=r"rungs\[0\] is an integer, not an object: not a report as kladder"):
        cmd.cmd_report(argparse.Namespace(json=str(bad), html=html))
    assert not (tmp_path / "r.html").exists()


def test_html_to_a_folder_that_cannot_be_written_is_a_usage_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageProblem, match=r"--html .*: cannot write it"):
        cmd._write_html(str(tmp_path / "f" / "x.html"), "<p>")


def test_the_diff_parser_takes_its_options():
    a = _parser().parse_args(["diff", "3", "5", "--fail-on", "slower", "-v"])
    assert (a.a, a.b, a.fail_on, a.verbose, a.json) == ("3", "5", "slower", True, None)
    with pytest.raises(SystemExit):
        _parser().parse_args(["diff", "--fail-on", "faster"])
    assert _parser().parse_args(["history"]).limit == 50
