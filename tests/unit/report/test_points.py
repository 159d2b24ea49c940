"""report/points.py: `kladder points` as JSON and text, each point with its tensors' shapes,
dtypes and bytes (the spec is built here; nothing runs)."""
from __future__ import annotations

import json

import kladder as kl
from kladder.core.point import Point
from kladder.report.points import point_record, points_json, points_text


def _spec():
    return kl.Spec("t", kernel=lambda x, w: x, reference=lambda x, w: x,
                   args={"x": kl.Tensor("M N", dtype=["float16", "float32"]), "w": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64, tile=8)})


def _point(**kw) -> Point:
    return Point(**{"spec": "t", "rung": 1, "dims": (("M", 4), ("N", 7)), "dtypes": (("x", "float32"),),
                    "why": "the tail of a tile", **kw})


def test_point_record_sizes_every_tensor_by_its_chosen_or_only_or_like_dtype():
    rec = point_record(_spec(), _point())
    assert rec["tensors"] == {"x": {"shape": [4, 7], "dtype": "float32", "bytes": 112},
                              "w": {"shape": [7], "dtype": "float32", "bytes": 28},
                              "out": {"shape": [4, 7], "dtype": "float32", "bytes": 112}}   # like x: x's chosen dtype
    assert (rec["id"], rec["rung"], rec["kind"], rec["mode"], rec["needs"], rec["sizes"], rec["dtypes"], rec["why"]) == (
        "r1-M=4-N=7-float32", 1, "edge", "eager", "", {"M": 4, "N": 7}, {"x": "float32"}, "the tail of a tile")
    assert rec["point"] == _point().to_dict() and rec["seed"] == _point().seed


def test_a_model_point_lists_no_tensors():
    assert point_record(_spec(), _point(rung=8, mode="model"))["tensors"] == {}


def test_points_json_is_strict_json_and_reads_back_to_the_points():
    pts = [_point(), _point(rung=4, mode="graph", needs="cuda")]
    doc = json.loads(points_json(_spec(), "specs/t.py", "cuda", pts, planned=True),
                     parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert (doc["spec"], doc["ref"], doc["device"], doc["planned"]) == ("t", "specs/t.py", "cuda", True)
    assert [Point.from_dict(p["point"]) for p in doc["points"]] == pts


def test_points_text():
    pts = [_point(), _point(rung=4, mode="graph", needs="cuda", dtypes=(), why="")]
    assert points_text(_spec(), "specs/t.py", "cpu", pts).split("\n") == [
        "kladder points specs/t.py  on cpu: 2 points",
        "r1  r1-M=4-N=7-float32  [edge]  252 B of tensors",
        "      why: the tail of a tile",
        "r4  r4-M=4-N=7-graph  [edge, graph, GPU]  140 B of tensors",          # float16 x and out: the first dtype
        "      why: ", ""]


def test_points_text_of_one_planned_point_and_of_none():
    one = points_text(_spec(), "s", "cuda", [_point()], planned=True)
    assert one.startswith("kladder points s  on cuda (planned: no CUDA device here; the points and budgets a GPU's "
                          "climb would have): 1 point\n")
    assert points_text(_spec(), "s", "cpu", []) == "kladder points s  on cpu: 0 points\n"
