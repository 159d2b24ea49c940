"""climbing/ladder.py: the climb's decisions with small fakes (no worker, no process): which points
are skipped and why, how points are batched and lanes counted, which rungs are planned, climbed,
stopped early (-x) or marked not climbed, which points run first (--lf), the repro command, and
the JSON-lines log's records. The Runner's re-run rules are tests/test_overlap.py's and
tests/test_rerun.py's."""
import contextlib
import errno
import json
import os
import pathlib
import shlex
import threading

import pytest

import kladder as kl
from kladder.climbing import ladder
from kladder.climbing.ladder import (
    Gate,
    Log,
    Runner,
    _batches,
    _rung_options,
    early_lanes,
    end_climb,
    plan_rungs,
    range_note,
    repro_command,
    rung_points,
    skip_note,
)
from kladder.climbing.session import Options
from kladder.core.outcome import Check, Finding, Load, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.core.rungs import BUILT, RUNGS
from kladder.core.sizes import budget_for
from kladder.core.results import StartErrorFacts


def _twice(x):
    return 2 * x


SPEC = kl.Spec("tiny", kernel=_twice, reference=_twice, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 1 << 34)})


def _pt(n=4, rung=1, **kw):
    return Point("tiny", rung, (("N", n),), **kw)


# ---------------------------------------------------------------------------- the repro command
def test_repro_command_leaves_out_defaults_and_words_and_quotes_the_ref():
    cmd = repro_command("my specs/s.py::tiny", "cpu", _pt(4, why="a tail", seed=9))
    argv = shlex.split(cmd)
    assert argv[:3] == ["kladder", "repro", "my specs/s.py::tiny"] and argv[-2:] == ["--device", "cpu"]
    d = json.loads(argv[3])
    assert not {"why", "config", "kind", "needs", "mode", "partner"} & set(d)
    assert (d["spec"], d["rung"], d["dims"], d["seed"]) == ("tiny", 1, [["N", 4]], 9)
    assert Point.from_dict(d) == _pt(4, seed=9)                           # what it prints is the point itself
    big = json.loads(shlex.split(repro_command("s.py", "cuda", _pt(4, kind="big", mode="graph", seed=9)))[3])
    assert (big["kind"], big["mode"]) == ("big", "graph")


# ---------------------------------------------------------------------------- skips
def test_a_gpu_point_is_skipped_on_the_cpu_with_its_need():
    note = skip_note(SPEC, _pt(4, needs="cuda"), "cpu", None)
    assert note.kind == NoteKind.GPU_POINT and note.facts.need_bytes == 4 * 4 * 2
    huge = skip_note(SPEC, _pt(1 << 33), "cpu", None)                    # past every small budget: a GPU point
    assert huge.kind == NoteKind.GPU_POINT
    assert skip_note(SPEC, _pt(4), "cpu", None) is None
    assert skip_note(SPEC, _pt(4, needs="cuda", mode="model"), "cpu", None) is None   # the model sizes its own


def test_on_cuda_a_point_past_the_free_memory_headroom_is_skipped():
    need = 4 * 4 * 2
    at = int(need / ladder.MEMORY_HEADROOM) + 1
    assert skip_note(SPEC, _pt(4), "cuda", at) is None
    note = skip_note(SPEC, _pt(4), "cuda", at - 2)
    assert note.kind == NoteKind.NO_DEVICE_MEMORY and (note.facts.need_bytes, note.facts.free_bytes) == (need, at - 2)
    assert skip_note(SPEC, _pt(1 << 33), "cuda", None) is None           # free memory not known: it runs


def test_a_value_kind_outside_the_inputs_range_is_skipped_naming_both():
    spec = kl.Spec("ranged", kernel=_twice, reference=_twice,
                   args={"x": kl.Tensor("N", dtype="float32", range=(2, 3))}, returns=kl.Tensor("N", like="x"),
                   dims={"N": kl.Dim(1, 8)})
    p = Point("ranged", 2, (("N", 4),), values=(("x", "ones"),))
    note = range_note(spec, p)
    assert note.kind == NoteKind.VALUE_OUT_OF_RANGE
    assert (note.facts.arg, note.facts.value, note.facts.lo, note.facts.hi, note.facts.why) == ("x", "ones", 2.0, 3.0,
                                                                                                  "no_one")
    assert skip_note(spec, p, "cpu", None).kind == NoteKind.VALUE_OUT_OF_RANGE
    assert range_note(spec, Point("ranged", 2, (("N", 4),), values=(("x", "peaked/10"),))) is None
    assert range_note(SPEC, _pt(4, rung=2, values=(("x", "ones"),))) is None          # no range declared


# ---------------------------------------------------------------------------- lanes and batches
def test_a_big_point_on_cuda_is_a_batch_of_its_own():
    a, b, big, c = _pt(1), _pt(2), _pt(3, kind="big"), _pt(4)
    assert list(_batches([a, b, big, c], "cuda")) == [[a, b], [big], [c]]
    assert list(_batches([big, a], "cuda")) == [[big], [a]]
    assert list(_batches([a, b, big, c], "cpu")) == [[a, b, big, c]]
    assert list(_batches([], "cuda")) == []


@pytest.mark.parametrize("jobs,lanes", [(1, 1), (2, 1), (3, 1), (4, 2), (9, 4)])
def test_early_lanes_are_one_or_half_the_jobs(jobs, lanes):
    assert early_lanes(jobs) == lanes


def test_on_cuda_a_host_with_four_cores_a_job_gives_the_early_points_as_many_lanes_as_jobs():
    assert early_lanes(4, "cuda", 16) == 4 and early_lanes(4, "cuda", 64) == 4     # the H100 host: 16 cores, 4 jobs
    assert early_lanes(4, "cuda", 15) == 2 and early_lanes(4, "cuda", None) == 2   # fewer cores: half the jobs
    assert early_lanes(4, "cpu", 64) == 2                                         # the CPU's jobs are its cores already


class _Scripted(Runner):
    """A Runner whose lane runs are scripted by status (no worker): each run recorded as (id, thread)."""

    def __init__(self, status=lambda p: Status.PASSED, jobs=1):
        from kladder.run.pool import Pool
        pool = Pool("unused", "cpu")
        pool.expect_fresh = lambda *a, **k: None
        super().__init__("s.py::tiny", SPEC, "cpu", jobs=jobs, pool=pool)
        self.status, self.runs = status, []

    @property
    def fingerprint(self):
        return {"torch": "fake"}

    def _on_lane(self, point, timeout, fresh, alone=False, wait_memory=False):
        self.runs.append((point.id, threading.current_thread().name))
        s = self.status(point)
        return Outcome(point, s, findings=[Finding(Check.VALUES, "y")] if s == Status.FAILED else []), Load()


@pytest.fixture
def scripted(monkeypatch):
    monkeypatch.setattr(ladder, "worker_timeout", lambda *a, **k: 60.0)
    made = []

    def make(status=lambda p: Status.PASSED, jobs=1):
        r = _Scripted(status, jobs)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


@pytest.mark.parametrize("points,jobs,threads", [(7, 4, False), (8, 4, True), (8, 1, False)])
def test_a_second_lane_only_with_a_lane_of_points_to_share(scripted, points, jobs, threads):
    r = scripted(jobs=jobs)
    pts = [_pt(n) for n in range(1, points + 1)]
    out = list(r.run_all(pts))
    assert [o.point for o in out] == pts                                  # in the order given, whatever ran first
    assert all(o.repro.startswith("kladder repro") for o in out)
    on_lanes = {name for _, name in r.runs}
    assert (on_lanes != {"MainThread"}) == threads


@pytest.mark.parametrize("mode,spares,threads", [("repeat", 0, False), ("repeat", 1, False), ("repeat", 2, True),
                                                 ("calls", 3, True), ("eager", 3, False)])
def test_points_that_run_for_a_time_budget_take_the_workers_started_already(scripted, monkeypatch, mode, spares,
                                                                            threads):
    # on CUDA the climb starts --jobs workers at once: rung 5's few 1-2 s points use them; three
    # quick points stay on one lane (a fresh worker's first call costs more than they do)
    r = scripted(jobs=4)
    monkeypatch.setattr(type(r.pool), "spares_started", property(lambda self: spares))
    pts = [_pt(n, rung=5 if mode != "eager" else 1, mode=mode) for n in range(1, 4)]
    assert [o.point for o in r.run_all(pts)] == pts
    assert ({name for _, name in r.runs} != {"MainThread"}) == threads


def test_a_skipped_point_never_reaches_a_lane(scripted):
    r = scripted()
    out = list(r.run_all([_pt(4, needs="cuda"), _pt(4)]))
    assert [o.status for o in out] == [Status.SKIPPED, Status.PASSED] and [i for i, _ in r.runs] == [_pt(4).id]


def test_only_a_rungs_first_failure_is_re_run_and_failures_are_kept_in_order(scripted):
    r = scripted(status=lambda p: Status.FAILED if p.sizes["N"] in (2, 3) else Status.PASSED)
    out = list(r.run_all([_pt(1), _pt(2), _pt(3)]))
    assert [o.status for o in out] == [Status.PASSED, Status.FAILED, Status.FAILED]
    runs = [i for i, _ in r.runs]
    assert runs.count(_pt(2).id) == 3 and runs.count(_pt(3).id) == 2      # replayed; the first alone once more
    assert r.failed == [_pt(2), _pt(3)] and r.failed_rungs == {1}


# ---------------------------------------------------------------------------- the gate
def test_a_run_alone_waits_for_the_shared_and_holds_back_new_ones():
    gate = Gate()
    order, entered_alone, go = [], threading.Event(), threading.Event()

    def alone():
        with gate.alone():
            entered_alone.set()
            order.append("alone")
            go.wait(10)

    with gate.shared():
        t = threading.Thread(target=alone)
        t.start()
        assert not entered_alone.wait(0.1)                               # a shared hold is in flight
    assert entered_alone.wait(10)

    def shared():
        with gate.shared():
            order.append("shared")
    s = threading.Thread(target=shared)
    s.start()
    s.join(0.1)
    assert order == ["alone"]                                            # held back while the alone run runs
    go.set()
    t.join(10)
    s.join(10)
    assert order == ["alone", "shared"]


# ---------------------------------------------------------------------------- rungs planned, climbed, stopped
def test_plan_rungs_climbs_the_built_rungs_asked_for_and_says_why_not_the_others():
    report = ClimbReport("tiny", "s.py", "cpu")
    plan_rungs(report, (1, 3))
    assert [r.rung for r in report.rungs] == [r.number for r in RUNGS]
    by = {r.rung: r for r in report.rungs}
    assert by[1].climbed and by[3].climbed and not by[2].climbed and by[2].note == "not asked for (--rungs)"
    before = list(report.rungs)
    plan_rungs(report, BUILT)                                             # planned once
    assert report.rungs == before


def test_end_climb_marks_rungs_that_never_started():
    def report(**kw):
        r = ClimbReport("tiny", "s.py", "cpu", **kw)
        plan_rungs(r, (1, 2))
        r.rungs[0].outcomes = [Outcome(_pt(1), Status.PASSED)]
        return r
    r = report()
    end_climb(r, (1, 2), interrupted=True)
    by = {x.rung: x for x in r.rungs}
    assert r.interrupted and by[1].climbed and (by[2].climbed, by[2].note) == (False, "not climbed (interrupted)")
    r = report(start_error=StartErrorFacts(kind="device", error="out of memory", message="no device"))
    end_climb(r, (1, 2), interrupted=False)
    assert not r.interrupted and r.rungs[1].note == "not climbed (the climb could not start)"
    r = report()
    end_climb(r, (1, 2), interrupted=False)
    assert r.rungs[1].climbed and not r.interrupted                       # a rung that ran nothing is still climbed


def test_rung_options_give_rung_2_its_replay_and_rung_5_its_budget_and_failures(scripted):
    r = scripted()
    r.failed = [_pt(3)]
    opts = Options(replay="/cap", repeat=10, repeat_s=2.0, budget="release")
    assert _rung_options(2, opts, r) == {"replay": "/cap"}
    assert _rung_options(2, Options(), r) == {}
    assert _rung_options(5, opts, r) == {"repeat": 10, "repeat_s": 2.0, "failed": (_pt(3),), "time_budget": "release"}
    assert _rung_options(1, opts, r) == {}


def test_rung_points_shift_every_seed_by_the_climbs_seed():
    budget = budget_for("cpu")
    base, shifted = list(rung_points(SPEC, 1, budget)), list(rung_points(SPEC, 1, budget, seed=5))
    assert base and [p.shifted(5) for p in base] == shifted
    assert all(a.seed != b.seed for a, b in zip(base, shifted, strict=True))


def _climb(runner, monkeypatch, **opts):
    monkeypatch.setattr(ladder, "Runner", lambda *a, **k: runner)
    seen, ended = [], []
    o = Options(rungs=(1, 2, 3), device="cpu", on_outcome=seen.append, on_end=ended.append, **opts)
    report = ladder.climb("s.py::tiny", SPEC, o)
    assert ended == [report] and [x.point for x in seen] == [x.point for x in report.outcomes]
    return report


def test_exitfirst_stops_after_the_first_rung_with_a_failure(scripted, monkeypatch):
    fails_at_1 = (lambda p: Status.FAILED if p.rung == 1 else Status.PASSED)
    report = _climb(scripted(fails_at_1), monkeypatch, exitfirst=True)
    by = {r.rung: r for r in report.rungs}
    assert report.stopped_at == 1 and by[1].climbed and by[1].failed
    assert (by[2].climbed, by[2].stopped, by[3].stopped, by[2].outcomes) == (False, True, True, [])
    assert report.exit_code == 1
    whole = _climb(scripted(fails_at_1), monkeypatch)
    assert whole.stopped_at is None and all(whole.rungs[i].outcomes for i in (1, 2))
    clean = _climb(scripted(), monkeypatch, exitfirst=True)
    assert clean.stopped_at is None and clean.exit_code == 0 and {r.rung for r in clean.rungs if r.outcomes} == {1, 2, 3}


def test_last_times_failures_run_first_in_their_rung(scripted, monkeypatch):
    rung1 = list(rung_points(SPEC, 1, budget_for("cpu")))
    last = rung1[-1]
    report = _climb(scripted(), monkeypatch, first=frozenset({last.id}))
    got = [o.point for o in report.rungs[0].outcomes]
    assert got[0] == last and got[1:] == rung1[:-1] and report.rungs[0].planned == len(rung1)


# ---------------------------------------------------------------------------- the log
def _log(path, report=None):
    report = report or ClimbReport("tiny", "s.py::tiny", "cpu")
    return Log(str(path), report, Options(rungs=(1,))), report


def test_the_log_is_a_header_a_record_a_point_and_an_end_each_one_line(tmp_path):
    log, report = _log(tmp_path / "l.jsonl")
    assert log.working and log.created
    log.point(Outcome(_pt(1), Status.PASSED))
    report.rungs = [RungReport(1, "shapes", outcomes=[Outcome(_pt(1), Status.PASSED)])]
    log.close(report)
    lines = (tmp_path / "l.jsonl").read_text().splitlines()
    docs = [json.loads(x, parse_constant=lambda c: pytest.fail(c)) for x in lines]
    assert [d["record"] for d in docs] == ["header", "point", "end"]
    assert {d["run_id"] for d in docs} == {report.run_id} and log.records == 3 and not log.working
    log.close(report)                                                     # closed once
    assert len((tmp_path / "l.jsonl").read_text().splitlines()) == 3


def test_a_log_appended_to_is_not_made_again(tmp_path):
    (tmp_path / "l.jsonl").write_text('{"record": "header", "run_id": "other"}\n')
    log, report = _log(tmp_path / "l.jsonl")
    assert not log.created
    log.close(report)
    assert json.loads((tmp_path / "l.jsonl").read_text().splitlines()[0])["run_id"] == "other"


def test_a_log_that_cannot_be_made_says_so_once_and_the_climb_goes_on(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    log, report = _log(tmp_path / "f" / "l.jsonl")
    assert not log.working
    err = capsys.readouterr().err
    assert "could not be written" in err and "was not made" in err and err.count("\n") == 1
    log.point(Outcome(_pt(1), Status.PASSED))
    log.close(report)
    assert capsys.readouterr().err == ""


class _ShortOs:
    """os whose write takes `room` bytes in all, then fails with ENOSPC (a disk that fills)."""

    def __init__(self, room):
        self.room = room

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = os.write(fd, bytes(data[: min(3, self.room)]))
        self.room -= n
        return n


def test_a_torn_line_is_taken_back_and_the_log_keeps_whole_records(tmp_path, monkeypatch, capsys):
    path = tmp_path / "l.jsonl"
    log, report = _log(path)
    size = path.stat().st_size
    monkeypatch.setattr(ladder, "os", _ShortOs(10))
    log.point(Outcome(_pt(1), Status.PASSED))
    monkeypatch.setattr(ladder, "os", os)
    assert path.stat().st_size == size and not log.working                 # the 10 bytes that landed are gone
    assert "keeps its first 1 whole records" in capsys.readouterr().err
    assert [json.loads(x)["record"] for x in path.read_text().splitlines()] == ["header"]


def test_a_log_that_took_no_line_is_removed_when_this_climb_made_it(tmp_path, monkeypatch, capsys):
    path = tmp_path / "l.jsonl"
    monkeypatch.setattr(ladder, "os", _ShortOs(0))
    log, _ = _log(path)
    monkeypatch.setattr(ladder, "os", os)
    assert not path.exists() and "was removed (empty)" in capsys.readouterr().err


def test_take_back_leaves_a_file_another_climb_appended_to(tmp_path):
    path = str(tmp_path / "l")
    mine = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    other = os.open(path, os.O_WRONLY | os.O_APPEND)
    with contextlib.ExitStack() as stack:
        stack.callback(os.close, mine)
        stack.callback(os.close, other)
        os.write(mine, b"whole\ntor")
        ladder._take_back(mine, 3)
        assert pathlib.Path(path).read_text() == "whole\n"
        os.write(mine, b"tor")
        os.write(other, b"theirs\n")
        ladder._take_back(mine, 3)                                       # not the file's last bytes: left
        assert pathlib.Path(path).read_text() == "whole\ntortheirs\n"
