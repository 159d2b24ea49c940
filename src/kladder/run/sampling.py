"""What else used the host and the device while a point ran, and what the point itself took:
other processes' CPU (/proc/stat less the climb's own and the worker's), the worker's wait for a
CPU (schedstat), the host's memory when full and the out-of-memory killer's kills (HostSample);
other processes on the CUDA device and their memory (NVML or nvidia-smi: device_load); in the
worker, each stage's peak memory (PeakMemory); whether the host counted as busy (busy)."""
from __future__ import annotations

import contextlib
import os
import time

from ..core.outcome import Load
from . import faults

# The host counts as busy during a point when the other processes (the climb's other lanes
# included) used more than this many cores on average: a hang, crash or out-of-memory seen
# then is re-run alone before it is reported (ladder.Runner).
HOST_BUSY_CORES = 0.25


def busy(load: Load) -> bool:
    """Anything else used the device or the host while the point ran: another lane of this
    climb, another process on the device, or other processes' CPU past HOST_BUSY_CORES."""
    return (load.lanes > 0 or load.processes > 0 or faults.memory_held(load)
            or load.host_cpu_s > HOST_BUSY_CORES * max(load.seconds, 1e-9))


def _host_busy_s() -> float | None:
    """CPU seconds the whole host has spent busy since boot (/proc/stat), or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(v) for v in fields[:8]]
    busy = sum(ticks) - ticks[3] - ticks[4]          # everything but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float:
    """CPU seconds of a live process and of its children it has reaped; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in rest[11:15]) / os.sysconf("SC_CLK_TCK")


def _ours_s(pid: int) -> float:
    """CPU seconds of the climb's own process (its reaped workers included) and one worker's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + _process_cpu_s(pid)


def _waited_s(pid: int) -> float:
    """Seconds a live process's threads spent runnable but waiting for a CPU (the run-queue
    delay of /proc/PID/task/*/schedstat); 0 when it is gone or the kernel keeps no schedstat."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9


# The host's memory counts as full when this share of it is in use once a point ended (after its
# worker's own memory is freed): a worker killed then was likely the out-of-memory killer's choice,
# whoever used the memory.
HOST_FULL_SHARE = 0.9


def host_memory() -> tuple[int | None, int | None]:
    """The host's memory in use (MemTotal less MemAvailable) and its total, in bytes
    (/proc/meminfo), or (None, None) off Linux."""
    found = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    if len(found) < 2:
        return None, None
    return found["MemTotal"] - found["MemAvailable"], found["MemTotal"]


def host_available() -> int | None:
    """The host's available memory now (MemAvailable, /proc/meminfo), or None off Linux."""
    used, total = host_memory()
    return None if used is None else total - used


def oom_kills() -> int | None:
    """The processes the kernel's out-of-memory killer has killed since boot (/proc/vmstat
    oom_kill, Linux 4.13 and up), or None where it is not kept."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _status_bytes(*keys: str) -> dict[str, int]:
    """Fields of /proc/self/status in bytes (VmRSS, VmHWM: the resident set and its peak)."""
    found = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in keys:
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return found


class PeakMemory:
    """In a worker, the most memory each stage of a point took above what the worker held before
    the point: on the host the resident set's peak (VmHWM, reset through /proc/self/clear_refs at
    each stage), on CUDA the caching allocator's peak. What runs, whatever it is (the kernel's
    scratch, the float64 reference's intermediates, the honest peer's draws): sizes.Peak scales it
    to the points that follow. `begin` a point, `stage` at each stage's start, `end` its facts."""

    def __init__(self, device: str):
        self.device = device
        self.current: str | None = None
        self.host0 = self.device0 = None
        self.stages: dict[str, list] = {}

    def begin(self) -> None:
        self.current, self.stages = None, {}
        self._reset()
        self.host0 = _status_bytes("VmRSS").get("VmRSS")
        self.device0 = self._device_now()

    def stage(self, stage) -> None:
        """`stage` begins: the one that ran gets its peak, and the peaks start again."""
        self._close()
        self.current = str(stage)

    def end(self) -> dict:
        """{stage: [host bytes, device bytes or None]}: each stage's peak above the point's start."""
        self._close()
        return self.stages

    def _close(self) -> None:
        if self.current is not None and self.host0 is not None:
            host = max(_status_bytes("VmHWM").get("VmHWM", self.host0) - self.host0, 0)
            dev = None
            if self.device0 is not None:
                import torch
                dev = max(torch.cuda.max_memory_allocated() - self.device0, 0)
            was = self.stages.get(self.current, [0, None])
            self.stages[self.current] = [max(was[0], host), dev if was[1] is None else max(was[1], dev or 0)]
        self._reset()

    def _reset(self) -> None:
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
            f.write("5")                      # the peak resident set starts again from now
        if self.device == "cuda":
            import torch
            if torch.cuda.is_initialized():
                torch.cuda.reset_peak_memory_stats()

    def _device_now(self) -> int | None:
        if self.device != "cuda":
            return None
        import torch
        return torch.cuda.memory_allocated() if torch.cuda.is_initialized() else None


class HostSample:
    """Other processes' CPU time over a point: the host's busy time less the climb's process and
    the point's worker (two reads of /proc at each end: microseconds). A grandchild of the worker
    (Triton's compiler, a mode's own process) counts as another process until it is reaped; a
    mode's process forked by the fork server is the point's own by what the worker reports
    (`children_s`: their CPU seconds, which the server's reaping measured). And the host's memory
    once the point ended (what others still hold after a killed worker's memory is freed) and
    the out-of-memory killer's kills meanwhile."""

    def __init__(self, pid: int):
        self.pid, self.t0 = pid, time.monotonic()
        self.host0, self.ours0, self.worker0, self.wait0 = _host_busy_s(), _ours_s(pid), _process_cpu_s(pid), _waited_s(pid)
        self.kills0 = oom_kills()

    def end(self, children_s: float = 0.0) -> Load:
        host = _host_busy_s()
        ours = _ours_s(self.pid) - self.ours0 + children_s
        others = 0.0 if host is None or self.host0 is None else host - self.host0 - ours
        worker = _process_cpu_s(self.pid) - self.worker0 + children_s
        waited = _waited_s(self.pid) - self.wait0
        used, total = host_memory()
        if used is None or used < HOST_FULL_SHARE * total:
            used = total = None                   # kept only when it was full: what the words then name
        kills = oom_kills()
        return Load(host_cpu_s=round(max(others, 0.0), 3), worker_cpu_s=round(max(worker, 0.0), 3),
                    worker_wait_s=round(max(waited, 0.0), 3), seconds=round(time.monotonic() - self.t0, 3),
                    host_used_bytes=used, host_total_bytes=total,
                    oom_kills=None if kills is None or self.kills0 is None else max(kills - self.kills0, 0))


def device_load(gpu: str | None, ours: list[int]) -> dict:
    """Other processes on the CUDA device and the memory they hold, asked of NVML (pynvml) or
    `nvidia-smi` (neither creates a CUDA context). `ours`: the pids of the climb's live workers.
    Where the device lists other pids than this namespace's (a container), that many of its
    processes are taken as ours, and the others' memory is the device's whole use (an upper
    bound: ours cannot be told apart there)."""
    apps, used, total = _nvml(gpu) or _nvidia_smi(gpu) or ([], None, None)
    mine = [a for a in apps if a[0] in ours]
    if mine or not apps:
        others = [a for a in apps if a[0] not in ours]
        held = sum(m for _, m in others) if others else (0 if apps else None)
        return {"processes": len(others), "device_used_bytes": held, "device_total_bytes": total}
    n = max(0, len(apps) - len(ours))
    return {"processes": n, "device_used_bytes": used if n else 0, "device_total_bytes": total}


def _index(gpu: str | None) -> str:
    return gpu if gpu not in (None, "") else os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"


def _nvml(gpu: str | None):
    try:
        import pynvml
        pynvml.nvmlInit()
        i = _index(gpu)
        h = (pynvml.nvmlDeviceGetHandleByIndex(int(i)) if i.isdigit()
             else pynvml.nvmlDeviceGetHandleByUUID(i.encode() if isinstance(i, str) else i))
        mem = pynvml.nvmlDeviceGetMemoryInfo(h)
        apps = [(p.pid, p.usedGpuMemory or 0) for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
        return apps, int(mem.used), int(mem.total)
    except Exception:  # noqa: BLE001 - no pynvml, no driver: nvidia-smi is asked instead
        return None


def _nvidia_smi(gpu: str | None):
    """The same from `nvidia-smi`, through devicestart.device_state (one parser of its output):
    used memory is total less free."""
    from .devicestart import device_state
    state = device_state(_index(gpu))
    if state["total_bytes"] is None or state["holders"] is None:
        return None
    apps = [(h["pid"], h["used_bytes"] or 0) for h in state["holders"] if h["pid"] is not None]
    return apps, state["total_bytes"] - state["free_bytes"], state["total_bytes"]

