"""Repeat and grow where the spec says the code changes (issue 38, item 6): rung 5's eager
repetition runs past every declared chunk and width edge on every device, big points grow each dim
a spec lets grow, and `kladder points --device cuda` lists a GPU's points on a machine without one."""
import json
import os
import sys

import torch

import kladder as kl
from kladder.gen.gaps import repetition, shapes
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET
from conftest import run_cli

SPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs")


def _eager_repeats(points):
    return [p for p in points if p.mode == "repeat" and dict(p.repeat).get("launch") == "eager"]


def test_rung_5_repeats_eagerly_past_the_chunk_on_every_device():
    from kladder.gen.load import load_spec
    spec = load_spec(os.path.join(SPECS, "splitk_gemv.py"))
    for budget in (CPU_BUDGET, GPU_BUDGET):
        past = [p for p in _eager_repeats(repetition.points(spec, budget)) if p.sizes["K"] > 8192]
        assert [p.sizes for p in past] == [{"N": 1, "K": 16385}], budget
        assert past[0].needs == "" and dict(past[0].repeat)["inputs"] == "same"


def test_kladder_points_lists_a_gpus_points_on_a_machine_without_one(tmp_path):
    out = tmp_path / "p.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "points", os.path.join(SPECS, "splitk_gemv.py"),
                        "--device", "cuda", "--rungs", "5", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["device"] == "cuda" and doc["planned"] is (not torch.cuda.is_available())
    eager = [r for r in doc["points"] if r["mode"] == "repeat" and dict(r["point"]["repeat"]).get("launch") == "eager"]
    assert any(r["sizes"] == {"N": 1, "K": 16385} and r["tensors"]["w"]["shape"] == [1, 16385] for r in eager)
    graphed = [r for r in doc["points"] if r["mode"] == "repeat" and dict(r["point"]["repeat"]).get("launch") == "graph"]
    assert graphed                                                 # CUDA's points: graph-replayed repetition
    assert "cuda (planned" in p.stdout or torch.cuda.is_available()


def test_past_edges_needs_an_edge_it_can_pass():
    spec = kl.Spec("s", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 4096, widths=[4096])})
    assert repetition.past_edges(spec) is None                      # the width is the range's top
    spec = kl.Spec("s", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 8192, widths=[2880, 4096])})
    assert repetition.past_edges(spec) == {"N": 4097}


def test_big_points_grow_an_inner_dim():
    # sparsemax over dim 1: V grows past 2^31 bytes with one row (B = 1); before, only B grew (to 64: no cliff)
    spec = kl.Spec("sparsemax", kernel=lambda x: x, reference=lambda x: x,
                   args={"x": kl.Tensor("B V", dtype="float32")}, returns=kl.Tensor("B V", like="x"),
                   dims={"B": kl.Dim(1, 64), "V": kl.Dim(1, 1 << 31)})
    big = [p for p in shapes.big_points(spec) if "V grows" in p.why]       # (B grows too, with V at its maximum)
    assert big and all(p.sizes["B"] == 1 and p.needs == "cuda" for p in big)
    assert {(1 << 31) // 4 + 1, (1 << 32) // 4 + 1} <= {p.sizes["V"] for p in big}      # one element past each byte cliff
    assert "V slice" in " ".join(p.why for p in big)
    # a leading digit: the fused MoE's "2 E N" weights grow along E (before: no big point at all)
    spec = kl.Spec("moe", kernel=lambda w: w, reference=lambda w: w, args={"w": kl.Tensor("2 E N", dtype="bfloat16")},
                   returns=kl.Tensor("2 E N", like="w"), dims={"E": kl.Dim(1, 1 << 20), "N": kl.Dim(1, 8192)})
    assert (1 << 31) // (2 * 2 * 8192) + 1 in {p.sizes["E"] for p in shapes.big_points(spec)}
