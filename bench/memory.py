"""Peak device memory of one big point, against the bytes of the kernel's own inputs and outputs
(issue 15: "big points that fit"; target <= 3x).

Each case is a 4 GiB bfloat16 point run in this process exactly as a worker runs it
(kladder.run.trial.run_point), judged as `kladder repro` judges it: the points are written by
hand, without `kind` or `needs`, so whether a point is big follows from its sizes alone.
  rows_sampled   an RMSNorm (the zoo's fixed kernel) with rows="M": the reference on sampled rows
  rows_gemm      torch.matmul, no rows declared: the reference cannot be sliced; it runs on the host
  elementwise    2 * x, no rows declared: the reference on the host, the comparison in slabs
For each: the peak of torch.cuda.max_memory_allocated() over the point, minus what was allocated
before it, divided by the kernel's own bytes (every input and output once).
Since issue 19 the 3x holds where the device is short: a big point's reference leaves the device
only when its copies and a draw would take over 1.5x the kernel's bytes AND a quarter of the free
memory (run/harness.reference_device; the host path cost minutes, bench/big_point.py). On an
empty H200 rows_gemm and elementwise keep their float64 references on the device (peaks of up to
~9x, within a quarter of the free memory); run this with the device mostly taken to see the 3x.

usage: python bench/memory.py [--json PATH]      (a CUDA machine with ~20 GiB free)
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch

import kladder as kl
from kladder.core.point import Point
from kladder.run.trial import run_point
from kladder.core.sizes import human_bytes, total_bytes
import triton
import triton.language as tl

from kladder.zoo import rmsnorm_n_tail as zoo


@triton.jit
def _rmsnorm64(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK: tl.constexpr):
    # the zoo's fixed RMSNorm, with its row offset in int64: the zoo's own computes row * stride
    # in int32 (its spec stops at M = 4096) and faults past 2^31 elements, as rows_int32_offset does
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    rms = tl.sqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x / rms * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def rmsnorm64(x, w, eps=1e-6):
    x = x if x.stride(-1) == 1 else x.contiguous()
    y = torch.empty_like(x)
    M, N = x.shape
    _rmsnorm64[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, BLOCK=triton.next_power_of_2(N), num_warps=8)
    return y


ROWS = kl.Spec("rmsnorm_big", kernel=rmsnorm64, reference=zoo.rmsnorm_ref,
               args={"x": kl.Tensor("M N", dtype="bfloat16"), "w": kl.Tensor("N", dtype="float32"), "eps": 1e-6},
               returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 1 << 22), "N": kl.Dim(1, 16384, tile=8)},
               rows="M")
GEMM = kl.Spec("gemm_big", kernel=torch.matmul, reference=torch.matmul,
               args={"a": kl.Tensor("M K", dtype="bfloat16"), "b": kl.Tensor("K N", like="a")},
               returns=kl.Tensor("M N", like="a"),
               dims={"M": kl.Dim(1, 1 << 20), "N": kl.Dim(1, 1 << 16), "K": kl.Dim(1, 8192)})
DOUBLE = kl.Spec("double_big", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
                 args={"x": kl.Tensor("M N", dtype="bfloat16")}, returns=kl.Tensor("M N", like="x"),
                 dims={"M": kl.Dim(1, 1 << 22), "N": kl.Dim(1, 16384)})

CASES = {
    # 131073 x 16384 bfloat16 = 4 GiB + a row: the first point past 2^32 bytes (gaps/shapes.py)
    "rows_sampled": (ROWS, (("M", 131073), ("N", 16384))),
    "rows_gemm": (GEMM, (("M", 65536), ("N", 32768), ("K", 64))),
    "elementwise": (DOUBLE, (("M", 131073), ("N", 16384))),
}


def measure(name: str) -> dict:
    spec, dims = CASES[name]
    point = Point(spec.name, 1, dims)                  # as a hand-written repro: no kind, no needs
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    outcome = run_point(spec, point, "cuda").outcome
    seconds = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() - before
    own = total_bytes(spec, point.sizes, point.dtype_of)
    return {"case": name, "point": point.id, "status": str(outcome.status), "seconds": round(seconds, 1),
            "own_bytes": own, "peak_bytes": peak, "peak_over_own": round(peak / own, 3),
            "rows_checked": None if outcome.rows is None else vars(outcome.rows),
            "note": None if outcome.note is None else {"kind": str(outcome.note.kind), **outcome.note.facts.to_dict()}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("bench/memory.py needs a CUDA device", file=sys.stderr)
        return 2
    rows = [measure(c) for c in args.cases.split(",")]
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"{'case':14} {'status':8} {'own':>10} {'peak':>10} {'peak/own':>9} {'s':>6}  point")
    for r in rows:
        print(f"{r['case']:14} {r['status']:8} {human_bytes(r['own_bytes']):>10} {human_bytes(r['peak_bytes']):>10} "
              f"{r['peak_over_own']:>9} {r['seconds']:>6}  {r['point']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0 if all(r["peak_over_own"] <= 3 and r["status"] == "passed" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
