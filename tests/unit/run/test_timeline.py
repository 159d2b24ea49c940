"""run/timeline.py: KLADDER_TIMELINE=PATH gets one strict-JSON line a mark; unset, nothing is written."""
import json
import threading

from kladder.run import timeline


def test_nothing_is_written_or_measured_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(timeline.VARIABLE, raising=False)
    assert not timeline.on()
    timeline.mark("run", point="p")
    assert list(tmp_path.iterdir()) == []


def test_each_mark_is_one_strict_json_line_with_its_thread(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    monkeypatch.setenv(timeline.VARIABLE, str(path))
    assert timeline.on()
    timeline.mark("rung", rung=1, at=1.5)
    t = threading.Thread(target=timeline.mark, args=("run",), kwargs={"point": "r1-N=3", "worker": None},
                         name="kladder-lane_0")
    t.start()
    t.join()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines == [{"kind": "rung", "thread": "MainThread", "rung": 1, "at": 1.5},
                     {"kind": "run", "thread": "kladder-lane_0", "point": "r1-N=3", "worker": None}]


def test_a_mark_that_cannot_be_written_or_is_not_strict_json_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setenv(timeline.VARIABLE, str(tmp_path / "no" / "such" / "dir.jsonl"))
    timeline.mark("run", point="p")                       # no folder: dropped, no error
    path = tmp_path / "t.jsonl"
    monkeypatch.setenv(timeline.VARIABLE, str(path))
    timeline.mark("run", at=float("nan"))                 # never a NaN in a file kladder writes
    assert not path.exists()


def test_a_climb_marks_its_rungs_and_each_run_on_a_lane(tmp_path, monkeypatch):
    import os

    from kladder.climbing.ladder import Options, climb
    from kladder.gen.load import load_spec
    path = tmp_path / "t.jsonl"
    monkeypatch.setenv(timeline.VARIABLE, str(path))
    ref = os.path.join(os.path.dirname(__file__), "..", "..", "specs", "trivial.py")
    report = climb(ref, load_spec(ref), Options(rungs=(1,), device="cpu", jobs=1))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    runs = [x for x in lines if x["kind"] == "run"]
    assert [x["kind"] for x in lines if x["kind"] != "run"] == ["climb", "rung", "rung_end"]
    assert len(runs) == len(report.rungs[0].outcomes) > 0
    assert all(x["asked"] <= x["got"] <= x["ended"] and isinstance(x["worker"], int) for x in runs)
