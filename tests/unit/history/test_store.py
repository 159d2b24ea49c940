"""history/store.py: the History file's writes and reads directly, on a SQLite file in tmp_path
(the kill, concurrency and migration stories are tests/test_history.py's)."""
import json
import sqlite3

import pytest

from kladder.history import store as storemod
from kladder.history.store import VERSION, History, HistoryError, _statements, toolchain

FP = {"torch": "2.13.0", "triton": "3.9", "cuda": None, "device": {"name": "cpu-x"}, "git": {"commit": "c0ffee"}}


@pytest.fixture
def h(tmp_path):
    hist = History(str(tmp_path / "sub" / "h.sqlite"))        # the folder is made
    yield hist
    hist.close()


def _climb(h, spec="s", ref="s.py::s", kind="climb", device="cpu", run_id=None, end=True, shard=None, points=()):
    cid = h.begin(kind, spec, ref, device, "1.0", "2026-01-01T00:00:00", run_id, FP)
    for p in points:
        h.point(cid, p)
    if end:
        h.end(cid, "2026-01-01T00:01:00", "passed", 0, None, "cpu-x", [{"rung": 1, "verdict": "passed", "seconds": 1.5}],
              shard=shard)
    return cid


def _row(pid, status="passed", seconds=0.5, point=None, **kw):
    return {"id": pid, "rung": 1, "status": status, "seconds": seconds, "point": point, **kw}


def test_a_new_file_is_at_the_current_version_in_wal(h):
    assert h.db.execute("PRAGMA user_version").fetchone()[0] == VERSION == len(storemod.MIGRATIONS)
    assert h.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    History(h.path).close()                                     # opened again: nothing migrates twice


def test_a_file_that_is_not_sqlite_is_a_history_error_naming_it(tmp_path):
    bad = tmp_path / "h.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(HistoryError) as e:
        History(str(bad))
    assert repr(str(bad)) in str(e.value)


def test_a_climb_round_trips_with_its_points_and_rungs(h):
    cid = _climb(h, run_id="r1", points=[
        _row("a", stages={"kernel": 0.1}, hashes={"out": "ab"}, point={"dims": [["N", 3]]},
             load={"seconds": 0.5, "lanes": 1}),
        _row("b", status="failed", failure="wrong values", nondeterministic=1, reused_from="r0")])
    c = h.climb(str(cid))
    assert c == h.climb("r1")
    assert (c["kind"], c["spec"], c["verdict"], c["exit_code"], c["device_name"]) == ("climb", "s", "passed", 0, "cpu-x")
    assert c["git_commit"] == "c0ffee" and c["fingerprint"] == FP and c["shard"] is None
    assert c["toolchain"] == {"device": "cpu-x", "torch": "2.13.0", "triton": "3.9", "cuda": None, "rocm": None,
                              "driver": None}
    a, b = h.points(cid)
    assert a == {"id": "a", "rung": 1, "status": "passed", "failure": None, "seconds": 0.5, "stages": {"kernel": 0.1},
                 "hashes": {"out": "ab"}, "nondeterministic": False, "point": {"dims": [["N", 3]]},
                 "load": {"seconds": 0.5, "lanes": 1}, "reused_from": None}
    assert (b["status"], b["failure"], b["nondeterministic"], b["stages"], b["load"], b["reused_from"]) == \
        ("failed", "wrong values", True, {}, None, "r0")
    assert h.rungs(cid) == {1: {"verdict": "passed", "seconds": 1.5}}
    assert h.climb("999") is None and h.climb("no-such-run") is None


def test_a_climb_never_ended_has_no_end_and_its_points(h):
    cid = _climb(h, end=False, points=[_row("a")])
    c = h.climb(str(cid))
    assert c["ended"] is None and c["verdict"] is None
    assert [p["id"] for p in h.points(cid)] == ["a"]


def test_end_takes_the_workers_fingerprint_and_the_golden_result(h):
    cid = h.begin("climb", "s", "s.py", "cuda", "1.0", "t", None, None)
    assert h.climb(str(cid))["toolchain"]["device"] is None
    fp = {"torch": "x", "device": {"name": "H100"}, "git": {"commit": "d00d"}}
    h.end(cid, "t2", "failed", 1, fp, "H100", [], golden={"strict": True}, shard="2/3")
    c = h.climb(str(cid))
    assert c["toolchain"]["device"] == "H100" and c["git_commit"] == "d00d" and c["golden"] == {"strict": True}
    assert (c["verdict"], c["exit_code"], c["shard"]) == ("failed", 1, "2/3")


def test_climbs_are_newest_first_by_spec_limited_with_counts(h):
    for spec in ("a", "b", "a"):
        _climb(h, spec=spec, points=[_row("p"), _row("q", status="failed"), _row("r", status="failed")])
    assert [c["spec"] for c in h.climbs()] == ["a", "b", "a"]
    ids = [c["id"] for c in h.climbs("a")]
    assert ids == sorted(ids, reverse=True) and len(ids) == 2
    assert len(h.climbs(limit=1)) == 1 and h.climbs(limit=1)[0]["id"] == max(ids)
    assert h.climbs("a")[0]["counts"] == {"passed": 1, "failed": 2}
    assert h.climbs("nobody") == []


def test_last_failures_of_the_ref_climbed_else_of_any_ref(h):
    _climb(h, ref="x.py", points=[_row("p1", status="failed"), _row("p2"), _row("p3", status="flaky")])
    newer = _climb(h, ref="y.py", points=[_row("q", status="failed")])
    _climb(h, ref="x.py", end=False, points=[_row("unfinished", status="failed")])
    _climb(h, ref="x.py", kind="repro", points=[_row("repro", status="failed")])
    cid, failed = h.last_failures("s", "x.py")
    assert failed == ["p1", "p3"] and cid == 1
    assert h.last_failures("s", "z.py") == (newer, ["q"])
    assert h.last_failures("s") == (newer, ["q"])
    assert h.last_failures("nobody", "x.py") == (None, [])


def test_point_seconds_reads_finished_whole_climbs_of_the_device_only(h):
    pt = {"dims": [["N", 1]]}
    _climb(h, points=[_row("old", seconds=9.0, point=pt)])
    _climb(h, points=[_row("a", seconds=1.0, point=pt), _row("zero", seconds=0.0, point=pt), _row("nopoint", seconds=2.0)])
    _climb(h, kind="pytest", points=[_row("b", seconds=3.0, point=pt)])
    _climb(h, shard="1/2", points=[_row("shard", seconds=4.0, point=pt)])
    _climb(h, end=False, points=[_row("open", seconds=5.0, point=pt)])
    _climb(h, kind="repro", points=[_row("repro", seconds=6.0, point=pt)])
    _climb(h, device="cuda", points=[_row("gpu", seconds=7.0, point=pt)])
    assert sorted(s for _, s in h.point_seconds("s", "cpu", climbs=2)) == [1.0, 3.0]
    assert sorted(s for _, s in h.point_seconds("s", "cpu", climbs=3)) == [1.0, 3.0, 9.0]
    assert h.point_seconds("s", "cuda") == [({"dims": [["N", 1]]}, 7.0)]


def test_a_row_kladder_did_not_write_is_left_out_and_named(h):
    cid = _climb(h, points=[_row("good"), _row("bad")])
    h.db.execute("UPDATE points SET stages = 'not json{' WHERE point_id = 'bad'")
    assert [p["id"] for p in h.points(cid)] == ["good"]
    assert len(h.damaged) == 1 and h.damaged[0].startswith(f"climb #{cid}'s point 1 ('bad'): stages is not JSON")
    other = _climb(h, spec="t")
    h.db.execute("UPDATE climbs SET fingerprint = '[1, 2]' WHERE id = ?", (other,))
    assert h.climbs("t") == [] and h.climb(str(other)) is None
    assert h.damaged[-1] == f"climb #{other}: fingerprint is a list ('[1, 2]'), not what kladder writes"


def test_golden_hashes_are_kept_per_target_and_replaced_whole(h):
    t1, t2 = {"device": "H100", "torch": "x"}, {"device": "H200", "torch": "x"}
    assert h.keep_golden("s", t1, 1, "now", [{"id": "a", "hashes": {"o": "1"}}, {"id": "b", "hashes": {"o": "2"}}]) == 2
    h.keep_golden("s", t2, 2, "now", [{"id": "a", "hashes": {"o": "9"}}])
    assert {(g["id"], g["hashes"]["o"]) for g in h.golden("s", t1)} == {("a", "1"), ("b", "2")}
    # the target is matched as a JSON object: key order is no difference
    assert len(h.golden("s", {"torch": "x", "device": "H100"})) == 2
    assert len(h.golden("s")) == 3 and h.golden("other") == []
    h.keep_golden("s", t1, 3, "later", [{"id": "c", "hashes": {"o": "3"}}])
    assert [(g["id"], g["climb_id"], g["target"]) for g in h.golden("s", t1)] == [("c", 3, t1)]


def test_a_transaction_that_raises_writes_nothing(h):
    with pytest.raises(RuntimeError), h.transaction() as db:
        db.execute("INSERT INTO climbs (kind, spec, ref, started) VALUES ('climb', 'x', 'x', 't')")
        raise RuntimeError("boom")
    assert h.climbs() == []


def test_busy_is_retried_other_errors_are_not(monkeypatch):
    monkeypatch.setattr(storemod.time, "sleep", lambda s: None)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "done"
    assert storemod._retry(flaky) == "done" and len(calls) == 3

    def broken():
        calls.append(1)
        raise sqlite3.OperationalError("no such table: x")
    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        storemod._retry(broken)
    assert len(calls) == 1
    monkeypatch.setattr(storemod, "BUSY_S", -1.0)                    # past the bound: busy is raised too
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        storemod._retry(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("database is locked")))


def test_statements_split_a_migration_and_drop_comments():
    assert _statements("CREATE TABLE a (x TEXT); -- a; b\nALTER TABLE a ADD y; \n\n") == \
        ["CREATE TABLE a (x TEXT)", "ALTER TABLE a ADD y"]
    for script in storemod.MIGRATIONS:
        assert all("--" not in s for s in _statements(script))


def test_toolchain_and_default_path(monkeypatch):
    assert toolchain({"device": "cpu"})["device"] is None
    assert toolchain({})["torch"] is None
    monkeypatch.setenv("KLADDER_HISTORY", "/x/h.sqlite")
    assert storemod.default_path() == "/x/h.sqlite"
    monkeypatch.delenv("KLADDER_HISTORY")
    assert storemod.default_path() == storemod.DEFAULT
    assert json.loads(json.dumps(toolchain(FP), allow_nan=False)) == toolchain(FP)
