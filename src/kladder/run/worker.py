"""The worker process: `python -m kladder.run.worker REF DEVICE`, one JSON line per point on
stdin, one JSON line per outcome on the protocol pipe. Anything the kernel prints goes to
stderr, which the parent keeps per point, so it cannot corrupt the protocol.

The worker answers for everything kladder does: its own errors come back as BROKEN outcomes,
so a worker that ends without an answer was ended by the kernel. It dies with its parent (isolation.hold_lifeline),
and every process a kernel starts dies with it (run/reaper.py: a subreaper on Linux)."""
from __future__ import annotations

import faulthandler
import json
import os
import sys

from .isolation import PeakMemory, hold_lifeline
from .reaper import end_descendants, subreaper


def setup_torch(device: str) -> dict:
    """torch as every point runs under it (in a worker, and in `kladder repro`'s own process);
    returns the hello's device facts."""
    import torch

    from .settings import deterministic_on
    # Outputs the kernel allocates itself (torch.empty) come back NaN-filled (ints: the max
    # value) instead of holding a previous tensor's plausible bytes (torch.use_deterministic_algorithms
    # as torch does it, without importing Inductor's config: run/settings.py)
    deterministic_on()
    torch.utils.deterministic.fill_uninitialized_memory = True
    if device == "cpu":
        # CPU points are small (the CPU budget): torch's intra-op threads only wait on each other
        # there, and on a loaded 2-core machine a 17 x 768 layer_norm took 44 ms with 2 threads
        # and 0.05 ms with one (measured)
        torch.set_num_threads(1)
    info = {"device_name": "cpu"}
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        info = {"device_name": torch.cuda.get_device_name(), "free_bytes": free}
    return info


def prepare(ref: str, device: str, info: dict):
    """After setup_torch: the spec loaded, the environment's fingerprint taken (into `info`, the
    hello's facts), and on the CPU Triton's interpreter probed. Returns the spec; raises what failed."""
    from ..core.fingerprint import fingerprint, source_file
    from ..gen.load import load_spec
    spec = load_spec(ref)
    info["fingerprint"] = fingerprint(source_file(ref), device)
    if device == "cpu":
        from .interpreter import probe
        probe()                                # once, if the spec runs Triton: what its interpreter gets wrong here
    return spec


def serve(spec, device: str, lines, proto) -> None:
    """Run each point that arrives on `lines` (one JSON line each), its outcome a JSON line on
    `proto`; returns when `lines` ends. A point after which the process must not go on (a device
    fault) ends it with exit status 3 once its answer is written."""
    from ..core.point import Point
    from .faults import Result, kladder_error
    from .stages import CLOCK
    from .trial import run_point
    # the parent's watchdog times each stage by its kind: it learns here which one began; each
    # stage's peak memory is measured between them (isolation.PeakMemory)
    peak = PeakMemory(device)

    def sink(stage) -> None:
        peak.stage(stage)
        proto.write('{"stage": "%s"}\n' % stage)
    CLOCK.sink = sink
    from . import forkserver
    for line in lines:
        msg = json.loads(line)
        point = Point.from_dict(msg["point"])
        forkserver.ADDRESS, forkserver.CPU.s = msg.get("forkserver"), 0.0   # the modes' own processes fork from it
        peak.begin()
        try:
            result = run_point(spec, point, device)
        except BaseException as e:  # noqa: BLE001 - kladder's own bug: an answer, not a silent death
            result = Result(kladder_error(point, e), fatal=True)
        proto.write(json.dumps({"outcome": result.outcome.to_dict(), "fatal": result.fatal,
                                "children_cpu_s": round(forkserver.CPU.s, 3), "peak": peak.end()}) + "\n")
        proto.flush()
        if result.fatal:
            end_descendants(os.getpid())
            os._exit(3)


def main(argv: list[str]) -> int:
    subreaper()                                # every process a kernel starts stays below this one (run/reaper.py)
    hold_lifeline()
    ref, device = argv[0], argv[1]
    os.environ["KLADDER_SPEC_REF"] = ref        # modes that start processes of their own (jitcache)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()                      # a segfault leaves a Python traceback in stderr
    import warnings
    warnings.filterwarnings("ignore")
    try:
        info = setup_torch(device)
    except BaseException as e:  # noqa: BLE001 - the device refused (another process holds it): the parent retries
        proto.write(json.dumps({"error": f"{type(e).__name__}: {e}", "device_error": device == "cuda"}) + "\n")
        return 2
    try:
        spec = prepare(ref, device, info)
    except BaseException as e:  # noqa: BLE001 - reported to the parent as a usage error
        proto.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return 2
    proto.write(json.dumps({"ready": True, **info}) + "\n")
    serve(spec, device, sys.stdin, proto)
    sys.stdout.flush()
    sys.stderr.flush()
    end_descendants(os.getpid())               # the kernel's processes end with the worker, wherever they went
    os._exit(0)                                # stdin closed: no interpreter teardown to wait for


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
