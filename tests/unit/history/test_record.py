"""history/record.py: a climb's rows as the Recorder writes them (begin at the first point, each
point, the end), into a SQLite file in tmp_path, and a history that cannot be written."""
import argparse

from kladder.core.facts import NondeterministicFacts, RepeatsFacts, ReusedFacts
from kladder.core.outcome import Check, Finding, Load, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport, ShardFacts
from kladder.history.record import VERDICTS, Recorder, nondeterministic, point_row
from kladder.history.store import History

FP = {"torch": "2.13.0", "device": {"name": "cpu-x"}, "git": {"commit": "abc"}}
P = Point("s", 1, (("N", 4),))


def _repeats(cls=RepeatsFacts, bitwise=False):
    return cls(calls=10, compared=9, firsts=1, differ=3, wrong=0, deterministic=False, launch="eager", inputs="same",
               load=False, seconds=0.1, stopped="calls", bitwise=bitwise, rate=0.3, lo=0.1, hi=0.7, conf=0.95)


def test_a_nondeterministic_warning_marks_the_point_a_wrong_value_does_not():
    warned = Outcome(P, Status.PASSED, warnings=[Finding(Check.NONDETERMINISTIC, output="out",
                                                         facts=_repeats(NondeterministicFacts, True))])
    assert nondeterministic(warned)
    assert not nondeterministic(Outcome(P, Status.FAILED, [Finding(Check.REPEATS, output="out", facts=_repeats())]))
    assert not nondeterministic(Outcome(P, Status.PASSED))


def test_a_point_row_carries_what_the_history_keeps():
    o = Outcome(P, Status.PASSED, seconds=0.25, hashes={"out": "ab"})
    o.ran_with = Load(lanes=2, seconds=0.25, host_cpu_s=0.1)
    o.reused = ReusedFacts(run_id="r0", climb=3, kept="t")
    row = point_row(o)
    assert (row["id"], row["rung"], row["status"], row["failure"], row["hashes"]) == (P.id, 1, "passed", None, {"out": "ab"})
    assert row["point"]["dims"] == [["N", 4]] and row["reused_from"] == "r0"
    assert row["load"]["lanes"] == 2 and row["load"]["seconds"] == 0.25
    bare = point_row(Outcome(P, Status.FAILED))
    assert (bare["status"], bare["load"], bare["reused_from"], bare["nondeterministic"]) == ("failed", None, None, False)


def _report(outcomes=(), code_status=Status.PASSED, **kw):
    r = ClimbReport("s", "s.py::s", "cpu", started="2026-01-01T00:00:00", kladder_version="1.0", fingerprint=FP, **kw)
    r.rungs = [RungReport(1, "shapes", outcomes=list(outcomes), seconds=1.23456),
               RungReport(2, "values", climbed=False, note="not asked for")]
    return r


def test_a_climb_is_begun_at_its_first_point_and_ended_with_its_climbed_rungs(tmp_path):
    path = str(tmp_path / "h.sqlite")
    rec = Recorder(path)
    report = _report()
    rec.report = report
    assert rec.climb_id is None                                          # nothing written before a point
    outcomes = [Outcome(P, Status.PASSED), Outcome(Point("s", 1, (("N", 5),)), Status.FAILED)]
    for o in outcomes:
        rec.point(o)
        report.rungs[0].outcomes.append(o)
    rec.end(report)
    assert rec.h is None                                                 # closed at the end
    h = History(path)
    try:
        (c,) = h.climbs()
        assert (c["run_id"], c["kind"], c["spec"], c["verdict"], c["exit_code"], c["shard"]) == \
            (report.run_id, "climb", "s", "failed", 1, None)
        assert [p["status"] for p in h.points(c["id"])] == ["passed", "failed"]
        assert h.rungs(c["id"]) == {1: {"verdict": "failed", "seconds": 1.235}}   # rung 2 was not climbed
    finally:
        h.close()


def test_a_climb_that_ran_nothing_is_recorded_and_an_odd_exit_named(tmp_path):
    path = str(tmp_path / "h.sqlite")
    report = _report(shard=ShardFacts(index=2, count=3, options={}, dealt={}, positions={}))
    report.interrupted = True
    rec = Recorder(path)
    rec.end(report)
    h = History(path)
    try:
        (c,) = h.climbs()
        assert (c["verdict"], c["exit_code"], c["shard"]) == (VERDICTS[130], 130, "2/3")
    finally:
        h.close()

    class Odd(ClimbReport):
        exit_code = 7
    odd = Odd("s", "s.py::s", "cpu", started="t", fingerprint=FP)
    rec = Recorder(path)
    rec.end(odd)
    h = History(path)
    try:
        assert h.climbs()[0]["verdict"] == "exit 7"
    finally:
        h.close()


def test_a_repro_is_recorded_as_its_kind_once(tmp_path):
    path = str(tmp_path / "h.sqlite")
    rec = Recorder(path)
    report = _report()
    rec.begin(report, kind="repro")
    first = rec.climb_id
    rec.begin(report, kind="repro")                                      # a second begin writes no second row
    rec.end(report)
    h = History(path)
    try:
        assert [(c["id"], c["kind"]) for c in h.climbs()] == [(first, "repro")]
    finally:
        h.close()


def test_a_history_that_cannot_be_written_is_one_line_and_the_climb_goes_on(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    rec = Recorder(str(tmp_path / "file" / "h.sqlite"))
    err = capsys.readouterr().err
    assert rec.h is None and err.count("\n") == 1 and "the climb goes on without it" in err and "--no-history" in err
    rec.report = _report()
    rec.point(Outcome(P, Status.PASSED))
    rec.end(rec.report)                                                  # no error: nothing to write to
    assert rec.climb_id is None


def test_a_write_that_fails_midway_drops_the_history_not_the_climb(tmp_path, capsys):
    # a point's write failed (here: its table gone; a full disk, a lock held past BUSY_S): the
    # history is dropped, and every later point and the end are no-ops, never an AttributeError
    # on the dropped connection that ends the climb
    rec = Recorder(str(tmp_path / "h.sqlite"))
    report = _report()
    rec.begin(report)
    rec.h.db.execute("DROP TABLE points")
    rec.point(Outcome(P, Status.PASSED))
    assert rec.h is None and "no such table: points" in capsys.readouterr().err
    rec.point(Outcome(P, Status.PASSED))
    rec.end(report)


def test_from_args_no_history_given_or_default(tmp_path, monkeypatch):
    assert Recorder.from_args(argparse.Namespace(no_history=True, history=str(tmp_path / "x"))).path is None
    given = Recorder.from_args(argparse.Namespace(no_history=False, history=str(tmp_path / "g.sqlite")))
    assert given.path == str(tmp_path / "g.sqlite") and given.h is not None
    given.close()
    monkeypatch.setenv("KLADDER_HISTORY", str(tmp_path / "env.sqlite"))
    d = Recorder.from_args(argparse.Namespace())
    assert d.path == str(tmp_path / "env.sqlite")
    d.close()
    assert Recorder(None).h is None
