"""climbing/merge.py: shard reports written by hand (no climb) merged, or refused naming what
differs; the merged order, verdicts and exit code computed again from the points."""
import copy
import json
import math

import pytest

from kladder.core.errors import MergeError
from kladder.core.outcome import Outcome, Status
from kladder.core.point import Point
from kladder.climbing.merge import _costs, _finite, check_same, merge, read_report

OPTIONS = {"rungs": [1, 2], "seed": 0, "timeout_s": None}


def _o(n, status="passed", rung=1):
    return Outcome(Point("s", rung, (("N", n),)), Status(status)).to_dict()


def _shard(index, count, rungs, seconds=1.0, started="2026-01-01T00:00:0{}", **extra):
    """A shard's report: rungs = {rung: [(position, outcome dict), ...]}."""
    doc = {"spec": "s", "ref": "s.py::s", "device": "cpu", "kladder_version": "1.0", "started": started.format(index),
           "seconds": seconds, "fingerprint": {"torch": "2.13"}, "rungs": [], "shrunk": [],
           "shard": {"index": index, "count": count, "options": dict(OPTIONS), "costs": {"source": "bytes", "digest": "d"},
                     "dealt": {}, "positions": {}, "outcomes": {}}}
    for rung, placed in rungs.items():
        doc["rungs"].append({"rung": rung, "title": f"r{rung}", "climbed": True, "note": "", "seconds": seconds,
                             "verdict": "passed", "points": [o for _, o in placed]})
        doc["shard"]["dealt"][str(rung)] = 4
        doc["shard"]["positions"][str(rung)] = [p for p, _ in placed]
        doc["shard"]["outcomes"][str(rung)] = [o for _, o in placed]
    for k, v in extra.items():
        doc[k] = v
    return doc


def _write(tmp_path, *docs):
    paths = []
    for i, d in enumerate(docs):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(d))
        paths.append(str(p))
    return paths


def _two():
    s1 = _shard(1, 2, {1: [(0, _o(1)), (2, _o(3, "failed"))], 2: [(1, _o(6, rung=2))]}, seconds=5.0)
    s2 = _shard(2, 2, {1: [(1, _o(2)), (3, _o(4))], 2: [(0, _o(5, rung=2))]}, seconds=7.0)
    return s1, s2


def test_merge_puts_the_points_in_one_climbs_order_and_judges_them_again(tmp_path):
    s1, s2 = _two()
    report, warnings = merge(_write(tmp_path, s2, s1))                   # given in any order
    assert warnings == []
    assert [[o.point.sizes["N"] for o in r.outcomes] for r in report.rungs] == [[1, 2, 3, 4], [5, 6]]
    assert [r.verdict for r in report.rungs] == ["failed", "passed"]
    assert report.exit_code == 1 and report.lowest_failing_rung == 1
    assert report.seconds == 7.0 and report.started == "2026-01-01T00:00:01"
    assert report.shard.index is None and report.shard.merged == [1, 2] and report.shard.count == 2
    assert report.shard.positions == {"1": [0, 1, 2, 3], "2": [0, 1]}


def test_a_missing_shard_is_a_warning_naming_it(tmp_path):
    s1 = _shard(1, 4, {1: [(0, _o(1))]})
    s4 = _shard(4, 4, {1: [(1, _o(2))]})
    report, warnings = merge(_write(tmp_path, s1, s4))
    assert warnings == ["shards 2/4, 3/4 missing: the merged report holds the other shards' points only"]
    assert report.exit_code == 0
    _, one = merge(_write(tmp_path, _shard(1, 2, {1: [(0, _o(1))]})))
    assert one[0].startswith("shard 2/2 missing")


@pytest.mark.parametrize("edit,words", [
    (lambda d: d.update(spec="other"), "climbed spec 'other'"),
    (lambda d: d.update(device="cuda"), "climbed device 'cuda'"),
    (lambda d: d.update(kladder_version="2.0"), "climbed kladder_version '2.0'"),
    (lambda d: d["shard"].update(count=3), "is shard 2/3"),
    (lambda d: d["shard"]["options"].update(seed=1), "climbed with seed 1"),
    (lambda d: d["shard"]["costs"].update(digest="e"), "dealt its points by the points' bytes"),
    (lambda d: d["shard"]["dealt"].update({"1": 5}), "rung 1: .* dealt 5 points among the shards"),
    (lambda d: d["shard"].update(index=1), "are both shard 1/2"),
])
def test_what_is_not_one_climbs_shards_is_refused_naming_it(tmp_path, edit, words):
    s1, s2 = _two()
    edit(s2)
    with pytest.raises(MergeError, match=words):
        merge(_write(tmp_path, s1, s2))


def test_another_toolchain_is_a_warning_not_a_refusal(tmp_path):
    s1, s2 = _two()
    s2["fingerprint"] = {"torch": "2.14"}
    docs = [(p, read_report(p)) for p in _write(tmp_path, s1, s2)]
    warnings = check_same(docs)
    assert len(warnings) == 1 and "different torch ('2.14', '2.13')" in warnings[0]


def test_a_point_in_two_shards_or_a_cut_report_is_refused(tmp_path):
    s1, s2 = _two()
    s2["shard"]["outcomes"]["1"].append(_o(1))
    s2["shard"]["positions"]["1"].append(9)
    s2["rungs"][0]["points"].append(_o(1))
    with pytest.raises(MergeError, match=r"point r1-N=1 is in both .*r0.json.* and .*r1.json"):
        merge(_write(tmp_path, s1, s2))
    s1, s2 = _two()
    s2["rungs"][0]["points"].pop()
    with pytest.raises(MergeError, match="rung 1 lists 1 points but its shard record 2: the report was edited or cut"):
        merge(_write(tmp_path, s1, s2))


def test_read_report_refuses_what_is_not_a_shards_report(tmp_path):
    with pytest.raises(MergeError, match="cannot read it"):
        read_report(str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"rungs": [\n')
    with pytest.raises(MergeError, match=r"not JSON \(.*line 2\)"):
        read_report(str(bad))
    bad.write_text("[1]")
    with pytest.raises(MergeError, match="not a kladder report"):
        read_report(str(bad))
    bad.write_text('{"rungs": []}')
    with pytest.raises(MergeError, match="not a shard's report"):
        read_report(str(bad))
    with pytest.raises(MergeError, match="give the --json reports of the shards"):
        merge([])


def test_an_interrupted_shard_keeps_its_points_so_far_and_the_merge_is_interrupted(tmp_path):
    s1, s2 = _two()
    s2["interrupted"] = True
    s2["rungs"][0]["verdict"] = "interrupted"
    report, _ = merge(_write(tmp_path, s1, s2))
    assert report.interrupted and report.exit_code == 130 and report.rungs[0].interrupted


def test_costs_are_said_as_the_shard_dealt_by_them():
    assert _costs({}) == "count (a kladder before costs)"
    assert _costs({"source": "history", "known": 12, "digest": "ab"}) == "the costs of 12 points in its history (table ab)"
    assert _costs({"source": "bytes", "digest": "x"}) == "the points' bytes (no history)"


def test_strict_json_non_finite_numbers_come_back_where_they_are_numbers():
    doc = {"findings": [{"max_abs_err": "NaN", "output": "NaN", "facts": {"kernel": "-Infinity", "n": 3,
                                                                          "nested": {"x": "Infinity"}}}],
           "allowed": "Infinity", "why": "Infinity"}
    out = _finite(copy.deepcopy(doc))
    f = out["findings"][0]
    assert math.isnan(f["max_abs_err"]) and f["output"] == "NaN"           # an output's name is words
    assert f["facts"]["kernel"] == -math.inf and f["facts"]["n"] == 3
    assert out["allowed"] == math.inf and out["why"] == "Infinity"
    assert f["facts"]["nested"] == {"x": "Infinity"}                       # only a facts' own fields are numbers
