"""`kladder bench SPEC [--against OTHER] [--point JSON]`: is B really faster than A?

The method of a careful A/B (aiter #5195's follow-ups: "24 configs x 5 interleaved rounds, median -0.15%,
Wilcoxon p=0.32"; and without cache busting a bandwidth measurement is the L2's):
- both kernels run in one worker process on the same inputs, built once from SPEC's point;
- warm-up calls first (compilation, autotuning, the allocator's first blocks), never timed;
- then interleaved rounds, the order flipped every round (A B, B A, ...), so that a drift of
  the clock or of the device's temperature falls on both alike; a round's sample is the median
  of its calls;
- on CUDA each call is timed by CUDA events, and a 256 MiB buffer is zeroed before each call
  (as triton.testing.do_bench does), so that no call finds its inputs in the L2 cache the call
  before left; on the CPU the inputs are rotated between several sets instead;
- the rounds are paired, so the test is Wilcoxon's signed-rank test over the rounds' differences
  (scipy): a p below ALPHA says which is faster and by how much (the ratio of the medians),
  otherwise "no difference shown";
- the bytes the point's tensors hold (sizes.total_bytes: each read or written once, at least)
  against the device's bandwidth, measured once by a large device-to-device copy, and, when the
  FLOPs are given (--flops EXPR of the dims), against its compute measured by a large bfloat16
  matmul: the % of the roofline each kernel reaches.
On the CPU it runs, and says that its numbers mean nothing for a GPU kernel. bench times; it
does not judge (that is `kladder climb`'s work)."""
from __future__ import annotations

import ast
import dataclasses
import json
import math
import operator
import os
import subprocess
import sys
import tempfile

from ..core.errors import BenchProblem

ALPHA = 0.05
FLUSH_BYTES = 256 << 20                   # triton.testing.do_bench's L2 flush buffer
COPY_BYTES = 1 << 30                      # the bandwidth probe: far past any L2
CPU_INPUT_SETS = 3
DEFAULTS = {"cuda": {"rounds": 20, "calls": 10, "warmup": 10}, "cpu": {"rounds": 15, "calls": 3, "warmup": 2}}


# ---------------------------------------------------------------- statistics (pure)

def quartiles(xs) -> tuple[float, float, float]:
    import numpy as np
    q1, med, q3 = np.percentile(np.asarray(xs, dtype=float), [25, 50, 75])
    return float(q1), float(med), float(q3)


def compare(a, b, alpha: float = ALPHA) -> dict:
    """A's and B's paired round times: medians, IQRs, B's speed-up over A (median A / median B)
    and the two-sided Wilcoxon signed-rank p over the pairs. Identical samples have no
    difference to rank: p = 1."""
    import numpy as np
    from scipy.stats import wilcoxon
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.size < 2:
        raise BenchProblem(f"compare: give two paired samples of at least 2 rounds each (got {a.size} and {b.size})")
    qa, qb = quartiles(a), quartiles(b)
    p = 1.0 if not np.any(a - b) else float(wilcoxon(a, b).pvalue)
    speedup = qa[1] / qb[1] if qb[1] > 0 else math.inf
    shown = p < alpha
    return {"rounds": int(a.size), "median_a": qa[1], "median_b": qb[1], "iqr_a": qa[2] - qa[0],
            "iqr_b": qb[2] - qb[0], "speedup": speedup, "p": p, "alpha": alpha,
            "verdict": ("faster" if speedup > 1 else "slower") if shown else "no_difference"}


def min_rounds_for(alpha: float = ALPHA) -> int:
    """The fewest rounds whose exact two-sided signed-rank test can reach p < alpha (2 / 2^n)."""
    return next(n for n in range(2, 64) if 2.0 / 2 ** n < alpha)


# ---------------------------------------------------------------- FLOPs from the dims

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def flops_of(expr: str | None, sizes: dict[str, int]) -> float | None:
    """`--flops "2*M*N*K"` at the point's dims; only arithmetic and dim names."""
    if not expr:
        return None

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return n.value
        if isinstance(n, ast.Name):
            if n.id not in sizes:
                raise BenchProblem(f"--flops {expr!r}: {n.id!r} is not a dim of the point (dims: "
                                   f"{', '.join(sizes)}); write it with those, e.g. 2*M*N*K")
            return sizes[n.id]
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        raise BenchProblem(f"--flops {expr!r}: only numbers, dim names and + - * / // ** are allowed")
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise BenchProblem(f"--flops {expr!r}: not an arithmetic expression; write e.g. 2*M*N*K") from None
    return float(ev(tree))


# ---------------------------------------------------------------- the point

def default_point(spec, device: str):
    """The rung-1 point with the most bytes that fits this device's budget (not a 2^31 cliff point)."""
    from ..climbing.ladder import rung_points
    from ..core.sizes import budget_for, is_big, total_bytes
    pts = [p for p in rung_points(spec, 1, budget_for(device)) if p.kind != "big" and p.mode == "eager"
           and not p.needs and not is_big(spec, p.sizes)]
    if not pts:
        raise BenchProblem(f"spec {spec.name!r} has no rung-1 point that fits the {device}; give --point")
    return max(pts, key=lambda p: total_bytes(spec, p.sizes, p.dtype_of))


# ---------------------------------------------------------------- in the worker

def _timer(device: str):
    """(start, stop) for one call: CUDA events on the GPU, perf_counter on the CPU."""
    import time
    import torch
    if device == "cuda":
        def start():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            return s, e

        def stop(mark):
            mark[1].record()
            return mark
        return start, stop, lambda marks: [s.elapsed_time(e) * 1e-3 for s, e in marks], torch.cuda.synchronize
    return (time.perf_counter, lambda t0: time.perf_counter() - t0, lambda marks: list(marks), lambda: None)


def measure(kernels: dict, input_sets: list, kwargs: dict, device: str, rounds: int, calls: int, warmup: int) -> dict:
    """Each kernel's per-round median call time, in seconds, rounds interleaved, order flipped."""
    import statistics
    import torch
    start, stop, seconds, sync = _timer(device)
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if device == "cuda" else None
    names = list(kernels)
    for name in names:
        for i in range(warmup):
            kernels[name](*input_sets[i % len(input_sets)], **kwargs)
    sync()
    per_round = {n: [] for n in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            marks = []
            for j in range(calls):
                args = input_sets[(r * calls + j) % len(input_sets)]
                if flush is not None:
                    flush.zero_()           # the L2 holds the flush buffer, not this call's inputs
                m = start()
                kernels[name](*args, **kwargs)
                marks.append(stop(m))
            sync()
            per_round[name].append(statistics.median(seconds(marks)))
    return per_round


def peak_bandwidth(device: str) -> float | None:
    """Bytes a second of a 1 GiB device-to-device copy (read + write), the best of 5."""
    if device != "cuda":
        return None
    import torch
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    best = math.inf
    for i in range(7):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        torch.cuda.synchronize()
        if i >= 2:
            best = min(best, s.elapsed_time(e) * 1e-3)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * COPY_BYTES / best


def peak_flops(device: str) -> float | None:
    """FLOP/s of an 8192^3 bfloat16 matmul, the best of 5 (the tensor cores' dense rate)."""
    if device != "cuda":
        return None
    import torch
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    best = math.inf
    for i in range(7):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        torch.cuda.synchronize()
        if i >= 2:
            best = min(best, s.elapsed_time(e) * 1e-3)
    return 2 * n ** 3 / best


def _signature(spec) -> str:
    """The args as the kernel sees them: names, and each tensor's shape symbols."""
    return ", ".join(f"{n} {' '.join(spec.all_tensors[n].symbols)}" if n in spec.all_tensors else n
                     for n in spec.args)


def run_worker(req: dict) -> dict:
    import torch
    from ..gen.load import load_spec
    from ..gen.materialize import materialize
    from ..core.point import Point
    from ..core.sizes import total_bytes
    device = req["device"]
    if device == "cpu":
        torch.set_num_threads(1)
    specs = {"A": load_spec(req["a"])}
    if req.get("b"):
        specs["B"] = load_spec(req["b"])
    a = specs["A"]
    if "B" in specs and _signature(specs["B"]) != _signature(a):
        raise BenchProblem(f"--against {req['b']!r}: its args ({_signature(specs['B'])}) are not SPEC's "
                           f"({_signature(a)}); both kernels are called on the same inputs")
    point = Point.parse(req["point"]) if req.get("point") else default_point(a, device)
    if point.spec != a.name:
        raise BenchProblem(f"--point belongs to spec {point.spec!r}, not {a.name!r}")
    from ..climbing.pointcheck import PointError, check_point
    try:
        check_point(a, point)
    except PointError as e:
        raise BenchProblem(f"--point: {e}") from None
    sets = 1 if device == "cuda" else CPU_INPUT_SETS
    inputs = [materialize(a, dataclasses.replace(point, seed=point.seed + i), device).args for i in range(sets)]
    kernels = {k: s.kernel for k, s in specs.items()}
    d = DEFAULTS[device]
    rounds, calls, warmup = (req.get(k) or d[k] for k in ("rounds", "calls", "warmup"))
    times = measure(kernels, inputs, point.kwargs, device, rounds, calls, warmup)
    nbytes = total_bytes(a, point.sizes, point.dtype_of)
    flops = flops_of(req.get("flops"), point.sizes)
    bw = peak_bandwidth(device)
    peak = peak_flops(device) if flops else None
    out = {"point": point.to_dict(), "device": device, "device_name": torch.cuda.get_device_name() if device == "cuda"
           else "cpu", "rounds": rounds, "calls": calls, "warmup": warmup, "bytes": nbytes, "flops": flops,
           "peak_bandwidth": bw, "peak_flops": peak, "timer": "cuda events" if device == "cuda" else "perf_counter",
           "between_calls": f"{FLUSH_BYTES >> 20} MiB zeroed (L2 flush)" if device == "cuda"
           else f"inputs rotated over {sets} sets", "kernels": {}}
    for k, ts in times.items():
        q1, med, q3 = quartiles(ts)
        out["kernels"][k] = {"ref": req["a"] if k == "A" else req["b"], "rounds_s": ts, "median_s": med,
                             "iqr_s": q3 - q1, "min_s": min(ts), **roofline(nbytes, flops, bw, peak, med)}
    if "B" in times:
        out["comparison"] = compare(times["A"], times["B"])
    return out


def roofline(nbytes: int, flops: float | None, bw: float | None, peak: float | None, seconds: float) -> dict:
    """What a median time reaches: bytes/s, FLOP/s, and the % of the roofline (the time the
    bytes need at the measured bandwidth, or the FLOPs at the measured compute, whichever is
    longer, over the time taken)."""
    r = {"bytes_per_s": nbytes / seconds if seconds > 0 else None,
         "flops_per_s": flops / seconds if flops and seconds > 0 else None, "roofline_pct": None}
    floor = max(nbytes / bw if bw else 0.0, flops / peak if flops and peak else 0.0)
    if floor > 0 and seconds > 0:
        r["roofline_pct"] = 100.0 * floor / seconds
    return r


# ---------------------------------------------------------------- the parent

def bench(a_ref: str, b_ref: str | None, *, point: str | None, device: str, rounds: int | None = None,
          calls: int | None = None, warmup: int | None = None, flops: str | None = None,
          timeout_s: float = 600.0) -> dict:
    """Run the timing in a worker process of its own (a crash or hang costs the bench, not the
    caller), and return its facts."""
    from ..run.isolation import worker_env
    if rounds is not None and rounds < min_rounds_for():
        raise BenchProblem(f"--rounds {rounds}: with fewer than {min_rounds_for()} rounds the signed-rank test "
                           f"cannot reach p < {ALPHA}; give --rounds {min_rounds_for()} or more")
    req = {"a": a_ref, "b": b_ref, "point": point, "device": device, "rounds": rounds, "calls": calls,
           "warmup": warmup, "flops": flops}
    with tempfile.TemporaryDirectory(prefix="kladder-bench-") as tmp:
        out = os.path.join(tmp, "result.json")
        try:
            p = subprocess.run([sys.executable, "-m", "kladder.tools.bench", json.dumps(req), out], env=worker_env(device),
                               capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise BenchProblem(f"the bench did not finish in {timeout_s:.0f} s; give fewer --rounds or --calls, or "
                               "a smaller --point") from None
        if not os.path.exists(out):
            raise BenchProblem(f"the bench's worker ended with status {p.returncode}: {p.stderr.strip()[-1500:]}")
        with open(out) as f:
            doc = json.load(f)
    if "error" in doc:
        raise BenchProblem(doc["error"])
    return doc


def _worker_main(argv: list[str]) -> int:
    req, out = json.loads(argv[0]), argv[1]
    if req["device"] == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from ..report.jsonout import dumps
    try:
        doc = run_worker(req)
    except (BenchProblem, ValueError) as e:            # SpecError and LoadError are ValueErrors
        doc = {"error": str(e)}
    with open(out, "w") as f:
        f.write(dumps(doc))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
