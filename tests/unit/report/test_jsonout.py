"""report/jsonout.py: strict JSON (non-finite floats as strings), the report's, the log's and
the zoo's documents built from typed data, and the folder probe."""
from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.core.facts import GuardFacts, ReuseFacts, ValuesFacts
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
    Stage,
    Status,
    Wait,
    Waited,
)
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.report import jsonout


def _refuse(name):
    raise ValueError(f"not strict JSON: {name}")


def _loads(text: str):
    """JSON read back as RFC 8259 allows: NaN / Infinity refused."""
    return json.loads(text, parse_constant=_refuse)


def _point(rung=1, m=4) -> Point:
    return Point(spec="s", rung=rung, dims=(("M", m), ("N", 7)), why="the tail of a tile")


def _failed(m=4, big=float("nan")) -> Outcome:
    f = Finding(Check.VALUES, output="y", pattern=Pattern(kind="single"), mismatched=1, total=28, max_abs_err=big,
                largest=Largest(index=(0, 6), kernel=big, reference=1.0, allowed=1e-5),
                facts=ValuesFacts(dtype="float32", shape=[4, 7], mode="eager", rtol=1.3e-6, atol=1e-5))
    return Outcome(_point(m=m), Status.FAILED, [f], seconds=0.123456, repro="kladder repro s 'r1-M=4-N=7'",
                   rows=RowsChecked(checked=2, rows=4, dim="M", sampled=0), replay=Replay.FAILED_AGAIN,
                   stages={Stage.KERNEL: 0.012345678}, hashes={"y": "ab" * 32})


def _report(**kw) -> ClimbReport:
    skipped = Outcome(_point(rung=4), Status.SKIPPED, note=Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graph"))
    rungs = [RungReport(1, "shapes", [_failed()], seconds=1.23456, waits=[Waited(Wait.WORKER, 0.5)]),
             RungReport(4, "modes", [skipped], seconds=0.1), RungReport(5, "repetition", climbed=False, note="later")]
    base = dict(spec="s", ref="specs/s.py", device="cpu", rungs=rungs, seconds=2.34567, kladder_version="0.9",
                started="2026-12-07T04:00:00", run_id="r-1")
    return ClimbReport(**{**base, **kw})


# ---------------------------------------------------------------------------- strict
def test_strict_writes_each_non_finite_float_as_a_string():
    assert jsonout.strict(float("nan")) == "NaN"
    assert jsonout.strict(float("inf")) == "Infinity"
    assert jsonout.strict(float("-inf")) == "-Infinity"
    assert jsonout.strict(1.5) == 1.5 and jsonout.strict(-0.0) == 0.0 and jsonout.strict(None) is None


def test_strict_goes_into_dicts_lists_tuples_and_sets_and_makes_keys_strings():
    assert jsonout.strict({1: [float("nan"), (float("inf"),)], "a": {"b": {float("-inf")}}}) == \
        {"1": ["NaN", ["Infinity"]], "a": {"b": ["-Infinity"]}}


@settings(max_examples=30, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
                    max_leaves=8))
def test_dumps_is_always_strict_json_and_keeps_every_finite_value(doc):
    back = _loads(jsonout.dumps(doc))
    assert back == _finite_or_words(doc)


def _finite_or_words(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: _finite_or_words(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite_or_words(x) for x in v]
    return v


def test_dumps_writes_what_json_cannot_as_its_string():
    class Odd:
        def __str__(self):
            return "odd"
    assert _loads(jsonout.dumps({"x": Odd()})) == {"x": "odd"}


# ---------------------------------------------------------------------------- the documents
def test_the_report_is_strict_json_with_a_nan_kernel_value():
    doc = _loads(jsonout.render_json(_report()))
    point = doc["rungs"][0]["points"][0]
    assert point["max_abs_err"] == "NaN" and point["findings"][0]["kernel"] == "NaN"
    assert doc["format"] == jsonout.FORMAT and doc["run_id"] == "r-1" and doc["seconds"] == 2.346
    assert doc["lowest_failing_rung"] == 1 and doc["exit_code"] == 1 and doc["nothing_ran"] is False
    assert doc["shard"] is None and doc["golden"] is None and doc["reuse"] is None and doc["budget"] is None


def test_rung_dict_rounds_and_counts():
    d = jsonout.rung_dict(_report().rungs[0])
    assert d["seconds"] == 1.235 and d["verdict"] == "failed" and d["climbed"] is True
    assert d["counts"]["failed"] == 1 and d["counts"]["passed"] == 0
    assert d["waits"] == [{"for": "worker", "seconds": 0.5, "times": 1}]
    unclimbed = jsonout.rung_dict(_report().rungs[2])
    assert unclimbed["verdict"] == "not climbed" and unclimbed["note"] == "later" and unclimbed["points"] == []


def test_outcome_dict_of_a_failure():
    d = jsonout.outcome_dict(_failed())
    assert {k: d[k] for k in ("id", "rung", "status", "why", "kind", "mode", "failure", "pattern", "replay",
                              "seconds", "repro")} == {
        "id": "r1-M=4-N=7", "rung": 1, "status": "failed", "why": "the tail of a tile", "kind": "edge",
        "mode": "eager", "failure": "values", "pattern": "the single element", "replay": "failed_again",
        "seconds": 0.1235, "repro": "kladder repro s 'r1-M=4-N=7'"}
    assert d["reason"] == "replayed: failed again" and d["note"] is None
    assert d["rows_checked"].startswith("2 of 4 rows of M:")
    assert d["stages"] == {"kernel": 0.0123} and d["hashes"] == {"y": "ab" * 32}
    assert d["under_load"] is None and d["reused"] is None and d["point"] == _failed().point.to_dict()


def test_outcome_dict_of_a_skip_has_no_failure_and_its_note():
    skipped = _report().rungs[1].outcomes[0]
    d = jsonout.outcome_dict(skipped)
    assert d["failure"] is None and d["pattern"] is None and d["max_abs_err"] is None and d["findings"] == []
    assert d["note"] == {"kind": "mode_needs_cuda", "facts": {"mode": "graph"}}
    assert d["reason"] == "the graph mode needs CUDA; on the CPU it is skipped, never passed"
    assert d["rows_checked"] == "" and d["replay"] is None


def test_finding_dict_of_values_and_of_a_guard():
    f = _failed(big=2.5).findings[0]
    d = jsonout.finding_dict(f)
    assert (d["check"], d["output"], d["index"], d["allowed"], d["kernel"], d["reference"], d["mismatched"],
            d["total"]) == ("values", "y", [0, 6], 1e-5, 2.5, 1.0, 1, 28)
    assert d["where"] == {"kind": "single", "cols": None, "rows": None, "n_bad": 0, "n_total": 0, "n_rows": 0,
                          "ids": [], "most": False, "checked": False, "first": [], "sample": [], "density": []}
    assert d["budget"] == "allowed 1e-05 = float32 default" and d["budget_details"] is None and d["trace"] is None
    assert d["facts"] == {"rtol": 1.3e-6, "atol": 1e-5, "dtype": "float32", "shape": [4, 7], "mode": "eager"}
    g = jsonout.finding_dict(Finding(Check.GUARD, output="y", facts=GuardFacts(itemsize=4, n_after=4, n_before=0,
                                                                               after_lo=0, after_hi=3)))
    assert g["index"] is None and g["allowed"] is None and g["kernel"] is None and g["where"] is None
    assert g["budget"] is None and g["pattern"] == "a write past the end"


def test_the_log_header_and_end_records():
    class Opts:
        rungs, timeout_s, jobs, replay = (1, 4), 20.0, 2, True
    report = _report(reuse=ReuseFacts(points=2, reused=0, ran=2, climbs=[], run_ids=[], fresh=True, accumulate=False))
    head = _loads(jsonout.dumps(jsonout.header_dict(report, Opts(), {"python": "3.11"})))
    assert head["options"] == {"rungs": [1, 4], "timeout_s": 20.0, "jobs": 2, "replay": True, "budget": None}
    assert head["fingerprint"] == {"python": "3.11"} and head["run_id"] == "r-1"
    end = _loads(jsonout.dumps(jsonout.end_dict(report)))
    assert end["counts"] == {"failed": 1, "skipped": 1} and end["points"] == 2 and end["exit_code"] == 1
    assert end["reuse"]["fresh"] is True and end["seconds"] == 2.346 and "ended" in end


def test_zoo_dict_holds_both_reports_of_each_case():
    class Verdict:
        value = "caught"

    class Row:
        name, rung, verdict, twin_clean, seconds = "tail", 1, Verdict(), True, 3.14159
        bug, twin = _report(), _report(rungs=[])
    doc = _loads(jsonout.dumps(jsonout.zoo_dict([Row()], "cpu")))
    case = doc["cases"][0]
    assert doc["zoo"] is True and doc["device"] == "cpu"
    assert (case["case"], case["rung"], case["verdict"], case["twin_clean"], case["seconds"]) == ("tail", 1, "caught",
                                                                                                  True, 3.142)
    assert case["buggy"]["lowest_failing_rung"] == 1 and case["fixed"]["rungs"] == []


def test_the_written_report_reads_back(tmp_path):
    path = tmp_path / "r.json"
    jsonout.write_report(str(path), _report())
    assert _loads(path.read_text())["spec"] == "s"


# ---------------------------------------------------------------------------- cannot_write
def test_cannot_write_makes_the_folder_and_leaves_nothing(tmp_path):
    folder = tmp_path / "a" / "b"
    assert jsonout.cannot_write(str(folder)) is None
    assert folder.is_dir() and os.listdir(folder) == []


def test_cannot_write_under_a_file_says_why(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    why = jsonout.cannot_write(str(blocker / "sub"))
    assert why is not None and why == os.strerror(20)          # ENOTDIR: "Not a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_cannot_write_in_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert jsonout.cannot_write(str(ro)) == os.strerror(13)   # EACCES: "Permission denied"
    finally:
        ro.chmod(0o700)
