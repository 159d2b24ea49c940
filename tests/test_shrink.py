"""kladder.shrink: a failing point shrunk to the smallest that fails the same way, each
candidate a real run through the Runner; against a hand-computed minimum."""
import dataclasses
import os

import pytest

from kladder.ladder import Runner
from kladder.load import load_spec
from kladder.point import Point
from kladder.shrink import cannot_shrink, shrink

HERE = os.path.dirname(__file__)
TAIL = os.path.join(HERE, "specs", "tile_tail.py")


@pytest.fixture(scope="module")
def runner():
    spec = load_spec(TAIL)
    r = Runner(TAIL, spec, "cpu")
    yield r
    r.close()


def test_a_tile_tail_bug_shrinks_to_one_tile_plus_one(runner):
    start = Point("tile_tail", 1, (("M", 3), ("N", 2817)), why="a middle tile and a tail")
    first = runner.run(start)
    assert str(first.status) == "failed"
    facts = shrink(start, first, runner.run, runner.spec, budget_s=300)
    assert facts["complete"] and facts["cannot_shrink"] is None
    assert dict(facts["smallest"]["dims"]) == {"M": 1, "N": 257}          # max(1, 257 // 256) tiles: one element unwritten
    assert facts["passes_at"] == {"N": {"size": 256, "status": "passed"}}  # M's floor (1) still fails: no M entry
    assert facts["check"] == first.headline.check.value
    assert 10 <= facts["runs"] <= 30


def test_a_point_that_passes_is_not_shrunk(runner):
    start = Point("tile_tail", 1, (("M", 1), ("N", 256)))
    ok = runner.run(start)
    facts = shrink(start, ok, runner.run, runner.spec)
    assert facts["check"] is None and facts["smallest"] is None and facts["runs"] == 0


def test_a_cliff_point_says_it_cannot_shrink_and_why():
    big = Point("tile_tail", 1, (("M", 1 << 20), ("N", 2049)), kind="big")
    assert "size cliff" in cannot_shrink(big)
    assert "aba mode" in cannot_shrink(dataclasses.replace(big, kind="edge", mode="aba"))
    assert cannot_shrink(dataclasses.replace(big, kind="edge")) is None


def test_a_climbs_first_failure_shrinks_to_one_tile_plus_one():
    """The hook a climb calls before its runner closes (kladder.shrink.shrink_failures), here on
    the report kladder.climb returns, with a runner of its own."""
    import kladder
    from kladder.shrink import shrink_failures
    report = kladder.climb(TAIL, rungs=1, device="cpu")
    assert report.exit_code == 1
    spec = load_spec(TAIL)
    r = Runner(TAIL, spec, "cpu")
    try:
        shrunk = shrink_failures(report, r, budget_s=300)
    finally:
        r.close()
    assert len(shrunk) == 1 and shrunk[0]["rung"] == 1
    assert dict(shrunk[0]["smallest"]["dims"]) == {"M": 1, "N": 257}
    assert shrunk[0]["passes_at"]["N"]["size"] == 256
    assert shrunk[0]["repro"].startswith("kladder repro ") and '["N",257]' in shrunk[0]["repro"]
