"""A device that others are using (a CI matrix runs climbs side by side on one GPU): starting a
CUDA context, or asking the device for its memory, can fail for a while (out of memory while
another climb holds the device, a context limit). kladder waits and tries again for a bounded
time, then stops the climb with one line that says what failed, what the device had free and
who held it, and a report that says the same (report.start_error); never a traceback, never a
kernel blamed.

Who holds the device comes from NVML through `nvidia-smi` (no CUDA context needed, so asking
costs the full device nothing); where it is missing, the line says the holders are unknown."""
from __future__ import annotations

import shutil
import subprocess
import time

# How long a climb waits for a device that refuses a context or a query before it gives up:
# three minutes covers another climb's start-up and its largest points on an H200, and bounds
# how long a CI job can hang on a device that never frees.
DEVICE_RETRY_S = 180.0
DEVICE_RETRY_STEP_S = 5.0       # between tries: a worker's start costs seconds of host time
NVIDIA_SMI_TIMEOUT_S = 10.0
MIB = 1 << 20


class DeviceStartError(RuntimeError):
    """The device could not be used within DEVICE_RETRY_S: `facts` for the report (kind
    "device", what, error, waited_s, gpu, free_bytes, total_bytes, holders; the report's
    start_error adds their message: report/words/environment.device_start_error)."""

    def __init__(self, what: str, error: str, gpu: str | None = None, waited_s: float = 0.0):
        self.what, self.error, self.gpu, self.waited_s = what, error.strip().splitlines()[0] if error.strip() else "", gpu, waited_s
        super().__init__(f"{what}: {self.error}")

    @property
    def facts(self) -> dict:
        return {"kind": "device", "what": self.what, "error": self.error, "waited_s": round(self.waited_s, 1),
                "gpu": self.gpu, **device_state(self.gpu)}


def retrying(what: str, call, gpu: str | None = None, budget_s: float | None = None,
             step_s: float | None = None, stop=lambda: False, errors: tuple = (Exception,)):
    """`call()`, tried again every `step_s` while it raises one of `errors` (a CUDA call of
    this process: any error is the device's), for `budget_s` at most; then a DeviceStartError
    naming `what`. `stop()` true ends the wait at once (the climb is closing)."""
    budget_s = DEVICE_RETRY_S if budget_s is None else budget_s
    step_s = DEVICE_RETRY_STEP_S if step_s is None else step_s
    t0 = time.monotonic()
    while True:
        try:
            return call()
        except DeviceStartError as e:
            error = e.error
        except errors as e:
            error = f"{type(e).__name__}: {e}"
        waited = time.monotonic() - t0
        if waited + step_s > budget_s or stop():
            raise DeviceStartError(what, error, gpu, waited)
        _sleep(step_s, stop)


def _sleep(seconds: float, stop) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop():
        time.sleep(min(0.25, max(0.0, end - time.monotonic())))


def device_state(gpu: str | None = None) -> dict:
    """The device's free and total memory and the processes holding it, as NVML reports them
    (nvidia-smi); `gpu` is a CUDA_VISIBLE_DEVICES entry (an index or a UUID), None for all."""
    state = {"free_bytes": None, "total_bytes": None, "holders": None}
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return state
    gpus = _smi(smi, "--query-gpu=index,uuid,memory.free,memory.total")
    apps = _smi(smi, "--query-compute-apps=gpu_uuid,pid,process_name,used_memory")
    if gpus is None:
        return state
    chosen = [g for g in gpus if len(g) == 4 and (gpu is None or gpu in (g[0], g[1]) or g[1].startswith(gpu))]
    if not chosen:
        return state
    uuids = {g[1] for g in chosen}
    state["free_bytes"] = sum(_mib(g[2]) or 0 for g in chosen)
    state["total_bytes"] = sum(_mib(g[3]) or 0 for g in chosen)
    if apps is not None:
        state["holders"] = [{"pid": int(a[1]) if a[1].isdigit() else None, "name": a[2], "used_bytes": _mib(a[3])}
                            for a in apps if len(a) == 4 and a[0] in uuids]
    return state


def _smi(smi: str, query: str) -> list[list[str]] | None:
    try:
        p = subprocess.run([smi, query, "--format=csv,noheader,nounits"], capture_output=True, text=True,
                           timeout=NVIDIA_SMI_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return [[c.strip() for c in line.split(",")] for line in p.stdout.splitlines() if line.strip()]


def _mib(text: str) -> int | None:
    try:
        return int(float(text) * MIB)
    except ValueError:
        return None
