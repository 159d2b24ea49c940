"""Rung 5's repetition against the bare graph replay of the same kernel, in the same process
(docs/results/2026-12-01-h200-round/h200_rung5.sh runs it; the issue's goal: at least 0.5x the bare rate).

The kernel: y = 2x + 1 over 64K floats in Triton (64 programs of 1024), the launcher allocating y.
- bare: the same K calls captured in one CUDA graph, replayed back to back, one synchronize at
  the end: the fastest the device runs the kernel.
- kladder: the repeat mode on the same point (same inputs, graph launch), run as a worker runs it
  (torch's deterministic fill on, as kladder's worker sets it); its rate is calls / seconds of its
  loop (capture and the first calls excluded, as the bare figure excludes capture).
- naive: a loop calling the launcher, synchronizing and comparing with the first output on the
  host every call (the issue's anchor: 12k calls/s, 0.014x).
Writes THROUGHPUT.json (strict JSON) and prints one line a variant.

usage: python bench/repeat_throughput.py OUT.json [SECONDS [ROUNDS]]"""
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl

import kladder as kl
from kladder.core.point import Point
from kladder.run.trial import run_point

N = 1 << 16
BLOCK = 1024


@triton.jit
def _affine(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, 2 * x + 1, mask=offs < n)


def affine(x):
    y = torch.empty_like(x)
    _affine[(triton.cdiv(x.numel(), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
    return y


spec = kl.Spec("affine", kernel=affine, reference=lambda x: 2 * x + 1, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, N)}, repetition=kl.Repetition(deterministic=True))


def bare(k: int, seconds: float) -> float:
    x = torch.randn(N, device="cuda")
    for _ in range(3):
        affine(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(g):
        for _ in range(k):
            keep.append(affine(x))
    g.replay()
    torch.cuda.synchronize()
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            g.replay()
        reps += 20
    torch.cuda.synchronize()
    return reps * k / (time.perf_counter() - t0)


def kladder_rate(seconds: float) -> tuple[float, dict]:
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    point = Point("affine", 5, (("N", N),), kind="repeat", mode="repeat",
                  repeat=(("calls", 0), ("seconds", seconds), ("inputs", "same"), ("launch", "graph")))
    out = run_point(spec, point, "cuda").outcome
    x = (out.note.facts if out.note is not None else out.findings[0].facts).to_dict()
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = False
    return x["calls_s"], {"status": str(out.status), "calls": x["calls"], "seconds": x["seconds"],
                          "launch": x["launch"], "fallback": x["fallback"], "post_graph": x.get("post_graph")}


def naive(seconds: float) -> float:
    x = torch.randn(N, device="cuda")
    first = affine(x)
    torch.cuda.synchronize()
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        y = affine(x)
        torch.cuda.synchronize()
        if bool((y.view(torch.int32) != first.view(torch.int32)).any()):
            raise AssertionError("the affine kernel is not deterministic")
        calls += 1
    return calls / (time.perf_counter() - t0)


def main(path: str, seconds: float, rounds: int = 3) -> None:
    """`rounds` interleaved rounds of bare, kladder (each batch's comparison in a post graph) and
    kladder op by op (the comparison launched from the host, as before the post graph): medians,
    and each round's ratio."""
    import statistics

    from kladder.run.modes import repeat as rep
    k = rep.SLOTS["graph"][1]
    fuse = rep.Graphed.fuse
    runs = {"bare": [], "kladder": [], "op_by_op": []}
    facts = {}
    for _ in range(rounds):
        runs["bare"].append(bare(k, seconds))
        rep.Graphed.fuse = fuse
        rate, facts["kladder"] = kladder_rate(seconds)
        runs["kladder"].append(rate)
        rep.Graphed.fuse = lambda self, differ, worst: None
        rate, facts["op_by_op"] = kladder_rate(seconds)
        runs["op_by_op"].append(rate)
    rep.Graphed.fuse = fuse
    naive_rate = naive(min(seconds, 3.0))
    med = {n: statistics.median(v) for n, v in runs.items()}
    result = {"kernel": f"Triton y = 2x + 1, {N} float32", "device": torch.cuda.get_device_name(),
              "calls_per_graph": k, "rounds": rounds, "seconds_a_run": seconds,
              "bare_calls_s": round(med["bare"]), "kladder_calls_s": round(med["kladder"]),
              "op_by_op_calls_s": round(med["op_by_op"]), "naive_calls_s": round(naive_rate),
              "kladder_vs_bare": round(med["kladder"] / med["bare"], 3),
              "op_by_op_vs_bare": round(med["op_by_op"] / med["bare"], 3),
              "naive_vs_bare": round(naive_rate / med["bare"], 4), "goal": 0.5,
              "each_round": {n: [round(x) for x in v] for n, v in runs.items()},
              "each_round_vs_bare": [round(a / b, 3) for a, b in zip(runs["kladder"], runs["bare"], strict=False)],
              "kladder": facts["kladder"], "op_by_op": facts["op_by_op"],
              "torch": torch.__version__, "triton": triton.__version__}
    with open(path, "w") as f:
        json.dump(result, f, indent=1, allow_nan=False)
    for name in ("bare", "kladder", "op_by_op", "naive"):
        print(f"{name:8} {result[name + '_calls_s']:>10,} calls/s")
    print(f"kladder / bare = {result['kladder_vs_bare']:.3f} (goal >= 0.5; rounds {result['each_round_vs_bare']}; "
          f"post graph: {facts['kladder'].get('post_graph')}); op by op / bare = {result['op_by_op_vs_bare']:.3f}; "
          f"naive / bare = {result['naive_vs_bare']:.4f}")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
    os._exit(0)
