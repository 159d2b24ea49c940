"""Many climbs, one device (issue 19, item 3): three `kladder climb ... --json` processes side
by side on one GPU, as a CI matrix runs them, each spec a correct torch op whose largest points
hold 4 GiB tensors (bench/specs/shared_4g.py). Waits for all three and reports, for each, its
exit status, its report (parsed as strict JSON), the points that failed and their checks, and
the device's busiest moment (nvidia-smi, polled).

Passes when every climb climbed and finished with a complete report (a start refused by a full
device ends in exit 2 with start_error, which the result shows, but does not pass) and no point
FAILED: the ops are correct, so any failure would be a kernel blamed for the others' memory or
time.

usage: python bench/shared_device.py [--rungs 1] [--json PATH] [--keep DIR] [--stagger S]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "specs", "shared_4g.py")
NAMES = ("add_4g", "softmax_4g", "scale_4g")
POLL_S = 2.0


def strict_json(path: str):
    def refuse(c):
        raise ValueError(f"non-strict JSON constant {c}")
    with open(path) as f:
        return json.loads(f.read(), parse_constant=refuse)


def watch(stop: threading.Event, seen: dict) -> None:
    """The device's busiest moment while the climbs run: least free memory, most processes."""
    from kladder.run.devicestart import device_state
    while not stop.is_set():
        s = device_state()
        if s["free_bytes"] is not None and (seen.get("min_free_bytes") is None or s["free_bytes"] < seen["min_free_bytes"]):
            seen["min_free_bytes"], seen["total_bytes"] = s["free_bytes"], s["total_bytes"]
        if s["holders"] is not None:
            seen["max_processes"] = max(seen.get("max_processes", 0), len(s["holders"]))
        stop.wait(POLL_S)


def summary(name: str, code: int, seconds: float, out: str, stderr: str) -> dict:
    row = {"spec": name, "exit_code": code, "seconds": round(seconds, 1), "stderr_tail": stderr[-1500:]}
    if not os.path.exists(out) or os.path.getsize(out) == 0:
        row["report"] = "missing" if not os.path.exists(out) else "0 bytes"
        return row
    try:
        doc = strict_json(out)
    except ValueError as e:
        row["report"] = f"unreadable: {e}"
        return row
    points = [p for r in doc["rungs"] for p in r["points"]]
    row.update(report="complete", report_exit_code=doc["exit_code"], start_error=doc.get("start_error"),
               interrupted=doc["interrupted"], points=len(points),
               counts={s: sum(p["status"] == s for p in points) for s in {p["status"] for p in points}},
               failed=[{"id": p["id"], "status": p["status"], "check": p["failure"], "reason": p["reason"],
                        "warnings": p["warnings"][:3]} for p in points if p["status"] in ("failed", "flaky")],
               not_judged=[{"id": p["id"], "status": p["status"], "reason": p["reason"]} for p in points
                           if p["status"] in ("oom", "broken")])
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rungs", default="1")
    ap.add_argument("--timeout", type=float, help="--timeout for each climb")
    ap.add_argument("--stagger", type=float, default=0.0, help="seconds between the climbs' starts (default 0)")
    ap.add_argument("--keep", help="folder for the reports and logs (default: a temporary one)")
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args()
    from kladder.core.fingerprint import fingerprint
    folder = args.keep or tempfile.mkdtemp(prefix="kladder-shared-")
    os.makedirs(folder, exist_ok=True)
    seen: dict = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(stop, seen), daemon=True)
    watcher.start()
    runs = []
    t0 = time.perf_counter()
    for name in NAMES:
        out, log = os.path.join(folder, f"{name}.json"), os.path.join(folder, f"{name}.jsonl")
        cmd = [sys.executable, "-m", "kladder.tools.cli", "climb", f"{SPECS}::{name}", "--rungs", args.rungs, "--device",
               "cuda", "--json", out, "--log", log, "-q"] + (["--timeout", str(args.timeout)] if args.timeout else [])
        runs.append((name, out, time.perf_counter(), subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                                       stderr=subprocess.PIPE, text=True)))
        time.sleep(args.stagger)
    rows = []
    for name, out, started, p in runs:
        _, err = p.communicate()
        rows.append(summary(name, p.returncode, time.perf_counter() - started, out, err))
    stop.set()
    watcher.join(timeout=POLL_S * 2 + 15)
    reports_ok = all(r["report"] == "complete" and r["exit_code"] == r["report_exit_code"] for r in rows)
    started_ok = all(r.get("start_error") is None for r in rows if r["report"] == "complete")   # each climbed
    blamed = [f"{r['spec']} {f['id']}: {f['check']}" for r in rows for f in r.get("failed", [])]
    result = {"bench": "shared_device", "rungs": args.rungs, "seconds": round(time.perf_counter() - t0, 1),
              "folder": folder, "device": seen, "climbs": rows, "reports_complete": reports_ok,
              "all_climbed": started_ok, "kernels_blamed": blamed,
              "passed": reports_ok and started_ok and not blamed, "fingerprint": fingerprint(SPECS, None)}
    text = json.dumps(result, indent=1, allow_nan=False, default=str)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
