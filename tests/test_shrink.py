"""kladder.climbing.shrink: a failing point shrunk to the smallest that fails the same way, each
candidate a real run through the Runner; against a hand-computed minimum."""
import dataclasses
import os

import pytest

from kladder.climbing.ladder import Runner
from kladder.gen.load import load_spec
from kladder.core.point import Point
from kladder.climbing.shrink import cannot_shrink, shrink

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
    # the edge holds under other inputs: the shape decides it
    cause = facts["cause"]
    assert cause["kind"] == "shape" and cause["values"] == [] and cause["milder"] is None and cause["contiguous"] is None
    assert cause["edges"] == [{"dim": "N", "fails": 257, "passes": 256, "seeds": 3, "fails_under": 3, "passes_under": 3,
                               "moved_down": 0}]


def test_a_point_that_passes_is_not_shrunk(runner):
    start = Point("tile_tail", 1, (("M", 1), ("N", 256)))
    ok = runner.run(start)
    facts = shrink(start, ok, runner.run, runner.spec)
    assert facts["check"] is None and facts["smallest"] is None and facts["runs"] == 0


def test_a_hang_is_not_shrunk_and_says_why():
    from kladder.core.facts import HangFacts
    from kladder.core.outcome import Check, Finding, Outcome, Status
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
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", TAIL, "--rungs", "1-2", "--device", "cpu", "-q",
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
    assert "cause: a shape edge: N = 257 fails and N = 256 passes, under 3 seeds each" in p.stdout
    assert two["cause"]["milder"] == "failed" and two["cause"]["kind"] == "shape"   # peaked values are not the cause


def test_shrink_s_zero_shrinks_nothing_and_a_bad_value_is_a_usage_error(tmp_path):
    import json
    import subprocess
    import sys
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", TAIL, "--rungs", "1", "--device", "cpu", "-q",
                        "--shrink-s", "0", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 1 and json.loads(out.read_text())["shrunk"] == []
    assert "Smallest failing points" not in p.stdout
    bad = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", TAIL, "--shrink-s", "-1"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--shrink-s" in bad.stderr and "0 or more" in bad.stderr


# ---------------------------------------------------------------------------- what decides it (a kernel's verdicts faked)
def _fake(fails):
    """A `run` whose verdict is fails(point): a values failure, else a pass (no worker, no kernel)."""
    from kladder.core.facts import ValuesFacts
    from kladder.core.outcome import Check, Finding, Outcome, Status

    def run(p):
        if fails(p):
            return Outcome(p, Status.FAILED, findings=[Finding(Check.VALUES, facts=ValuesFacts())])
        return Outcome(p, Status.PASSED)
    return run


def _spec(**dims):
    from types import SimpleNamespace
    import kladder as kl
    return SimpleNamespace(dims={d: kl.Dim(1, hi) for d, hi in dims.items()})


def _shrunk(start, fails, **dims):
    run = _fake(fails)
    first = run(start)
    facts = shrink(start, first, run, _spec(**dims), budget_s=60)
    facts.update(rung=start.rung, failed_id=start.id, repro="kladder repro ...")
    return facts


def _words(facts):
    from kladder.report.words.shrinking import shrunk_lines
    return "\n".join(shrunk_lines(facts))


def _huge_somewhere(p):
    """x: huge overflows a float16 sum wherever a huge element lands: a quarter of the elements,
    so a tiny point has one under some seeds and not others."""
    if dict(p.values).get("x") != "huge":
        return False
    n = p.sizes["M"] * p.sizes["N"]
    return n >= 4 or p.seed % 4 == 0


def test_values_that_fail_at_every_shape_are_named_the_cause():
    start = Point("f16acc", 2, (("M", 17), ("N", 2880)), values=(("x", "huge"),))
    facts = _shrunk(start, _huge_somewhere, M=4096, N=16384)
    c = facts["cause"]
    assert dict(facts["smallest"]["dims"]) == {"M": 1, "N": 1} and facts["smallest"]["values"] == [["x", "huge"]]
    assert c["kind"] == "values" and c["milder"] == "passed" and c["floors"] and c["every_shape"], c
    assert c["milder_at"] == [["M", 17], ["N", 2880]]
    text = _words(facts)
    assert "fails for x: huge at every shape tried" in text and "down to M = 1, N = 1" in text, text
    assert "with normal values it passes at M = 17, N = 2880" in text and "the values decide it" in text
    assert "shape edge:" not in text


def _overflows(p):
    """A float16 total that overflows once the row's sum of squares passes 65504: 100 a column
    with peaked/10 values, give or take the seed's draw (the edge moves with the inputs)."""
    if dict(p.values).get("x") != "peaked/10":
        return False
    return p.sizes["N"] * 100 + (p.seed % 97 - 48) * 40 > 65504


def test_an_edge_that_moves_with_the_seed_is_not_called_a_shape_edge():
    """The issue's float16 accumulation: "fails down to M = 1, N = 593 ... N = 592 passed" read
    like a shape edge; the sizes around it run again under other seeds say the values decide it."""
    start = Point("f16acc", 2, (("M", 17), ("N", 2880)), values=(("x", "peaked/10"),), seed=12345)
    facts = _shrunk(start, _overflows, M=4096, N=16384)
    c = facts["cause"]
    assert c["kind"] == "values" and c["milder"] == "passed" and not c["floors"], c
    (edge,) = c["edges"]
    assert edge["dim"] == "N" and (edge["fails_under"] < 3 or edge["passes_under"] < 3 or edge["moved_down"]), edge
    text = _words(facts)
    assert "the values decide it, not a shape edge" in text and "moves with the inputs" in text, text
    assert "a shape edge:" not in text


def test_normal_values_whose_edge_moves_say_the_inputs_decide_it():
    start = Point("acc", 1, (("M", 8), ("N", 4000)), seed=777)
    facts = _shrunk(start, lambda p: p.sizes["N"] + (p.seed % 101) * 5 > 1500, M=64, N=8192)
    assert facts["cause"]["kind"] == "inputs", facts["cause"]
    assert "the values decide it, not a shape edge: where it starts moves with the inputs" in _words(facts)


def test_a_failure_at_every_floor_with_normal_values_names_neither():
    start = Point("always", 1, (("M", 8), ("N", 4000)))
    facts = _shrunk(start, lambda p: True, M=64, N=8192)
    assert dict(facts["smallest"]["dims"]) == {"M": 1, "N": 1}
    assert facts["cause"]["kind"] == "floor" and facts["cause"]["floors"]
    assert "fails at the floor of every dim (M = 1, N = 1) with normal values: no value kind is needed" in _words(facts)


def test_values_not_needed_are_dropped_and_a_stable_edge_is_the_shape():
    start = Point("tail", 2, (("M", 8), ("N", 2817)), values=(("x", "peaked/10"),))
    facts = _shrunk(start, lambda p: p.sizes["N"] > 256 and p.sizes["N"] % 256 != 0, M=64, N=8192)
    c = facts["cause"]
    assert c["kind"] == "shape" and c["milder"] == "failed" and c["values"] == [] and not facts["smallest"].get("values")
    assert "a shape edge: N = 257 fails and N = 256 passes, under 3 seeds each" in _words(facts)


def test_a_budget_spent_first_leaves_the_cause_unsettled():
    start = Point("tail", 1, (("M", 8), ("N", 2817)))
    run = _fake(lambda p: p.sizes["N"] > 256)
    facts = shrink(start, run(start), run, _spec(M=64, N=8192), budget_s=0.0)
    assert facts["cause"]["kind"] == "unsettled" and not facts["complete"]


def test_a_layout_the_failure_needs_is_named_with_its_edge():
    """The zoo's assumes_contiguous: a sliced x is wrong from two rows on (the row stride is taken
    as the row length), contiguous inputs pass: the edge at M = 2 is named with the layout."""
    start = Point("softmax", 3, (("M", 17), ("N", 17)), layouts=(("x", "sliced"),))
    facts = _shrunk(start, lambda p: bool(p.layouts) and p.sizes["M"] >= 2, M=64, N=64)
    c = facts["cause"]
    assert c["kind"] == "shape" and c["layouts"] == [["x", "sliced"]] and c["contiguous"] == "passed", c
    assert dict(facts["smallest"]["dims"]) == {"M": 2, "N": 1}
    assert ("a shape edge with x: sliced: M = 2 fails and M = 1 passes, under 3 seeds each; with contiguous inputs it "
            "passes at M = 17, N = 17") in _words(facts)
    every = _shrunk(start, lambda p: bool(p.layouts), M=64, N=64)
    assert every["cause"]["kind"] == "layout"
    assert "fails for x: sliced at every shape tried" in _words(every) and "the layout decides it" in _words(every)
