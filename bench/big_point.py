"""kladder's own stages at one big point, each timed apart, against the reference's own call
(issue 19: no stage of kladder's may cost more than ~20x it; the GEMV point M = 1, N = 8192,
K = 65536, its weight 2 GiB, must be judged in under 20 s on the H200).

The point runs in this process twice: once stage by stage as run/trial.judge_call runs it
(inputs, the kernel's call with a device sync, the reference, the comparison at the default,
the honest peer's kernel-precision run and its spread draws, the settling), and once whole
through run_point, the worker's own entry (its total is the point's time as a climb sees it).
The peers are asked only when the default fails, as in a climb; --force-peers asks them
anyway (the worst case: a point whose default fails). --big-elements makes the point big at a
smaller size (sizes.is_big's budget lowered), to measure the big-point path on the CPU.

--off F makes the kernel wrong by a factor 1 + F (issue 32's GEMV was off by 8%: --off 0.08), to time
a failing point: its peers run only where the verdict depends on them (checks/values.PEER_DECIDES).

usage: python bench/big_point.py [--device cuda] [--M 1 --N 8192 --K 65536] [--force-peers]
                                 [--values distinct] [--big-elements N] [--off F] [--json PATH]
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "specs"))


def _sync(device: str) -> None:
    import torch
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(device: str, fn):
    _sync(device)
    t0 = time.perf_counter()
    value = fn()
    _sync(device)
    return value, time.perf_counter() - t0


def stages(spec, point, device: str, force_peers: bool) -> dict:
    """Each stage of one point's judgement, timed (seconds), with what it decided and how many of
    the spread's draws ran (the early stop's effect: checks/peer.CHECK_DRAWS)."""
    from kladder.checks import Judge, peer
    from kladder.run import interpreter
    from kladder.run.harness import Harness
    draws, perturbed = [0], peer.perturbed

    def counted(*a):
        draws[0] += 1
        return perturbed(*a)
    peer.perturbed = counted
    try:
        h = Harness(spec, point, device)
        judge = Judge(spec, point, device)
        t = {}
        prep, t["inputs"] = _timed(device, h.prepare)
        returned, t["kernel_call"] = _timed(device, lambda: h.call(prep))
        outputs = h.outputs(prep, returned)
        expected, t["reference"] = _timed(device, lambda: h.expected(prep))
        _, t["reference_call"] = _timed(device, lambda: spec.reference(*prep.ref_args))
        needs, t["comparison"] = _timed(device, lambda: judge.call(prep, outputs, returned, expected, "",
                                                                   interpreter.rounding_touched(h.touched)))
        asked = needs if needs else ({n: "values" for n in spec.outputs} if force_peers else {})
        if asked:
            found, t["peers"] = _timed(device, lambda: h.peers(prep, asked, expected.refs))
            if needs:
                _, t["settle"] = _timed(device, lambda: judge.settle(found))
    finally:
        peer.perturbed = perturbed
    ref_s = max(t["reference_call"], 1e-9)
    return {"seconds": t, "x_reference_call": {k: v / ref_s for k, v in t.items()}, "draws": draws[0],
            "reference_device": prep.ref_device, "peers_asked": sorted(asked), "default_failed": sorted(needs),
            "findings": [f.check.name for f in judge.findings]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--M", type=int, default=1)
    ap.add_argument("--N", type=int, default=8192)
    ap.add_argument("--K", type=int, default=65536)
    ap.add_argument("--values", default="", help="a rung-2 value kind for w (e.g. distinct)")
    ap.add_argument("--force-peers", action="store_true", help="ask the honest peer even if the default passes")
    ap.add_argument("--big-elements", type=int, default=0, help="treat tensors past this many elements as big")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--off", type=float, default=0.0, help="the kernel's output times 1 + F (a wrong GEMV)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    import kladder
    from kladder.core import sizes
    from kladder.core.fingerprint import fingerprint
    from kladder.core.point import Point
    from kladder.report.jsonout import dumps
    from kladder.run.trial import run_point
    import gemv as gemv_specs

    if args.big_elements:
        sizes.GPU_BUDGET = dataclasses.replace(sizes.GPU_BUDGET, max_elements=args.big_elements)
    spec = gemv_specs.gemv
    if args.off:
        right = spec.kernel
        spec = dataclasses.replace(spec, kernel=lambda *a, **k: right(*a, **k) * (1 + args.off))
    dims = {"M": args.M, "N": args.N, "K": args.K}
    point = Point(spec.name, 2 if args.values else 1, tuple(dims.items()),
                  values=(("w", args.values),) if args.values else (), seed=args.seed or 0)
    staged = stages(spec, point, args.device, args.force_peers)
    t0 = time.perf_counter()
    outcome = run_point(spec, point, args.device).outcome
    total = time.perf_counter() - t0
    report = {"fingerprint": fingerprint(device=args.device), "kladder": kladder.__file__, "point": dims,
              "values": args.values, "off": args.off, "big": sizes.is_big(spec, dims), "stages": staged,
              "run_point": {"status": outcome.status.name, "seconds": total}}
    text = dumps(report)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    expected = "FAILED" if args.off else "PASSED"
    return 0 if outcome.status.name == expected and total < 20 else 1


if __name__ == "__main__":
    sys.exit(main())
