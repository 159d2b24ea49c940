"""Stored data read defensively (issue 36, item 3): `kladder history`, `diff` and `golden record`
refuse a damaged history (garbage inside a page, a row whose JSON is not kladder's) and `kladder
report` a report edited out of shape, each with exit 2, the path and what to do, never a traceback."""
import copy
import json
import os

import pytest

from kladder.tools import cli
from kladder.history.store import History


def _history(path) -> None:
    """Two climbs of spec 'double', three points each, written as a climb writes them."""
    h = History(str(path))
    try:
        for n in range(2):
            cid = h.begin("climb", "double", "spec.py", "cpu", "0.1.0", f"2026-12-06T10:0{n}:00", f"run{n}",
                          {"torch": "2.13", "device": {"name": "x86_64"}})
            for i in range(3):
                h.point(cid, {"id": f"r1-N={i + 1}", "rung": 1, "status": "passed", "seconds": 0.1,
                              "stages": {"kernel": 0.01}, "hashes": {"y": f"h{i}"}, "point": {"spec": "double"}})
            h.end(cid, f"2026-12-06T10:0{n}:30", "passed", 0, None, "cpu", [{"rung": 1, "verdict": "passed", "seconds": 1}])
        h.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        h.close()


COMMANDS = [["history"], ["diff"], ["golden", "record", "double"]]


def _run(capsys, *argv) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().err


def test_a_sound_history_answers(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    _history(path)
    for argv in COMMANDS:
        code, err = _run(capsys, *argv, "--history", str(path))
        assert code == 0, err


@pytest.mark.parametrize("column,value,words", [
    ("climbs.fingerprint", "garbage", "climb #1: fingerprint is not JSON ('garbage'"),
    ("climbs.fingerprint", "[1, 2]", "climb #1: fingerprint is a list ('[1, 2]'), not what kladder writes"),
    ("points.hashes", "{not json", "climb #1's point 0 ('r1-N=1'): hashes is not JSON"),
])
def test_a_row_that_is_not_kladders_is_refused_naming_it(tmp_path, capsys, column, value, words):
    import sqlite3
    path = tmp_path / "h.sqlite"
    _history(path)
    table, col = column.split(".")
    db = sqlite3.connect(str(path))
    where = "id = 1" if table == "climbs" else "climb_id = 1 AND seq = 0"
    db.execute(f"UPDATE {table} SET {col} = ? WHERE {where}", (value,))
    db.commit()
    db.close()
    for argv in COMMANDS if table == "climbs" else [["diff"], ["golden", "record", "double", "--climb", "1"]]:
        code, err = _run(capsys, *argv, "--history", str(path))
        assert code == 2 and "Traceback" not in err, (argv, err)
        assert f"--history {str(path)!r} is damaged: {words}" in err, err
        assert "move the file aside" in err


def test_garbage_inside_a_page_is_refused_with_the_path_and_what_to_do(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    _history(path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:                     # every page but the first (the header and the schema)
        for page in range(1, size // 4096):
            f.seek(page * 4096)
            f.write(b"\xde\xad\xbe\xef" * 1024)
    for argv in COMMANDS:
        code, err = _run(capsys, *argv, "--history", str(path))
        assert code == 2 and "Traceback" not in err, (argv, err)
        assert str(path) in err and "damaged" in err and "move the file aside" in err, err


def _report(tmp_path) -> dict:
    from kladder.core.results import ClimbReport, RungReport
    from kladder.report.jsonout import report_dict, strict
    from kladder.core.outcome import Outcome, Status
    from kladder.core.point import Point
    r = ClimbReport("double", "spec.py", "cpu")
    r.rungs.append(RungReport(1, "shapes", [Outcome(Point("double", 1, (("N", n),)), Status.PASSED) for n in (1, 2)]))
    return json.loads(json.dumps(strict(report_dict(r))))


@pytest.mark.parametrize("edit,words", [
    (lambda d: d.update(rungs="x"), "rungs is a string, not a list"),
    (lambda d: d["rungs"][0].update(points=["a", "b"]), "rungs[0].points[0] is a string, not an object"),
    (lambda d: d.update(fingerprint=["a list"]), "fingerprint is a list, not an object or null"),
    (lambda d: d["rungs"][0]["points"][1].update(status=3), "rungs[0].points[1].status is an integer, not a string"),
    (lambda d: d["rungs"][0]["points"][0].update(status="failed", findings=[{"check": "values", "where": 5}]),
     "rungs[0].points[0].findings[0].where is an integer, not an object or null"),
])
def test_a_report_out_of_shape_is_refused_naming_the_field(tmp_path, capsys, edit, words):
    doc = _report(tmp_path)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(doc))
    code, err = _run(capsys, "report", str(good), "--html", str(tmp_path / "good.html"))
    assert code == 0, err
    bad = copy.deepcopy(doc)
    edit(bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    code, err = _run(capsys, "report", str(path), "--html", str(tmp_path / "bad.html"))
    assert code == 2 and "Traceback" not in err, err
    assert f"REPORT.json {str(path)!r}: {words}" in err and "docs/report.schema.json" in err, err
    assert not (tmp_path / "bad.html").exists()


def test_a_deeply_nested_report_is_refused(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text('{"rungs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err = _run(capsys, "report", str(path), "--html", str(tmp_path / "deep.html"))
    assert code == 2 and "Traceback" not in err and str(path) in err, err
