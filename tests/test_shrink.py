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


def test_a_hang_is_not_shrunk_and_says_why():
    from kladder.facts import HangFacts
    from kladder.outcome import Check, Finding, Outcome, Status
    start = Point("tile_tail", 1, (("M", 3), ("N", 2817)))
    hung = Outcome(start, Status.FAILED, findings=[Finding(Check.HANG, facts=HangFacts(timeout_s=3.0))])
    facts = shrink(start, hung, lambda p: pytest.fail("a hang's candidates must not run"), None)
    assert facts["check"] == "hang" and "costs the whole timeout" in facts["cannot_shrink"] and facts["runs"] == 0


def test_a_cliff_point_says_it_cannot_shrink_and_why():
    big = Point("tile_tail", 1, (("M", 1 << 20), ("N", 2049)), kind="big")
    assert "size cliff" in cannot_shrink(big)
    assert "aba mode" in cannot_shrink(dataclasses.replace(big, kind="edge", mode="aba"))
    assert cannot_shrink(dataclasses.replace(big, kind="edge")) is None


def test_a_climb_shrinks_each_rungs_first_failure_in_its_report(tmp_path):
    """`kladder climb` shrinks after its rungs, on its own workers: rung 1's first failure is
    already one tile plus one; rung 2's (M = 8, N = 513, peaked values) shrinks to it, with
    normal values; the JSON and the terminal say so, with the smallest point's repro."""
    import json
    import subprocess
    import sys
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "kladder.cli", "climb", TAIL, "--rungs", "1-2", "--device", "cpu", "-q",
                        "--shrink-s", "300", "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 1, p.stderr
    doc = json.loads(out.read_text())
    by_rung = {s["rung"]: s for s in doc["shrunk"]}
    assert sorted(by_rung) == [1, 2]
    for s in by_rung.values():
        assert s["complete"] and s["cannot_shrink"] is None and s["check"] == "values"
        assert dict(s["smallest"]["dims"]) == {"M": 1, "N": 257}
        assert s["passes_at"]["N"] == {"size": 256, "status": "passed"}
        assert s["repro"].startswith("kladder repro ") and '["N",257]' in s["repro"]
    assert by_rung[1]["failed_id"] == by_rung[1]["smallest_id"]          # rung 1's edge is the minimum already
    two = by_rung[2]
    assert dict(two["from"]["dims"]) == {"M": 8, "N": 513} and two["from"]["values"]
    assert not two["smallest"].get("values")                              # normal inputs fail the same way
    assert "Smallest failing points" in p.stdout
    assert "fails down to M = 1, N = 257, the same check (values)" in p.stdout
    assert "no smaller point fails the same way" in p.stdout


def test_shrink_s_zero_shrinks_nothing_and_a_bad_value_is_a_usage_error(tmp_path):
    import json
    import subprocess
    import sys
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "kladder.cli", "climb", TAIL, "--rungs", "1", "--device", "cpu", "-q",
                        "--shrink-s", "0", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and json.loads(out.read_text())["shrunk"] == []
    assert "Smallest failing points" not in p.stdout
    bad = subprocess.run([sys.executable, "-m", "kladder.cli", "climb", TAIL, "--shrink-s", "-1"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--shrink-s" in bad.stderr and "0 or more" in bad.stderr
