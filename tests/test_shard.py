"""`kladder climb --shard I/N` and `kladder merge`: the shards' points are one climb's, each once,
and their merged report has one climb's verdicts and exit status."""
import copy
import json
import os
import random
import sys

import pytest
from conftest import report_json, run_cli

from kladder.climbing.ladder import rung_points
from kladder.gen.load import load_spec
from kladder.climbing.merge import MergeError, merge
from kladder.climbing.shard import Costs, Shard, ShardError, Slicer, deal, parse_shard
from kladder.core.sizes import budget_for

HERE = os.path.dirname(__file__)
# fails at rung 1 (its last partial tile is never written) and passes elsewhere; plain torch, so
# rungs 1-2 on the CPU cost seconds (a zoo case's Triton kernel runs in the interpreter)
CASE = os.path.join(os.path.dirname(__file__), "specs", "tile_tail.py")


def kladder(*args, timeout=900):
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True,
                   timeout=timeout, cwd=HERE)


@pytest.mark.parametrize("text", ["0/3", "4/3", "a/b", "3", "1/0", "-1/3"])
def test_a_bad_shard_names_the_flag_and_the_fix(text):
    with pytest.raises(ShardError) as e:
        parse_shard(text)
    assert f"--shard {text!r}" in str(e.value) and "1 <= I <= N" in str(e.value)


def test_a_bad_shard_exits_2_before_any_point_runs():
    p = kladder("climb", os.path.join("specs", "trivial.py"), "--device", "cpu", "--shard", "4/3")
    assert p.returncode == 2
    assert "--shard '4/3'" in p.stderr and "--shard 1/3" in p.stderr
    assert "passed" not in p.stdout


def _points():
    spec = load_spec(CASE)
    return [p for r in (1, 2) for p in rung_points(spec, r, budget_for("cpu"))]


def _dealt(points, count, costs):
    loads = [[0.0] * count for _ in range(count)]                 # each shard deals on its own, from scratch
    return [deal(points, Shard(i, count), loads[i - 1], costs) for i in range(1, count + 1)]


def test_the_deal_is_disjoint_whole_balanced_and_independent_of_the_order():
    points = _points()
    spec = load_spec(CASE)
    costs = Costs().expected(points, spec)                          # no history: bytes
    slices = _dealt(points, 3, costs)
    taken = sorted(i for s in slices for i in s)
    assert taken == list(range(len(points)))                       # every point once
    totals = [sum(costs[i] for i in s) for s in slices]
    assert max(totals) - min(totals) <= max(costs)                 # balanced by cost: within the dearest point
    shuffled = points[:]
    random.Random(1).shuffle(shuffled)                             # a generator's order (a set's) never moves a point
    again = _dealt(shuffled, 3, Costs().expected(shuffled, spec))
    for s, t in zip(slices, again, strict=True):
        assert {shuffled[j] for j in t} == {points[j] for j in s}
    assert parse_shard("2/3") == Shard(2, 3)


def test_the_costly_points_are_spread_by_their_expected_cost():
    """Issue 33: `--shard 1/2` took 202 s and `2/2` 23 s, the costly points all in one shard. Dealt by
    expected cost (the history's seconds, else bytes), the two halves cost alike."""
    spec = load_spec(CASE)
    points = _points()
    big = sorted(range(len(points)), key=lambda i: -Costs().expected([points[i]], spec)[0])[:4]
    seconds = {p.to_json(): (40.0 if i in big else 0.5) for i, p in enumerate(points)}
    history = Costs(seconds)
    costs = history.expected(points, spec)
    halves = [sum(costs[i] for i in s) for s in _dealt(points, 2, costs)]
    assert abs(halves[0] - halves[1]) <= 40.0 and min(halves) > 0.35 * sum(costs), halves
    assert [sum(i in s for i in big) for s in _dealt(points, 2, costs)] == [2, 2]   # the dear ones split evenly
    # a point the history never timed is costed from its bytes at the history's seconds a byte
    unknown = Costs({k: v for k, v in list(seconds.items())[1:]})
    assert unknown.expected(points[:1], spec)[0] > 0 and unknown.source == "history"
    assert Costs().source == "bytes" and Costs().digest() != history.digest()


@pytest.fixture(scope="module")
def climbed(tmp_path_factory):
    """One climb of the case at rungs 1-2 and its three shards, each with its --json report."""
    d = tmp_path_factory.mktemp("shards")
    runs = {}
    for name, extra in [("all", []), ("s1", ["--shard", "1/3"]), ("s2", ["--shard", "2/3"]), ("s3", ["--shard", "3/3"])]:
        path = str(d / f"{name}.json")
        # one history of their own: the unsharded climb times the points, the shards deal by it (a shard's own climb is
        # not read: the three read one table)
        p = kladder("climb", CASE, "--rungs", "1-2", "--device", "cpu", "-q", "--json", path, "--log", os.devnull,
                    "--history", str(d / "h.sqlite"), *extra)
        assert p.returncode in (0, 1), p.stderr[-2000:]
        runs[name] = (p, path, report_json(path))
    return d, runs


def _statuses(doc) -> dict:
    return {json.dumps(pt["point"], sort_keys=True): pt["status"] for r in doc["rungs"] for pt in r["points"]}


def test_the_shards_points_are_one_climbs_points_each_once(climbed):
    _, runs = climbed
    one = _statuses(runs["all"][2])
    shards = [_statuses(runs[s][2]) for s in ("s1", "s2", "s3")]
    assert sum(map(len, shards)) == len(one)                         # disjoint ...
    assert set().union(*shards) == set(one)                          # ... and whole
    assert runs["all"][2]["shard"] is None and runs["s2"][2]["shard"]["index"] == 2
    costs = [runs[s][2]["shard"]["costs"] for s in ("s1", "s2", "s3")]
    assert costs[0]["source"] == "history" and costs[0]["known"] > 0 and costs[0] == costs[1] == costs[2]


def test_merge_gives_one_climbs_verdicts_and_exit_status(climbed):
    d, runs = climbed
    out = str(d / "merged.json")
    p = kladder("merge", runs["s3"][1], runs["s1"][1], runs["s2"][1], "--json", out)
    one, merged = runs["all"][2], report_json(out)
    assert p.returncode == one["exit_code"] == merged["exit_code"] == 1, p.stderr[-2000:]
    assert merged["lowest_failing_rung"] == one["lowest_failing_rung"] == 1
    assert [(r["rung"], r["verdict"], r["counts"]) for r in merged["rungs"]] == \
        [(r["rung"], r["verdict"], r["counts"]) for r in one["rungs"]]
    assert _statuses(merged) == _statuses(one)
    # in one climb's order
    assert [pt["id"] for r in merged["rungs"] for pt in r["points"]] == [pt["id"] for r in one["rungs"] for pt in r["points"]]
    def summary(text):                  # "7 failed, 56 passed, 0 skipped of 63 points in 116.6 s; ..."
        return next(line for line in text.splitlines() if " points in " in line).split(" in ")[0]
    assert summary(p.stdout) == summary(runs["all"][0].stdout)
    assert "FAILED r1-" in p.stdout and "warning" not in p.stderr


def test_merge_warns_of_a_missing_shard_and_refuses_what_is_not_one_climb(climbed, tmp_path):
    d, runs = climbed
    p = kladder("merge", runs["s1"][1], runs["s3"][1])
    assert p.returncode == 1 and "shard 2/3 missing" in p.stderr
    with pytest.raises(MergeError, match="both shard 1/3"):
        merge([runs["s1"][1], runs["s1"][1]])
    with pytest.raises(MergeError, match="not a shard's report"):
        merge([runs["all"][1], runs["s1"][1]])

    def edited(name, change):
        doc = copy.deepcopy(runs[name][2])
        change(doc)
        path = tmp_path / f"{name}-{len(os.listdir(tmp_path))}.json"
        path.write_text(json.dumps(doc))
        return str(path)
    seed = edited("s2", lambda doc: doc["shard"]["options"].update(seed=1))
    with pytest.raises(MergeError, match="with seed 1"):
        merge([runs["s1"][1], seed])
    other = edited("s2", lambda doc: doc.update(spec="other"))
    with pytest.raises(MergeError, match="spec 'other'"):
        merge([runs["s1"][1], other])
    twice = edited("s2", lambda doc: doc["shard"].update(index=3, count=3))      # shard 2's points as shard 3's
    with pytest.raises(MergeError, match="is in both"):
        merge([runs["s2"][1], twice])
    p = kladder("merge", runs["s1"][1], seed)
    assert p.returncode == 2 and "seed" in p.stderr and "Traceback" not in p.stderr
    dealt = edited("s2", lambda doc: doc["shard"].update(costs={"source": "bytes", "known": 0, "digest": "0" * 16}))
    with pytest.raises(MergeError, match="dealt its points by the points' bytes"):
        merge([runs["s1"][1], dealt])


def test_points_lists_a_shards_points_as_the_climb_deals_them(tmp_path):
    out = tmp_path / "points.json"
    p = kladder("points", CASE, "--rungs", "1-2", "--device", "cpu", "--shard", "2/3", "--no-history", "--json", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    listed = [pt["point"] for pt in json.loads(out.read_text())["points"]]
    by_rung = {r: [q for q in _points() if q.rung == r] for r in (1, 2)}
    slicer = Slicer(Shard(2, 3), load_spec(CASE), Costs())
    expected = slicer.take(1, by_rung[1]) + slicer.take(2, by_rung[2])
    assert listed == [q.to_dict() for q in expected]
