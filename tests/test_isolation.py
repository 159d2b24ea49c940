"""A point that raises, segfaults, hangs or writes past its output is reported as exactly
that, and the climb goes on in a fresh worker with nothing lost."""
import json
import os

import pytest

import kladder as kl

HERE = os.path.dirname(__file__)
FAULTY = os.path.join(HERE, "specs", "faulty.py")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    log = tmp_path_factory.mktemp("log") / "scale.jsonl"
    return kl.climb(FAULTY, device="cpu", timeout_s=3, log_path=str(log)), log


def _by_n(report):
    return {o.point.sizes["N"]: o for o in report.outcomes}


def test_each_misbehaviour_is_named(report):
    by_n = _by_n(report[0])
    assert by_n[3].status == "failed" and by_n[3].headline.check == "raised"
    assert "RuntimeError: unsupported N" in by_n[3].headline.message
    assert by_n[5].headline.check == "crashed" and "SIGSEGV" in by_n[5].headline.message
    assert "faulty.py:" in by_n[5].headline.message          # the innermost frames are named
    assert by_n[7].headline.check == "hang" and "3 s" in by_n[7].headline.message
    assert by_n[6].headline.check == "guard" and "after the end of `out`" in by_n[6].headline.message


def test_the_climb_goes_on_after_each(report):
    by_n = _by_n(report[0])
    for n in (1, 2, 4, 8, 9):
        assert by_n[n].status == "passed", (n, by_n[n])
    assert report[0].exit_code == 1


def test_outcomes_are_logged_as_they_arrive(report):
    rows = [json.loads(line) for line in report[1].read_text().splitlines()]
    assert len(rows) == len(report[0].outcomes)
    assert {r["status"] for r in rows} == {"passed", "failed"}
    assert all(r["repro"].startswith("kladder repro ") for r in rows)
