"""What stage timing costs a climb: `kladder climb SPEC --rungs 1 --device cpu` with this
checkout's kladder and with another's (--base, the src/ folder of a checkout from before the
stage events), interleaved round by round; medians of the wall time and of the rung's own time
(the report's rung seconds: the points, without start-up). A stage event is one JSON line on
the worker's protocol pipe when a stage changes (about six a rung-1 point).

Also (--events N) the worker's side of N stage changes alone: CLOCK.enter writing each event
line to a pipe that another process drains, per event.

usage: python bench/stage_events.py --base /tmp/base/src [--spec tests/specs/good.py] [--rounds 3] [--events 20000] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")


def climb(src: str, spec: str, out: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "kladder.tools.cli", "climb", spec, "--rungs", "1", "--device", "cpu",
                        "--json", out, "--log", out + ".jsonl", "--quiet"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"the climb with {src} exited {p.returncode}: {p.stderr[-2000:]}")
    with open(out) as f:
        rep = json.load(f)
    return {"wall_s": wall, "rung_s": rep["rungs"][0]["seconds"], "points": len(rep["rungs"][0]["points"])}


def per_event_us(n: int) -> float:
    """Microseconds a stage change costs the worker: the clock and one line on a drained pipe."""
    sys.path.insert(0, SRC)
    from kladder.core.outcome import Stage
    from kladder.run.stages import CLOCK
    r, w = os.pipe()
    drain = subprocess.Popen([sys.executable, "-c", "import os,sys\nwhile os.read(0, 1 << 16): pass"], stdin=r)
    os.close(r)
    proto = os.fdopen(w, "w", buffering=1)
    CLOCK.reset()
    CLOCK.sink = lambda stage: proto.write('{"stage": "%s"}\n' % stage)
    stages = [Stage.KERNEL, Stage.CHECKS]
    t0 = time.perf_counter()
    for i in range(n):
        CLOCK.enter(stages[i & 1])
    dt = time.perf_counter() - t0
    CLOCK.sink = None
    proto.close()
    drain.wait()
    return 1e6 * dt / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, help="src/ of the checkout to compare with")
    ap.add_argument("--spec", default=os.path.join(HERE, "..", "tests", "specs", "good.py"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--json")
    args = ap.parse_args()
    event_us = per_event_us(args.events)
    runs = {"base": [], "stages": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            for name, src in (("base", args.base), ("stages", SRC)) if r % 2 == 0 else (("stages", SRC), ("base", args.base)):
                runs[name].append(climb(src, args.spec, os.path.join(d, f"{name}{r}.json")))
    result = {"spec": os.path.relpath(args.spec), "rounds": args.rounds, "cores": os.cpu_count(),
              "load_avg": os.getloadavg()[0], "per_stage_event_us": round(event_us, 2)}
    for name, rs in runs.items():
        result[name] = {"points": rs[0]["points"], "wall_s_median": round(statistics.median(x["wall_s"] for x in rs), 2),
                        "rung_s_median": round(statistics.median(x["rung_s"] for x in rs), 2),
                        "rung_s": [round(x["rung_s"], 2) for x in rs]}
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
