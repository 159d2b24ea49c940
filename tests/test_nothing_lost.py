"""A finished climb is never lost (issue 36, item 2): a full disk for one output leaves the
verdict printed and every other output written, the write that failed said after the verdict,
the exit status the verdict's; the log keeps whole lines only, stops with one warning and the
climb goes on, and is never a 0-byte file; a damaged golden row is a warning naming it; a rung
that did not run its points is never "passed".

The full disk is simulated without root: a sitecustomize.py on the climb's own PYTHONPATH (this
test's environment, never kladder's) makes os.write fail with ENOSPC for files under one path,
after KLT_FULL_AFTER bytes (a short write first, as a filling disk does)."""
import pathlib
import json
import os
import sqlite3
import subprocess
import sys

from conftest import report_json

KLADDER = [sys.executable, "-m", "kladder.tools.cli"]

SITECUSTOMIZE = (pathlib.Path(__file__).parent / "data" / "full_disk" / "sitecustomize.py").read_text()

# three points, the third wrong: a verdict worth keeping (exit 1, a FAILED point)
SPEC = (pathlib.Path(__file__).parent / "specs" / "tail3.py").read_text()


def _climb(tmp_path, *args, full: str | None = None, after: int = 0):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    spec = tmp_path / "tail.py"
    spec.write_text(SPEC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    if full:
        env.update(KLT_FULL=full, KLT_FULL_AFTER=str(after))
    return subprocess.run([*KLADDER, "climb", str(spec), "--device", "cpu", "--rungs", "1", "-j", "1", "--color", "never",
                           "--history", str(tmp_path / "h.sqlite"), *args], capture_output=True, text=True,
                          timeout=600, cwd=str(tmp_path), env=env)


def _history(tmp_path) -> list[tuple]:
    db = sqlite3.connect(str(tmp_path / "h.sqlite"))
    try:
        return db.execute("SELECT verdict, exit_code, ended IS NOT NULL FROM climbs").fetchall()
    finally:
        db.close()


def test_a_full_disk_for_the_json_loses_neither_the_verdict_nor_the_other_outputs(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "r.json").write_text('{"an": "older report"}')
    p = _climb(tmp_path, "--json", str(full / "r.json"), "--html", str(tmp_path / "r.html"), "--log",
               str(tmp_path / "l.jsonl"), full=str(full))
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 1, (p.returncode, p.stderr)                       # the verdict's: a point failed
    assert "FAILED" in p.stdout and "0 failed" not in p.stdout                 # the terminal report printed
    assert "--json" in p.stderr and "No space left on device" in p.stderr and "the verdict above stands" in p.stderr
    assert (full / "r.json").read_text() == '{"an": "older report"}'           # the old file whole, no temporary left
    assert os.listdir(full) == ["r.json"]
    assert "<html" in (tmp_path / "r.html").read_text()                        # the HTML, on a disk with room
    assert _history(tmp_path) == [("failed", 1, 1)]                            # the history finished, not "unfinished"
    records = report_json(tmp_path / "l.jsonl")
    assert records[-1]["record"] == "end" and records[-1]["exit_code"] == 1


def test_a_log_whose_disk_fills_mid_climb_keeps_whole_lines_and_the_climb_goes_on(tmp_path):
    log = tmp_path / "l.jsonl"
    p = _climb(tmp_path, "--json", str(tmp_path / "r.json"), "--log", str(log), full=str(log), after=3000)
    assert "Traceback" not in p.stderr and p.returncode == 1, p.stderr
    assert p.stderr.count("could not be written") == 1 and "No space left on device" in p.stderr
    text = log.read_text()
    assert text.endswith("\n") and 0 < len(text) <= 3000
    assert [json.loads(line)["record"] for line in text.splitlines()][0] == "header"     # every line whole
    doc = report_json(tmp_path / "r.json")
    rung = doc["rungs"][0]
    assert len(rung["points"]) == 3 and rung["verdict"] == "failed" and doc["exit_code"] == 1   # every point ran


def test_a_full_disk_at_the_start_leaves_no_0_byte_log(tmp_path):
    log = tmp_path / "l.jsonl"
    p = _climb(tmp_path, "--json", str(tmp_path / "r.json"), "--log", str(log), full=str(log), after=0)
    assert "Traceback" not in p.stderr and p.returncode == 1, p.stderr
    assert not log.exists() and p.stderr.count("could not be written") == 1
    doc = report_json(tmp_path / "r.json")
    assert doc["log"] == "" and len(doc["rungs"][0]["points"]) == 3


def test_a_damaged_golden_row_is_a_warning_naming_it_and_the_climb_reports(tmp_path):
    assert _climb(tmp_path).returncode == 1
    g = subprocess.run([*KLADDER, "golden", "record", "tail", "--history", str(tmp_path / "h.sqlite")],
                       capture_output=True, text=True, timeout=120)
    assert g.returncode == 0, g.stderr
    db = sqlite3.connect(str(tmp_path / "h.sqlite"))
    db.execute("UPDATE golden SET hashes = '{not json' WHERE point_id = 'r1-N=2'")
    db.commit()
    db.close()
    p = _climb(tmp_path, "--golden=strict", "--json", str(tmp_path / "r.json"))
    assert "Traceback" not in p.stderr and p.returncode == 1, p.stderr
    assert "the golden row of spec 'tail', point 'r1-N=2': hashes is not JSON" in p.stderr
    doc = report_json(tmp_path / "r.json")
    assert doc["golden"]["not_kept"] == ["r1-N=2"] and "r1-N=1" in doc["golden"]["equal"]


def test_a_rung_that_did_not_run_its_points_is_never_passed(tmp_path, monkeypatch):
    """kladder's own error after 2 of a rung's points: the rung is incomplete, not passed."""
    from kladder.tools import cli
    from kladder.climbing import ladder
    real, calls = ladder.Runner._finish, []

    def finish_then_break(self, outcome):
        calls.append(outcome)
        if len(calls) == 3:
            raise ValueError("a bookkeeping slip of kladder's")
        return real(self, outcome)

    monkeypatch.setattr(ladder.Runner, "_finish", finish_then_break)
    spec = tmp_path / "tail.py"
    spec.write_text(SPEC.replace("== 3", "== 99"))
    out = tmp_path / "r.json"
    assert cli.main(["climb", str(spec), "--rungs", "1", "--device", "cpu", "-j", "1", "--json", str(out),
                     "--no-history", "--log", str(tmp_path / "l.jsonl")]) == 1
    rung = report_json(out)["rungs"][0]
    assert [p["status"] for p in rung["points"]] == ["passed", "passed"] and rung["verdict"] == "incomplete"
    from kladder.core.results import RungReport
    assert RungReport(2, "values", planned=14).verdict == "incomplete"
    assert RungReport(2, "values", planned=0).verdict == "nothing ran"
