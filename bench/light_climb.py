"""Issue 32's targets, measured side by side in one run (one device call of ~9 minutes):

- start: the CLI's own start, the yardstick of a re-climb: `python -c 'import torch'`, `kladder --help`
  and `kladder points TWIN --rungs 1` (medians of 3).
- twin: the zoo's fixed rmsnorm (a copy of src/kladder/zoo/rmsnorm_n_tail.py in a temporary folder,
  climbed as COPY.py::fixed), every rung: `cold` (a fresh outcome store and history, empty Triton and
  inductor caches: TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR and KLADDER_HISTORY at fresh paths),
  `again` with nothing changed (the same store and caches), and `edit` after a one-line change to the
  twin's kernel that changes its code but not its results (its rstd line times 1.0). Where `kladder
  climb --help` lists --fresh (the outcome store, issue 32 item 1) the cold climb passes it; otherwise
  the result says "store not available" and `again` measures a climb on warm compile caches only.
- gemv: the time to judge one big point of a GEMV wrong by 8% there (bench/specs/gemv_wrong.py; M = 1,
  N = 16384, K = 65536, float32: w 4 GiB), through `kladder repro` (its wall, and the point's own
  seconds and stages from the history it records).
- liger: five ops of liger-kernel (bench/specs/liger/), rungs 1-3, two climbs side by side on one
  device (a pool of two: the next starts when one ends), each on a fresh history, the five sharing
  fresh compile caches. Skipped, saying so, where liger_kernel does not import.

Every step runs in a process group of its own with a timeout (--step-timeout-s, cut to what is left
of --deadline-s): past it the climb gets SIGINT (kladder then writes its report so far, marked
interrupted), then its group SIGKILL. The result is written after every step (strict JSON, `complete:
false` until the end) and a table printed at the end, with each target and whether it was met.
`--device cpu --smoke` runs every step at tiny sizes (rung 1 only, the GEMV's small spec) to test the
bench itself on a machine without a GPU.

On the H100 (liger-kernel installed from its wheel first: bench/README.md has the whole command):
    python3 bench/light_climb.py --device cuda --deadline-s 545 --step-timeout-s 150 --liger-timeout-s 90 \
        --json $OUT/light.json --keep /tmp/keep

usage: python bench/light_climb.py [--device cuda] [--smoke] [--only start,twin,gemv,liger]
                                   [--liger-ops rmsnorm,...] [--side-by-side 2] [--rungs-liger 1-3]
                                   [--gemv-dtype float32] [--gemv-n 16384] [--gemv-k 65536]
                                   [--step-timeout-s 300] [--liger-timeout-s S] [--deadline-s S]
                                   [--json PATH] [--keep DIR] [--twin-args ARGS]
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
LIGER_DIR = os.path.join(HERE, "specs", "liger")
LIGER_OPS = ("rmsnorm", "layernorm", "swiglu", "rope", "fused_add_rmsnorm")
GEMV_SPEC = os.path.join(HERE, "specs", "gemv_wrong.py")
TWIN_CASE = "rmsnorm_n_tail"
STEPS = ("start", "twin", "gemv", "liger")
MIN_STEP_S = 15                      # a step with less time left than this is not started
INTERRUPT_GRACE_S = 20               # after SIGINT, the time kladder has to write its report so far

TARGETS = {"twin_cold_s": 20.0, "twin_again_over_start_s": 2.0, "gemv_point_s": 5.0, "liger_climb_s": 60.0}


# ---------------------------------------------------------------------------- processes
def child_env(extra: dict | None = None) -> dict:
    """This tree's src/ first on PYTHONPATH, the rest of the environment's after it (carried wheels)."""
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.abspath(p) != SRC]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, *rest]), "PYTHONUNBUFFERED": "1", **(extra or {})}


def kladder(*args: str) -> list[str]:
    return [sys.executable, "-m", "kladder.tools.cli", *args]


class Clock:
    """The run's deadline: how long a step may take (its own limit, cut to what is left)."""

    def __init__(self, deadline_s: float | None, step_timeout_s: float):
        self.t0, self.deadline_s, self.step_timeout_s = time.perf_counter(), deadline_s, step_timeout_s

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def limit(self, step_timeout_s: float | None = None) -> float:
        own = self.step_timeout_s if step_timeout_s is None else step_timeout_s
        return own if self.deadline_s is None else min(own, self.deadline_s - self.elapsed())


def start(cmd: list[str], env: dict, log_path: str) -> tuple[subprocess.Popen, float]:
    out = open(log_path, "w")              # noqa: SIM115 - closed by finish()
    p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    p._bench_out = out                     # type: ignore[attr-defined]
    return p, time.perf_counter()


def ended(p: subprocess.Popen, t0: float, limit_s: float, state: dict) -> bool:
    """Whether `p` has ended, stopping it past its limit: SIGINT once (kladder then writes its report so
    far, marked interrupted), and past the limit plus INTERRUPT_GRACE_S, SIGKILL to the group it started."""
    if p.poll() is not None:
        return True
    over = time.perf_counter() - t0 - limit_s
    if over >= 0 and not state.get("timed_out"):
        state["timed_out"] = True
        p.send_signal(signal.SIGINT)
    if over >= INTERRUPT_GRACE_S:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        return True
    return False


def finish(p: subprocess.Popen, t0: float, limit_s: float, log_path: str, state: dict | None = None) -> dict:
    """Wait for `p` (stopping it past its limit); its wall time, exit status and output's tail."""
    state = {} if state is None else state
    while not ended(p, t0, limit_s, state):
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    p._bench_out.close()                   # type: ignore[attr-defined]
    with open(log_path, errors="replace") as f:
        tail = f.read()[-1500:]
    return {"wall_s": round(wall, 3), "exit": p.returncode, "timed_out": bool(state.get("timed_out")),
            "timeout_s": round(limit_s, 1), "output_tail": tail}


def run(cmd: list[str], env: dict, timeout_s: float, log_path: str) -> dict:
    p, t0 = start(cmd, env, log_path)
    return {"cmd": " ".join(cmd[2:] if cmd[1] == "-m" else cmd), **finish(p, t0, timeout_s, log_path)}


# ---------------------------------------------------------------------------- reports
def report_summary(path: str) -> dict | None:
    """What a climb's JSON report says about its speed: each rung's seconds and counts, the verdicts,
    and anything it says about reused outcomes (the store's keys, whatever their names)."""
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError):
        return None
    rungs = {str(r["rung"]): {"seconds": r["seconds"], "points": len(r["points"]), "verdict": r["verdict"],
                              "counts": r.get("counts")}
             for r in rep.get("rungs", []) if r.get("climbed")}
    statuses: dict[str, int] = {}
    for r in rep.get("rungs", []):
        for p in r["points"]:
            statuses[p["status"]] = statuses.get(p["status"], 0) + 1
    return {"seconds": rep.get("seconds"), "exit_code": rep.get("exit_code"), "interrupted": rep.get("interrupted"),
            "device_name": rep.get("device_name"), "lowest_failing_rung": rep.get("lowest_failing_rung"),
            "statuses": statuses, "rungs": rungs, "reuse": reuse_facts(rep)}


def reuse_facts(rep, path: str = "") -> dict:
    """Every field of the report whose name speaks of reuse (the outcome store's, once it lands)."""
    found = {}
    if isinstance(rep, dict):
        for k, v in rep.items():
            if k in ("rungs", "fingerprint"):
                continue
            if "reuse" in k.lower() or "store" in k.lower():
                found[path + k] = v
            elif isinstance(v, dict):
                found.update(reuse_facts(v, path + k + "."))
    return found


def store_available(env: dict) -> dict:
    """Whether this kladder has the outcome store (issue 32 item 1): `kladder climb --help` lists --fresh."""
    p = subprocess.run(kladder("climb", "--help"), env=env, capture_output=True, text=True, cwd=ROOT)
    has = "--fresh" in p.stdout
    return {"available": has, "note": "--fresh found in `kladder climb --help`" if has else
            "store not available: `kladder climb --help` lists no --fresh (every climb runs every point)"}


# ---------------------------------------------------------------------------- steps
def step_start(args, ctx) -> dict:
    """The CLI's own start, three ways, the median of 3 each."""
    cmds = {"import torch": [sys.executable, "-c", "import torch"],
            "kladder --help": kladder("--help"),
            "kladder points": kladder("points", ctx["twin_ref"], "--rungs", "1", "--device", args.device)}
    out = {}
    for name, cmd in cmds.items():
        walls = []
        for i in range(3):
            r = run(cmd, ctx["env"], ctx["clock"].limit(), os.path.join(ctx["tmp"], f"start{i}.log"))
            if r["exit"] != 0:
                out[name] = {"error": r}
                break
            walls.append(r["wall_s"])
        else:
            out[name] = {"walls_s": walls, "median_s": round(statistics.median(walls), 3)}
    return out


def twin_copy(tmp: str) -> tuple[str, str]:
    """The zoo's rmsnorm case copied into `tmp` (its fixed twin climbed from there), and the path."""
    origin = os.path.join(SRC, "kladder", "zoo", f"{TWIN_CASE}.py")
    path = os.path.join(tmp, "twin", "rmsnorm_twin.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copy(origin, path)
    return path, f"{path}::fixed"


def edit_twin(path: str) -> dict:
    """One line of the fixed twin's kernel changed so that its code changes but not its results:
    rstd times 1.0 (exact for every float). Raises if the line is not where it was."""
    with open(path) as f:
        lines = f.read().split("\n")
    start_at = next(i for i, ln in enumerate(lines) if ln.startswith("def _rmsnorm_kernel_fixed"))
    i = next(i for i in range(start_at, len(lines)) if lines[i].strip().startswith("rstd = tl.rsqrt("))
    before, lines[i] = lines[i], lines[i] + " * 1.0"
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return {"line": i + 1, "before": before.strip(), "after": lines[i].strip()}


def twin_climb(args, ctx, name: str, extra: list[str]) -> dict:
    out = os.path.join(ctx["tmp"], f"twin_{name}.json")
    marks = os.path.join(ctx["tmp"], f"twin_{name}.timeline.jsonl")
    cmd = kladder("climb", ctx["twin_ref"], "--device", args.device, "--json", out, "--log", out + "l",
                  "--history", ctx["twin_history"], "--quiet", *extra, *shlex.split(args.twin_args),
                  *(["--rungs", "1"] if args.smoke else []))
    r = run(cmd, {**ctx["twin_env"], "KLADDER_TIMELINE": marks}, ctx["clock"].limit(),
            os.path.join(ctx["tmp"], f"twin_{name}.log"))
    r["report"] = report_summary(out)
    r["timeline"] = timeline_summary(marks)
    keep(args, out)
    keep(args, marks)
    return r


def timeline_summary(path: str) -> dict | None:
    """Where the climb's time went (KLADDER_TIMELINE's marks, run/timeline.py; None where this
    kladder writes none): each rung's start and end, and each lane thread's points and busy
    seconds, from the climb's start; the longest waits for a lane (asked to got)."""
    try:
        with open(path) as f:
            marks = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return None
    t0 = next((m["at"] for m in marks if m["kind"] == "climb"), None)
    if t0 is None:
        return None
    rungs: dict = {}
    for m in marks:
        if m["kind"] in ("rung", "rung_end"):
            rungs.setdefault(str(m["rung"]), {})["start" if m["kind"] == "rung" else "end"] = round(m["at"] - t0, 2)
    threads: dict = {}
    for m in marks:
        if m["kind"] == "run":
            t = threads.setdefault(m["thread"], {"points": 0, "busy_s": 0.0, "first_s": None, "last_s": 0.0})
            t["points"] += 1
            t["busy_s"] = round(t["busy_s"] + m["ended"] - m["got"], 2)
            t["first_s"] = round(m["got"] - t0, 2) if t["first_s"] is None else t["first_s"]
            t["last_s"] = round(max(t["last_s"], m["ended"] - t0), 2)
    waits = sorted(({"point": m["point"], "thread": m["thread"], "waited_s": round(m["got"] - m["asked"], 2)}
                    for m in marks if m["kind"] == "run" and m["got"] - m["asked"] >= 0.1),
                   key=lambda w: -w["waited_s"])[:8]
    return {"rungs": rungs, "threads": threads, "waits": waits}


def step_twin(args, ctx, result) -> None:
    fresh = ["--fresh"] if ctx["store"]["available"] else []
    for name, extra in (("cold", fresh), ("again", []), ("edit", [])):
        if name == "edit":
            result["twin_edit_line"] = edit_twin(ctx["twin_path"])
        if ctx["clock"].limit() < MIN_STEP_S:
            result["steps"][f"twin_{name}"] = {"skipped": "the deadline"}
            continue
        result["steps"][f"twin_{name}"] = twin_climb(args, ctx, name, extra)
        write(args, result)


def gemv_point(args) -> tuple[str, str]:
    if args.smoke:
        sizes, ref, name = (1, 64, 256), f"{GEMV_SPEC}::small", "gemv_wrong_small"
    else:
        sizes, ref, name = (1, args.gemv_n, args.gemv_k), f"{GEMV_SPEC}::spec", "gemv_wrong"
    point = {"spec": name, "rung": 1, "dims": [["M", sizes[0]], ["N", sizes[1]], ["K", sizes[2]]],
             "dtypes": [["x", args.gemv_dtype]], "seed": 1}
    return ref, json.dumps(point)


def history_points(path: str) -> list[dict]:
    """The points a history file holds (status, seconds, stages): where a repro's timing is kept."""
    try:
        with sqlite3.connect(path) as db:
            rows = db.execute("SELECT point_id, status, seconds, stages FROM points").fetchall()
    except sqlite3.Error as e:
        return [{"error": str(e)}]
    return [{"point": p, "status": s, "seconds": sec, "stages": json.loads(st) if st else None}
            for p, s, sec, st in rows]


def step_gemv(args, ctx) -> dict:
    ref, point = gemv_point(args)
    hist = os.path.join(ctx["tmp"], "gemv_history.sqlite")
    cmd = kladder("repro", ref, point, "--device", args.device, "--history", hist)
    r = run(cmd, ctx["env"], ctx["clock"].limit(), os.path.join(ctx["tmp"], "gemv.log"))
    r["points"] = history_points(hist)
    return r


def liger_available(env: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", "import liger_kernel, importlib.metadata as m; "
                        "print(m.version('liger-kernel'))"], env=env, capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        return {"available": False, "note": "liger_kernel does not import: " + p.stderr.strip()[-300:]}
    return {"available": True, "version": p.stdout.strip()}


def liger_command(args, ctx, op: str) -> tuple[list[str], str]:
    out = os.path.join(ctx["tmp"], f"liger_{op}.json")
    hist = os.path.join(ctx["tmp"], f"liger_{op}.sqlite")
    fresh = ["--fresh"] if ctx["store"]["available"] else []
    rungs = "1" if args.smoke else args.rungs_liger
    return kladder("climb", os.path.join(LIGER_DIR, f"{op}.py") + "::spec", "--rungs", rungs, "--device", args.device,
                   "--json", out, "--log", out + "l", "--history", hist, "--quiet", *fresh), out


def step_liger(args, ctx, result) -> None:
    """The ops, `--side-by-side` climbs at a time; each result written as it ends."""
    avail = liger_available(ctx["env"])
    result["liger"] = avail
    if not avail["available"]:
        return
    env = child_env({"TRITON_CACHE_DIR": os.path.join(ctx["tmp"], "liger_triton"),
                     "TORCHINDUCTOR_CACHE_DIR": os.path.join(ctx["tmp"], "liger_inductor")})
    todo, running = list(args.liger_ops), {}
    while todo or running:
        while todo and len(running) < args.side_by_side:
            op = todo.pop(0)
            limit = ctx["clock"].limit(args.liger_timeout_s)
            if limit < MIN_STEP_S:
                result["steps"][f"liger_{op}"] = {"skipped": "the deadline"}
                continue
            cmd, out = liger_command(args, ctx, op)
            log = os.path.join(ctx["tmp"], f"liger_{op}.log")
            marks = os.path.join(ctx["tmp"], f"liger_{op}.timeline.jsonl")
            p, t0 = start(cmd, {**env, "KLADDER_TIMELINE": marks}, log)
            running[op] = (p, t0, limit, out, log, cmd, len(running) + 1, {"marks": marks})
        if running:
            op = wait_any(running)
            p, t0, limit, out, log, cmd, beside, state = running.pop(op)
            r = {"cmd": " ".join(cmd[2:]), "side_by_side_at_start": beside, **finish(p, t0, limit, log, state),
                 "report": report_summary(out), "timeline": timeline_summary(state["marks"])}
            result["steps"][f"liger_{op}"] = r
            keep(args, out)
            keep(args, state["marks"])
            write(args, result)


def wait_any(running: dict) -> str:
    """The first of the running climbs to end, each stopped at its own limit meanwhile."""
    while True:
        for op, (p, t0, limit, *_rest, state) in running.items():
            if ended(p, t0, limit, state):
                return op
        time.sleep(0.2)


# ---------------------------------------------------------------------------- verdicts, table, output
def met(value, target, cut: bool = False) -> dict:
    """A target's verdict. A climb cut at its limit missed the target when that limit was past it, and
    says nothing about it otherwise."""
    verdict = None if value is None else value <= target
    if cut:
        verdict = False if value is not None and value > target else None
    return {"value_s": None if value is None else round(value, 3), "target_s": target, "met": verdict, "cut": cut}


def climb_met(step: dict | None, target: float) -> dict:
    """A climb's time as its user waits for it: the process's wall (start-up included)."""
    if not step or "wall_s" not in step:
        return met(None, target)
    if not step.get("timed_out") and step.get("exit") not in (0, 1):
        return {**met(None, target), "note": f"the climb did not run to its end: exit {step.get('exit')}"}
    return met(step["wall_s"] if not step.get("timed_out") else step["timeout_s"], target, bool(step.get("timed_out")))


def point_s(step: dict | None) -> float | None:
    pts = (step or {}).get("points") or []
    return pts[0].get("seconds") if pts and "seconds" in pts[0] else None


def verdicts(result: dict) -> dict:
    s, start_s = result["steps"], result["steps"].get("start", {})
    base = {k: v.get("median_s") for k, v in start_s.items()} if isinstance(start_s, dict) else {}
    again = s.get("twin_again") or {}
    out = {"twin cold": climb_met(s.get("twin_cold"), TARGETS["twin_cold_s"]),
           "twin edit (as cold)": climb_met(s.get("twin_edit"), TARGETS["twin_cold_s"])}
    for name in ("kladder --help", "kladder points"):
        ok = "wall_s" in again and not again.get("timed_out") and base.get(name) is not None
        out[f"twin again over `{name}`"] = met(again["wall_s"] - base[name] if ok else None,
                                               TARGETS["twin_again_over_start_s"])
    out["gemv point (its own seconds)"] = met(point_s(s.get("gemv")), TARGETS["gemv_point_s"])
    out["gemv repro (wall, start-up included)"] = climb_met(s.get("gemv"), TARGETS["gemv_point_s"])
    for k, v in s.items():
        if k.startswith("liger_"):
            out[f"{k} rungs {result['rungs_liger']}"] = climb_met(v, TARGETS["liger_climb_s"])
    return out


def table(result: dict) -> str:
    lines = ["| step | wall | exit | points (passed/failed/skipped/other) | per rung (s) | reuse |", "|---|---|---|---|---|---|"]
    for name, st in result["steps"].items():
        if name == "start":
            continue
        if "skipped" in st:
            lines.append(f"| {name} | skipped: {st['skipped']} | | | | |")
            continue
        rep = st.get("report") or {}
        stat = rep.get("statuses") or {}
        counts = "/".join(str(stat.get(k, 0)) for k in ("passed", "failed", "skipped")) + \
            f"/{sum(v for k, v in stat.items() if k not in ('passed', 'failed', 'skipped'))}" if rep else "-"
        if name == "gemv":
            pts = st.get("points") or [{}]
            counts = f"{pts[0].get('status')} in {pts[0].get('seconds')} s, stages {pts[0].get('stages')}"
        rungs = ", ".join(f"{k}: {v['seconds']:.1f}" for k, v in (rep.get("rungs") or {}).items())
        cut = " (timed out)" if st.get("timed_out") else ""
        lines.append(f"| {name} | {st.get('wall_s', 0):.1f} s{cut} | {st.get('exit')} | {counts} | {rungs} | "
                     f"{rep.get('reuse') or ''} |")
    start_s = result["steps"].get("start")
    if start_s:
        lines.append("")
        lines.append("the CLI's own start (median of 3): " + ", ".join(
            f"{k} {v['median_s']:.2f} s" if "median_s" in v else f"{k} failed" for k, v in start_s.items()))
    lines.append("")
    lines.append("targets (issue 32)" + ("" if result["targets_apply"] else
                 ": NOT the targets' run (smoke, or not on CUDA): the numbers test the bench, not kladder") + ":")
    for k, v in result.get("targets", {}).items():
        mark = "n/a" if v["met"] is None else ("met" if v["met"] else "MISSED")
        val = "-" if v["value_s"] is None else (f"cut at {v['value_s']:.0f} s" if v.get("cut") else f"{v['value_s']:.2f} s")
        lines.append(f"  {k}: {val} (target <= {v['target_s']:.0f} s): {mark}")
    return "\n".join(lines)


def write(args, result: dict) -> None:
    if not args.json:
        return
    if SRC not in sys.path:
        sys.path.insert(0, SRC)
    from kladder.report.jsonout import dumps, write_atomic
    write_atomic(args.json, dumps(result, indent=1) + "\n")


def keep(args, path: str) -> None:
    if args.keep and os.path.exists(path):
        os.makedirs(args.keep, exist_ok=True)
        shutil.copy(path, os.path.join(args.keep, os.path.basename(path)))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (the targets' device) or cpu (with --smoke)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, rung 1 only: the bench tested on the CPU")
    ap.add_argument("--only", default=",".join(STEPS), help=f"steps to run, comma-separated (of {', '.join(STEPS)})")
    ap.add_argument("--liger-ops", default=",".join(LIGER_OPS), help="liger ops to climb, comma-separated")
    ap.add_argument("--side-by-side", type=int, default=2, help="liger climbs at a time on the device (default 2)")
    ap.add_argument("--rungs-liger", default="1-3", help="the liger climbs' rungs (default 1-3)")
    ap.add_argument("--gemv-dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    ap.add_argument("--gemv-n", type=int, default=16384)
    ap.add_argument("--gemv-k", type=int, default=65536)
    ap.add_argument("--step-timeout-s", type=float, default=300.0, help="the most one step (one climb) may take")
    ap.add_argument("--liger-timeout-s", type=float, default=None,
                    help="the most one liger climb may take (default --step-timeout-s): past the 60 s target, "
                         "a cut climb's report still says how far it got")
    ap.add_argument("--deadline-s", type=float, default=None, help="start nothing past this, cut what runs at it")
    ap.add_argument("--json", default=None, help="the result, written after every step")
    ap.add_argument("--keep", default=None, help="a folder to copy every climb's JSON report into")
    ap.add_argument("--twin-args", default="", help="more arguments for every twin climb (e.g. '--repeat-s 1')")
    args = ap.parse_args(argv)
    args.only = [s for s in args.only.split(",") if s]
    args.liger_ops = [s for s in args.liger_ops.split(",") if s]
    bad = [s for s in args.only if s not in STEPS] + [o for o in args.liger_ops if o not in LIGER_OPS]
    if bad:
        ap.error(f"unknown step or op {bad}: steps are {', '.join(STEPS)}; ops {', '.join(LIGER_OPS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    clock = Clock(args.deadline_s, args.step_timeout_s)
    with tempfile.TemporaryDirectory(prefix="light_climb-") as tmp:
        twin_path, twin_ref = twin_copy(tmp)
        env = child_env()
        twin_env = child_env({"TRITON_CACHE_DIR": os.path.join(tmp, "twin_triton"),
                              "TORCHINDUCTOR_CACHE_DIR": os.path.join(tmp, "twin_inductor"),
                              "KLADDER_HISTORY": os.path.join(tmp, "twin_history.sqlite")})
        ctx = {"tmp": tmp, "env": env, "twin_env": twin_env, "twin_path": twin_path, "twin_ref": twin_ref,
               "twin_history": twin_env["KLADDER_HISTORY"], "clock": clock, "store": store_available(env)}
        result = {"bench": "light_climb", "device": args.device, "smoke": args.smoke,
                  "started": datetime.datetime.now().isoformat(timespec="seconds"), "deadline_s": args.deadline_s,
                  "step_timeout_s": args.step_timeout_s, "cores": os.cpu_count(), "store": ctx["store"],
                  "twin_ref": f"a copy of kladder.zoo.{TWIN_CASE}::fixed", "rungs_liger": "1" if args.smoke
                  else args.rungs_liger, "side_by_side": args.side_by_side, "steps": {}, "complete": False,
                  "targets_apply": args.device == "cuda" and not args.smoke}
        print(ctx["store"]["note"], flush=True)
        for step in args.only:
            if clock.limit() < MIN_STEP_S:
                result["steps"][step] = {"skipped": "the deadline"}
                continue
            print(f"[{clock.elapsed():6.1f} s] {step}", flush=True)
            if step == "start":
                result["steps"]["start"] = step_start(args, ctx)
            elif step == "twin":
                step_twin(args, ctx, result)
            elif step == "gemv":
                result["steps"]["gemv"] = step_gemv(args, ctx)
            else:
                step_liger(args, ctx, result)
            result["targets"] = verdicts(result)
            result["load_avg"] = round(os.getloadavg()[0], 2)
            write(args, result)
        result["elapsed_s"] = round(clock.elapsed(), 1)
        result["complete"] = True
        result["targets"] = verdicts(result)
        write(args, result)
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
