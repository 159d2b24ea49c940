"""Where one point's time goes, in this process: the point run whole through run_point (the
worker's own entry) `--warm` times first (compiles, CUDA's lazy loading), then `--rounds` times,
each round's stage seconds and the device memory torch's allocator peaked at over the point
(CUDA); the last round under cProfile, its functions by their own time (kladder's, and the
builtins and torch methods they call: on a GPU a host sync shows as time in `.item()`,
`.tolist()` or `nonzero`). For the checks stage that cost 0.35 s a small RoPE point on an H100
where its kernel took 0.014 s (docs/results/2026-12-07-h100-sixth).

POINTS is a JSON list of [spec ref, point dict] pairs (a report's points[i]["point"]).

usage: python bench/point_profile.py --device cuda --points FILE [--warm 1] [--rounds 3] [--top 40] [--json PATH]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys

if "--device" not in sys.argv or sys.argv[sys.argv.index("--device") + 1] == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")


def profile_point(ref: str, point_dict: dict, device: str, warm: int, rounds: int, top: int) -> dict:
    from kladder.core.point import Point
    from kladder.run.trial import run_point
    from kladder.run.worker import prepare, setup_torch
    setup_torch(device)
    spec = prepare(ref, device, {})
    point = Point.from_dict(point_dict)
    cuda = device == "cuda"
    if cuda:
        import torch
    for _ in range(warm):
        run_point(spec, point, device)
    runs = []
    prof = cProfile.Profile()
    for i in range(rounds):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        last = i == rounds - 1
        if last:
            prof.enable()
        r = run_point(spec, point, device)
        if last:
            prof.disable()
        o = r.outcome
        run = {"status": str(o.status), "seconds": round(o.seconds, 4),
               "stages": {str(k): round(v, 4) for k, v in (o.stages or {}).items()}}
        if cuda:
            run["peak_bytes_over_start"] = torch.cuda.max_memory_allocated() - before
            run["reserved_after"] = torch.cuda.memory_reserved()
        runs.append(run)
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats(os.environ.get("SORT", "tottime")).print_stats(r"kladder|torch|builtins|method", top)
    stages = sorted({k for r in runs for k in r["stages"]})
    return {"ref": ref, "point": point.id, "runs": runs,
            "median_stages": {k: round(statistics.median(r["stages"].get(k, 0.0) for r in runs), 4) for k in stages},
            "profile": out.getvalue()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--points", required=True, help="JSON file: a list of [spec ref, point dict]")
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    with open(args.points) as f:
        todo = json.load(f)
    results = []
    for ref, pd in todo:
        try:
            res = profile_point(ref, pd, args.device, args.warm, args.rounds, args.top)
        except Exception as e:  # noqa: BLE001 - one point's error is that point's result, the others still run
            res = {"ref": ref, "point": pd, "error": f"{type(e).__name__}: {e}"}
        results.append(res)
        print(json.dumps({k: v for k, v in res.items() if k != "profile"}))
        print(res.get("profile", ""))
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
