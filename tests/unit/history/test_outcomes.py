"""history/outcomes.py: a rung's points reused or run, kept under their keys, and the climb's facts,
with an OutcomeStore on a SQLite file in tmp_path and a tiny spec (no climb, no worker)."""
import json
import subprocess
import types

import pytest

import kladder as kl
from kladder.core.facts import RepeatsCleanFacts
from kladder.core.outcome import Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.history.outcomes import OutcomeStore, calls_of, smi_fingerprint
from kladder.history.store import History


def _twice(x):
    return 2 * x


SPEC = kl.Spec("tiny", kernel=_twice, reference=_twice, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8)})
POINTS = [Point("tiny", 1, (("N", n),)) for n in (1, 2, 3)]


def _clean(point, calls, kind=NoteKind.REPEATS_CLEAN):
    facts = RepeatsCleanFacts(calls=calls + 1, compared=calls, firsts=1, differ=0, wrong=0, deterministic=False,
                              launch="eager", inputs="same", load=False, seconds=0.1, stopped="calls", bound=3 / calls,
                              conf=0.95)
    return Outcome(point, Status.PASSED, note=Note(kind, facts))


class Ran:
    """The runner's run_all as the store sees it: what it was asked to run, each point's outcome by `status`."""

    def __init__(self, status=None):
        self.asked: list[Point] = []
        self.status = status or {}

    def __call__(self, points):
        self.asked = list(points)
        return iter([Outcome(p, self.status.get(p.id, Status.PASSED)) for p in points])


def _climb(path, run_id, timeout_s=None, **kw):
    store = OutcomeStore(str(path), **kw)
    return store, store.climbing("x.py::tiny", SPEC, "cpu", None, run_id, timeout_s)


def _rung(c, points=POINTS, ran=None):
    ran = ran or Ran()
    started = []
    out = list(c.outcomes(points, ran, started.append, lambda p: f"repro {p.id}"))
    return out, ran, started


def test_calls_of_counts_only_a_clean_rung5_pass():
    p = POINTS[0]
    assert calls_of(_clean(p, 100)) == 100
    assert calls_of(Outcome(p, Status.PASSED)) is None
    assert calls_of(Outcome(p, Status.FAILED, note=_clean(p, 100).note)) is None


def test_a_second_climb_reuses_passes_in_order_and_runs_the_rest(tmp_path):
    path = tmp_path / "h.sqlite"
    store, c = _climb(path, "run-1")
    out, ran, _ = _rung(c, ran=Ran({POINTS[1].id: Status.FAILED}))
    assert ran.asked == POINTS and [o.status for o in out] == [Status.PASSED, Status.FAILED, Status.PASSED]
    assert (c.ran, c.reused, store.count()) == (3, 0, 3)
    store.close()

    store, c = _climb(path, "run-2")
    out, ran, started = _rung(c)
    assert ran.asked == [POINTS[1]]                                     # the failure runs again, nothing else
    assert [o.point for o in out] == POINTS and started == [POINTS[0], POINTS[2]]
    assert [o.reused.run_id if o.reused else None for o in out] == ["run-1", None, "run-1"]
    assert out[0].repro == f"repro {POINTS[0].id}" and out[0].reused.climb is None   # no climbs row named run-1
    f = c.facts()
    assert (f.points, f.reused, f.ran, f.run_ids, f.climbs, f.changed, f.why_not) == (3, 2, 1, ["run-1"], [], [], None)
    store.close()


def test_a_failure_after_a_pass_under_one_key_is_never_reused(tmp_path):
    path = tmp_path / "h.sqlite"
    for run, status in (("run-1", Status.PASSED), ("run-2", Status.FAILED)):
        store, c = _climb(path, run, fresh=True)
        _rung(c, POINTS[:1], Ran({POINTS[0].id: status}))
        store.close()
    store, c = _climb(path, "run-3")
    _, ran, _ = _rung(c, POINTS[:1])
    assert ran.asked == POINTS[:1] and c.reused == 0
    store.close()


def test_given_names_the_points_the_store_would_give_and_counts_nothing(tmp_path):
    path = tmp_path / "h.sqlite"
    store, c = _climb(path, "run-1")
    assert c.given(POINTS) == set()                                     # nothing kept yet
    _rung(c, ran=Ran({POINTS[1].id: Status.FAILED}))
    store.close()
    store, c = _climb(path, "run-2")
    assert c.given(POINTS) == {POINTS[0], POINTS[2]}                    # the failure is not given: it runs again
    assert (c.reused, c.ran) == (0, 0)                                  # asking counts nothing
    store.close()
    store, c = _climb(path, "run-3", fresh=True)
    assert c.given(POINTS) == set()
    store.close()


def test_fresh_reuses_nothing_and_keeps_all(tmp_path):
    path = tmp_path / "h.sqlite"
    store, c = _climb(path, "run-1")
    _rung(c)
    store.close()
    store, c = _climb(path, "run-2", fresh=True)
    _, ran, _ = _rung(c)
    assert ran.asked == POINTS and c.facts().fresh and c.reused == 0
    row = store.h.db.execute("SELECT run_id FROM outcomes LIMIT 1").fetchone()
    assert row["run_id"] == "run-2"                                     # this climb's outcomes replaced the last
    store.close()


def test_rung5_calls_add_up_and_accumulate_runs_them_again(tmp_path):
    path = tmp_path / "h.sqlite"
    p = Point("tiny", 5, (("N", 8),), mode="repeat")
    store, c = _climb(path, "run-1")
    key = c._ensure_key().point(p)
    first = c.kept(key, _clean(p, 100))
    assert first.note.facts.accumulated is None                         # one climb: nothing added up yet
    second = c.kept(key, _clean(p, 50))
    acc = second.note.facts.accumulated
    assert (acc.climbs, acc.calls) == (2, 150) and 0 < acc.bound < 3 / 150 * 2
    row = store.h.db.execute("SELECT calls, climbs FROM outcomes WHERE key = ?", (key,)).fetchone()
    assert (row["calls"], row["climbs"]) == (150, 2)
    c.kept(key, Outcome(p, Status.FAILED))                               # a failure starts the count over
    c.kept(key, _clean(p, 10))
    row = store.h.db.execute("SELECT calls, climbs FROM outcomes WHERE key = ?", (key,)).fetchone()
    assert (row["calls"], row["climbs"]) == (10, 1)
    store.close()
    store, c = _climb(path, "run-2")
    assert list(c.split([p], repr)[0]) == [0]                           # by default reused like any pass
    store.close()
    store, c = _climb(path, "run-3", accumulate=True)
    assert c.split([p], repr)[0] == {}                                  # --accumulate: run again to add calls
    store.close()


def test_the_part_that_changed_since_the_last_climb_is_named(tmp_path):
    path = tmp_path / "h.sqlite"
    h = History(str(path))
    number = h.begin("climb", "tiny", "x.py::tiny", "cpu", "1", "t", "run-1", {})
    h.close()
    store, c = _climb(path, "run-1")
    _rung(c)
    assert c.facts().changed == [] and c.facts().since is None          # no climb before it
    store.close()
    store, c = _climb(path, "run-2", timeout_s=30.0)
    _, ran, _ = _rung(c)
    f = c.facts()
    assert f.changed == ["options"] and f.since == number and ran.asked == POINTS
    store.close()


def test_a_point_that_cannot_be_keyed_runs_and_is_not_kept(tmp_path):
    store, c = _climb(tmp_path / "h.sqlite", "run-1")
    gone = Point("tiny", 2, (("N", 1),), replay=str(tmp_path / "no-capture" / "0"))
    out, ran, _ = _rung(c, [gone])
    assert ran.asked == [gone] and out[0].status == Status.PASSED and store.count() == 0 and c.ran == 1
    store.close()


def test_a_store_that_cannot_be_opened_is_one_line_and_every_point_runs(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    store, c = _climb(tmp_path / "file" / "h.sqlite", "run-1")          # its folder is a file
    assert store.h is None and store.count() == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not used" in err and "every point runs" in err
    _, ran, _ = _rung(c)
    assert ran.asked == POINTS and c.facts().reused == 0
    assert store.safely(lambda: 1 / 0, default="d") == "d"


def test_safely_drops_the_store_at_its_first_error(tmp_path, capsys):
    store = OutcomeStore(str(tmp_path / "h.sqlite"))
    assert store.safely(lambda: 1 / 0, default=7) == 7 and store.h is None
    assert "division by zero" in capsys.readouterr().err
    assert store.safely(lambda: 1) is None                               # dropped: nothing more is asked of it


def test_size_zero_keeps_no_outcome(tmp_path):
    store, c = _climb(tmp_path / "h.sqlite", "run-1", size=0)
    _rung(c)
    assert store.count() == 3
    store.close()
    assert OutcomeStore(str(tmp_path / "h.sqlite")).count() == 0
    assert OutcomeStore(str(tmp_path / "x.sqlite"), size=-5).size == 0


def test_an_outcome_this_kladder_cannot_read_runs_again(tmp_path):
    path = tmp_path / "h.sqlite"
    store, c = _climb(path, "run-1")
    _rung(c)
    store.h.db.execute("UPDATE outcomes SET outcome = ?", (json.dumps({"what": "else"}),))
    store.close()
    store, c = _climb(path, "run-2")
    _, ran, _ = _rung(c)
    assert ran.asked == POINTS
    store.close()


# ---------------------------------------------------------------------------- nvidia-smi's word
SMI = "0, GPU-aaaa-1111, NVIDIA H100 80GB HBM3, 9.0, 550.54\n1, GPU-bbbb-2222, NVIDIA H100 80GB HBM3, 9.0, 550.54\n"


@pytest.fixture
def smi(monkeypatch):
    said = {"out": SMI}

    def run(cmd, **kw):
        if isinstance(said["out"], Exception):
            raise said["out"]
        return types.SimpleNamespace(stdout=said["out"])
    monkeypatch.setattr(subprocess, "run", run)
    import kladder.core.fingerprint as fpmod
    monkeypatch.setattr(fpmod, "driver_version", lambda torch, live: None)
    return said


def test_smi_gives_the_visible_devices(smi):
    fp = smi_fingerprint(env={}, smi="/fake/nvidia-smi")
    assert fp["device"] == {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "arch": "sm_90",
                            "count": 2, "from": "nvidia-smi"}
    assert fp["driver"] == "550.54"                                      # no kernel module's version: smi's
    assert smi_fingerprint(env={"CUDA_VISIBLE_DEVICES": "1"}, smi="x")["device"]["count"] == 1
    assert smi_fingerprint(env={"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}, smi="x")["device"]["count"] == 1
    assert smi_fingerprint(env={"CUDA_VISIBLE_DEVICES": "0,,1"}, smi="x")["device"]["count"] == 1   # CUDA stops at ""


@pytest.mark.parametrize("visible", ["MIG-abc", "7", "GPU-", ""])
def test_smi_says_nothing_where_the_devices_are_not_sure(smi, visible):
    assert smi_fingerprint(env={"CUDA_VISIBLE_DEVICES": visible}, smi="x") is None


@pytest.mark.parametrize("out", ["", "0, GPU-a, H100, 9.0\n", "0, GPU-a, H100, [N/A], 550\n",
                                 subprocess.TimeoutExpired("smi", 10), OSError("gone")])
def test_smi_output_kladder_cannot_read_is_no_fingerprint(smi, out):
    smi["out"] = out
    assert smi_fingerprint(env={}, smi="x") is None


def test_no_smi_no_fingerprint(monkeypatch):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert smi_fingerprint(env={}) is None
