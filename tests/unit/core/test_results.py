"""kladder.core.results: a rung's counts and verdict, a climb's lowest failing rung and exit status."""
import json
import re

import pytest

from kladder.core.facts import KladderErrorFacts
from kladder.core.outcome import STATUSES, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import (INTERRUPTED, NOT_STARTED, NOTHING_RAN, ClimbReport, HolderFacts, RungReport,
                                  StartErrorFacts, new_run_id)


def out(status, rung=1, n=4):
    return Outcome(Point("s", rung, (("N", n),)), Status(status))


def rung(n, *statuses, **kw):
    return RungReport(n, f"rung {n}", [out(s, n, i + 1) for i, s in enumerate(statuses)], **kw)


def report(*rungs_, **kw):
    return ClimbReport("s", "s.py", "cpu", rungs=list(rungs_), **kw)


def test_counts_name_every_status_in_order_zero_included():
    r = rung(1, "passed", "passed", "flaky", "oom")
    assert list(r.counts) == [str(s) for s in STATUSES]
    assert r.counts == {"passed": 2, "failed": 0, "flaky": 1, "skipped": 0, "oom": 1, "broken": 0, "not_judged": 0}


@pytest.mark.parametrize("statuses,kw,verdict", [
    ((), {}, "nothing ran"),
    (("skipped", "skipped"), {}, "nothing ran"),
    (("passed", "skipped"), {}, "passed"),
    (("passed", "failed"), {}, "failed"),
    (("passed", "flaky"), {}, "failed"),                        # a flaky point is a failure, never a pass
    (("passed", "oom"), {}, "incomplete"),
    (("passed", "broken"), {}, "incomplete"),
    (("passed", "not_judged"), {}, "incomplete"),
    (("failed", "broken"), {}, "failed"),                       # a failure outranks what could not be judged
    (("passed",), {"planned": 2}, "incomplete"),                # stopped before its last point: never "passed"
    (("failed",), {"planned": 2}, "failed"),
    (("passed", "passed"), {"planned": 2}, "passed"),
    (("failed",), {"interrupted": True}, "interrupted"),
    (("failed",), {"climbed": False}, "not climbed"),           # not climbed outranks what it holds
    (("failed",), {"climbed": False, "interrupted": True}, "not climbed"),
])
def test_a_rungs_verdict(statuses, kw, verdict):
    assert rung(1, *statuses, **kw).verdict == verdict


def test_failed_counts_failed_and_flaky_only():
    assert rung(1, "flaky").failed and rung(1, "failed").failed
    assert not rung(1, "broken", "oom", "not_judged", "skipped").failed


def test_the_lowest_failing_rung_counts_only_climbed_rungs_interrupted_ones_included():
    rep = report(rung(1, "passed"), rung(2, "failed", climbed=False), rung(3, "flaky", interrupted=True),
                 rung(5, "failed"))
    assert rep.lowest_failing_rung == 3
    assert [o.point.rung for o in rep.failures] == [2, 3, 5]
    assert report(rung(1, "passed"), rung(2, "broken")).lowest_failing_rung is None


def test_outcomes_are_every_rungs_in_order():
    rep = report(rung(2, "passed", "failed"), rung(1, "skipped"))
    assert [(o.point.rung, o.status) for o in rep.outcomes] == [(2, "passed"), (2, "failed"), (1, "skipped")]


@pytest.mark.parametrize("rungs_,kw,code", [
    ((), {}, NOTHING_RAN),                                      # a climb that generated nothing must not pass
    (("skipped", "skipped"), {}, NOTHING_RAN),
    (("passed", "skipped"), {}, 0),
    (("passed", "failed"), {}, 1),
    (("passed", "broken"), {}, 1),
    (("passed", "oom"), {}, 1),
    (("passed", "not_judged"), {}, 1),
    (("passed", "failed"), {"interrupted": True}, INTERRUPTED),
    (("skipped",), {"interrupted": True}, INTERRUPTED),
])
def test_the_exit_code(rungs_, kw, code):
    assert report(rung(1, *rungs_), **kw).exit_code == code


def test_the_exit_code_precedence_start_error_then_kladder_error_then_interruption():
    start = StartErrorFacts(kind="usage", message="--rungs 9: ...")
    bug = KladderErrorFacts(error="RuntimeError", text="boom", trace="...")
    assert report(rung(1, "passed"), start_error=start, kladder_error=bug, interrupted=True).exit_code == NOT_STARTED == 2
    assert report(rung(1, "passed"), kladder_error=bug, interrupted=True).exit_code == 1
    assert report(kladder_error=bug).exit_code == 1            # no point, but kladder's own error: never 5


class _Golden:
    def __init__(self, fails):
        self.fails = fails


def test_a_strict_golden_change_fails_a_climb_that_passed_and_a_lenient_one_does_not():
    assert report(rung(1, "passed"), golden=_Golden(True)).exit_code == 1
    assert report(rung(1, "passed"), golden=_Golden(False)).exit_code == 0
    assert report(rung(1, "skipped"), golden=_Golden(False)).exit_code == NOTHING_RAN


def test_run_ids_carry_time_and_process_and_differ_within_a_second():
    ids = {new_run_id() for _ in range(50)}
    assert all(re.fullmatch(r"\d{8}-\d{6}-\d+-[0-9a-f]{4}", i) for i in ids)
    assert len(ids) > 40                 # 4 random hex digits: 50 ids in one second nearly never collide
    assert report().run_id != report().run_id


def test_a_usage_start_error_leaves_out_the_device_fields_in_its_json():
    usage = StartErrorFacts(kind="usage", message="bad")
    d = usage.to_dict()
    assert d["kind"] == "usage" and d["message"] == "bad"
    assert not set(d) & {"what", "error", "waited_s", "gpu", "free_bytes", "total_bytes", "holders"}
    assert StartErrorFacts.from_dict(json.loads(json.dumps(d, allow_nan=False))) == usage


def test_a_device_start_error_round_trips_with_its_holders():
    dev = StartErrorFacts(kind="device", what="a CUDA context", error="CUDA error: out of memory", waited_s=3.5,
                          gpu="H100", free_bytes=0, total_bytes=80 << 30,
                          holders=[HolderFacts(pid=12, name="python", used_bytes=None)], message="the device is full")
    d = dev.to_dict()
    assert d["holders"] == [{"pid": 12, "name": "python", "used_bytes": None}] and d["total_bytes"] == 80 << 30
    back = StartErrorFacts.from_dict(json.loads(json.dumps(d, allow_nan=False)))
    assert back == dev and isinstance(back.holders[0], HolderFacts)


def test_shard_facts_leave_out_what_is_unset_and_round_trip():
    from kladder.core.results import ShardFacts
    one = ShardFacts(index=1, count=3, options={"seed": 0, "rungs": [1, 2]}, dealt={"1": 5}, positions={"1": [0, 3]})
    d = one.to_dict()
    assert "costs" not in d and "merged" not in d                  # opt(): written only when set
    assert ShardFacts.from_dict(json.loads(json.dumps(d, allow_nan=False))) == one
    merged = ShardFacts(index=None, count=3, options={}, dealt={}, positions={}, merged=[0, 1, 2])
    assert merged.to_dict()["merged"] == [0, 1, 2] and merged.to_dict()["index"] is None
