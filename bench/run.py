"""One entry point for kladder's benchmarks: `python -m bench NAME [ARGS...]` (or
`python bench/run.py NAME [ARGS...]`) runs the bench NAME with ARGS, which go to its own
argparse unchanged (`python -m bench overhead --device cuda --rounds 30`); `python -m bench list`
names them. What it adds to each bench:
- its printed table passes through as it comes, and is kept;
- one JSON document at --out (default bench-NAME.json in the current folder), strict JSON
  (kladder.report.jsonout.dumps): the bench's name and command, its exit status and wall time,
  the environment fingerprint (kladder.core.fingerprint: python, torch, Triton, driver, device,
  kladder, git, the variables that steer compilation), the bench's own JSON result (each bench
  is asked for it where it writes it: --json PATH, a leading OUT.json, or $OUT), and what it
  printed.
Runner options come before NAME: `python -m bench --out r.json overhead --rounds 5`.

The bench runs in a child process with this checkout's src/ first on PYTHONPATH (this tree's
kladder, as `python bench/NAME.py` with PYTHONPATH=src runs it). The fingerprint is taken after
it ends, for the device it ran on (its --device, else the bench's own), so that the runner's CUDA
context never shares the device with what is measured."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
KEPT_LINES = 400                     # the printed output kept in the JSON (the last lines)


@dataclasses.dataclass(frozen=True)
class Bench:
    name: str
    file: str                        # under bench/
    about: str
    result: str | None               # where its JSON goes: "--json" (a flag), "arg" (a leading OUT.json), "$OUT" (a folder)
    device: str = "cpu"              # where it runs when no --device is given
    out_file: str = ""               # the file it writes under $OUT
    env: tuple = ()                  # (name, value) the child needs (never set in this process)


INTERPRETED = (("TRITON_INTERPRET", "1"),)

BENCHES = (
    Bench("overhead", "overhead.py", "what the checks cost a point, against the bare kernel call (issue 25 item 2)",
          "--json", "cuda"),
    Bench("throughput", "repeat_throughput.py", "rung 5's repetition against the bare CUDA graph replay (issue 25 item 3)",
          "arg", "cuda"),
    Bench("climb-speed", "climb_speed.py", "a climb's wall and per-rung time, this tree against --base, alternating",
          "--json", "cuda"),
    Bench("incremental", "incremental.py", "a spec climbed cold, again with nothing changed, and after a one-line "
          "change of its kernel: the outcome store's reuse (issue 32 item 1)", "--json", "cuda"),
    Bench("memory", "memory.py", "peak device memory of a big point against the kernel's own bytes (<= 3x)",
          "--json", "cuda"),
    Bench("false-alarms", "false_alarms.py", "correct torch ops climbed point by point under several seeds: none may fail",
          "--json", "cuda"),
    Bench("startup", "cpu_startup.py", "a trivial rung-1 CPU climb against `python -c 'import torch'`", "--json"),
    Bench("repro-speed", "repro_speed.py", "`kladder repro` of three small CPU points against `import torch` (issue 33)",
          "--json"),
    Bench("big-point", "big_point.py", "kladder's stages at one 2 GiB GEMV point, each against the reference's call",
          "--json", "cuda"),
    Bench("guarded-alloc", "guarded_alloc.py", "the cost of guarding the kernel's own allocations", "arg"),
    Bench("spec-construction", "spec_construction.py", "what constructing a Spec costs, in microseconds", "--json"),
    Bench("stage-events", "stage_events.py", "what stage timing costs a climb, against --base", "--json"),
    Bench("shared-device", "shared_device.py", "three climbs side by side on one GPU: none blamed for the others",
          "--json", "cuda"),
    Bench("zoo-margins", "zoo_margins.py", "how far past its budget a zoo case's value failures are", "--json",
          env=INTERPRETED),
    Bench("rung8-reuse", "rung8_reuse.py", "rung 8 with the free run reused as the teacher-forced run", "arg",
          env=INTERPRETED),
    Bench("interpreter-checks", "interpreter_checks.py", "Triton's interpreter with and without its dead overflow "
          "checks: zoo points and rung 8's model, side by side, outcomes compared", "--json", env=INTERPRETED),
    Bench("rung5-points", "rung5_points.py", "one spec's rung-5 points through the Runner (REF OUTDIR NAME)", None, "cuda"),
    Bench("rung7-probe", "rung7_probe.py", "what the launch recorder and the profiler see for rung 7's zoo cases",
          "$OUT", "cuda", out_file="rung7_probe.json"),
    Bench("fence-variants", "fence_variants.py", "which split-row reduction races on this GPU, and how often", "arg",
          "cuda"),
    Bench("missing-fence-rates", "missing_fence_rates.py", "missing_fence's stale-read rate by shape", "arg", "cuda"),
    Bench("output-hash", "output_hash.py", "what hashing a big output costs against a device copy (run/hashes.py)",
          "--json", "cuda"),
    Bench("zoo-at-once", "zoo_at_once.py", "zoo cases one climb at a time against side by side, tables compared",
          "--json", env=INTERPRETED),
    Bench("sdpa-tie", "sdpa_tie.py", "why torch's bfloat16 SDPA fails one element on the H200 (a near tie)", None,
          "cuda"),
    Bench("light-climb", "light_climb.py", "issue 32's targets: the rmsnorm twin cold, again and edited, the wrong "
          "GEMV's big point, five liger-kernel ops side by side", "--json", "cuda"),
    Bench("pattern-speed", "pattern_speed.py", "finding a mask's pattern (describe) at a big point's size, this tree "
          "against --base, the patterns compared", "--json"),
    Bench("point-profile", "point_profile.py", "where one point's time goes in this process, its stages and cProfile's "
          "functions (--points FILE: [spec ref, point] pairs)", "--json", "cuda"),
    Bench("hostile-probes", "hostile_probes.py", "issue 36's probe families as real kladder processes: point strings, "
          "full disks, damaged history, signals, forking kernels", "--json"),
    Bench("shared-gpu", "shared_gpu.py", "issue 38's independence by ownership on a GPU: the MoE twin, the zoo's shared "
          "reference, a torch op under test", "--json", "cuda"),
)
BY_NAME = {b.name: b for b in BENCHES}
NOT_BENCHES = ("planted.py", "rung6_shared_gpu.py", "run.py", "__init__.py", "__main__.py")   # spec modules, this runner


def listing() -> str:
    width = max(len(b.name) for b in BENCHES)
    return "\n".join(f"{b.name:{width}}  {b.device:4}  {b.about}  (bench/{b.file})" for b in BENCHES)


def with_result_path(b: Bench, args: list[str], tmp: str) -> tuple[list[str], str | None, dict]:
    """The bench's arguments with a place for its JSON result (the user's, when given), that
    place, and what the child's environment adds."""
    if b.result == "--json":
        if "--json" in args[:-1]:
            return args, args[args.index("--json") + 1], {}
        given = next((a.split("=", 1)[1] for a in args if a.startswith("--json=")), None)
        if given:
            return args, given, {}
        path = os.path.join(tmp, "result.json")
        return [*args, "--json", path], path, {}
    if b.result == "arg":
        if args and args[0].endswith(".json"):
            return args, args[0], {}
        path = os.path.join(tmp, "result.json")
        return [path, *args], path, {}
    if b.result == "$OUT":
        folder = os.environ.get("OUT") or tmp
        return args, os.path.join(folder, b.out_file), {"OUT": folder}
    return args, None, {}


def device_of(b: Bench, args: list[str]) -> str:
    for i, a in enumerate(args):
        if a == "--device" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--device="):
            return a.split("=", 1)[1]
    return b.device


def child_env(b: Bench, extra: dict) -> dict:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, **dict(b.env), **extra, "PYTHONPATH": os.pathsep.join(p for p in (SRC, path) if p),
            "PYTHONUNBUFFERED": "1"}


def run(b: Bench, args: list[str], extra: dict | None = None) -> tuple[int, list[str], float]:
    """The bench in a child process, its output passed through line by line and kept (the last
    KEPT_LINES); its exit status and wall time."""
    cmd = [sys.executable, os.path.join(HERE, b.file), *args]
    t0 = time.perf_counter()
    kept: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=child_env(b, extra or {})) as p:
        for line in p.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            kept.append(line.rstrip("\n"))
            del kept[:-KEPT_LINES]
    return p.returncode, kept, time.perf_counter() - t0


def fingerprint_for(device: str) -> dict:
    """The environment as kladder's reports give it, with the device's details where it is CUDA
    (torch imported and CUDA initialised here only now, after the bench has ended)."""
    sys.path.insert(0, SRC)
    from kladder.core.fingerprint import fingerprint
    if device.startswith("cuda") or device == "auto":
        try:
            import torch
            if torch.cuda.is_available():
                torch.cuda.init()
                device = "cuda"
        except ImportError:
            pass
    return fingerprint(os.path.join(HERE, "run.py"), "cuda" if device.startswith("cuda") else "cpu" if device == "cpu" else None)


def read_result(path: str | None):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError:
        return {"unreadable": text[-2000:]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description="Run one of kladder's benchmarks by name.",
                                 epilog="benchmarks:\n" + listing(), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="the JSON document's path (default: bench-NAME.json in the current folder)")
    ap.add_argument("name", help="a benchmark's name, or `list`")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the benchmark's own arguments (see python -m bench NAME --help)")
    ns = ap.parse_args(argv)
    if ns.name == "list":
        print(listing())
        return 0
    b = BY_NAME.get(ns.name)
    if b is None:
        print(f"python -m bench: no benchmark named {ns.name!r}; `python -m bench list` names them.", file=sys.stderr)
        return 2
    if any(a in ("-h", "--help") for a in ns.args):
        return run(b, ns.args)[0]
    with tempfile.TemporaryDirectory() as tmp:
        args, result_path, extra = with_result_path(b, list(ns.args), tmp)
        code, printed, seconds = run(b, args, extra)
        result = read_result(result_path)
    doc = {"bench": b.name, "file": f"bench/{b.file}", "command": ["python", "-m", "bench", b.name, *ns.args],
           "exit": code, "seconds": round(seconds, 3), "fingerprint": fingerprint_for(device_of(b, ns.args)),
           "result": result, "printed": printed}
    sys.path.insert(0, SRC)
    from kladder.report.jsonout import dumps, write_atomic
    out = ns.out or f"bench-{b.name}.json"
    write_atomic(out, dumps(doc, indent=1) + "\n")
    print(f"bench {b.name}: exit {code} in {seconds:.1f} s; JSON in {out}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
