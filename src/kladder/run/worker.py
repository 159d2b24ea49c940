"""The worker process: `python -m kladder.run.worker REF DEVICE`, one Run message per point on
stdin; its Hello (or StartFailed), each StageBegan and each point's Answer on the protocol pipe
(run/protocol.py). Anything the kernel prints goes to
stderr, which the parent keeps per point, so it cannot corrupt the protocol.

The worker answers for everything kladder does: its own errors come back as BROKEN outcomes,
so a worker that ends without an answer was ended by the kernel. It dies with its parent (run/lifeline.py),
and every process a kernel starts dies with it (run/reaper.py: a subreaper on Linux)."""
from __future__ import annotations

import faulthandler
import os
import sys

from .lifeline import hold_lifeline
from .protocol import Answer, Hello, Run, StageBegan, StartFailed, from_wire, to_wire
from .sampling import PeakMemory
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


# The device memory torch's caching allocator may keep, free, between a worker's points: past it,
# the cache goes back to the device before the point's answer (release_cached).
KEEP_CACHED_BYTES = 256 << 20


def release_cached(device: str) -> None:
    """Between points, the device memory this worker's last point freed but torch still caches
    goes back to the device where it is more than KEEP_CACHED_BYTES, before the answer is sent: an
    idle worker otherwise keeps its biggest point's memory for the rest of the climb, and another
    lane's big point, run alone, or another climb's on the same GPU, runs out of memory beside
    it. On an H100 two climbs side by side each left workers holding 16-28 GiB idle; each one's
    big point then ran out of memory, waited the whole minute for the other's to free and was
    not judged (docs/results/2026-12-07-h100-sixth). Costs a cudaFree of what is released."""
    if device != "cuda":
        return
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    if torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > KEEP_CACHED_BYTES:
        torch.cuda.empty_cache()


def prepare(ref: str, device: str, info: dict):
    """After setup_torch: the spec loaded, the environment's fingerprint taken (into `info`, the
    hello's facts), and on the CPU Triton's interpreter probed. Returns the spec; raises what failed."""
    from ..core.fingerprint import fingerprint, source_file
    from ..gen.load import load_spec
    spec = load_spec(ref)
    info["fingerprint"] = fingerprint(source_file(ref), device)
    if device == "cpu":
        from .interpreter import probe, trim
        probe()                                # once, if the spec runs Triton: what its interpreter gets wrong here
        trim()                                 # (rung 8's model calls the kernel outside a harness's watch)
    return spec


def serve(spec, device: str, lines, proto, ref: str | None = None) -> None:
    """Run each point that arrives on `lines` (a Run message each), its Answer on `proto`;
    returns when `lines` ends. `ref`: the spec's reference, handed to the modes that start
    processes of their own (forkclient.Children). A point after which the process must not go
    on (a device fault) ends it with exit status 3 once its answer is written."""
    from .faults import Result, kladder_error
    from .forkclient import Children
    from .stages import CLOCK
    from .trial import run_point
    # the parent's watchdog times each stage by its kind: it learns here which one began; each
    # stage's peak memory is measured between them (sampling.PeakMemory)
    peak = PeakMemory(device)

    def sink(stage) -> None:
        peak.stage(stage)
        proto.write(to_wire(StageBegan(stage)))
    CLOCK.sink = sink
    for line in lines:
        msg = from_wire(line, Run)
        point = msg.point
        # the modes' own processes: the spec they load, the server they fork from (the request's)
        children = Children(ref, msg.forkserver)
        peak.begin()
        try:
            result = run_point(spec, point, device, children=children)
        except BaseException as e:  # noqa: BLE001 - kladder's own bug: an answer, not a silent death
            result = Result(kladder_error(point, e), fatal=True)
        peaks = peak.end()
        if not result.fatal:
            release_cached(device)
        proto.write(to_wire(Answer(result.outcome, result.fatal, children.cpu_s, peaks)))
        proto.flush()
        if result.fatal:
            end_descendants(os.getpid())
            os._exit(3)


def main(argv: list[str]) -> int:
    subreaper()                                # every process a kernel starts stays below this one (run/reaper.py)
    hold_lifeline()
    ref, device = argv[0], argv[1]
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()                      # a segfault leaves a Python traceback in stderr
    import warnings
    warnings.filterwarnings("ignore")
    try:
        info = setup_torch(device)
    except BaseException as e:  # noqa: BLE001 - the device refused (another process holds it): the parent retries
        proto.write(to_wire(StartFailed(f"{type(e).__name__}: {e}", device_error=device == "cuda")))
        return 2
    try:
        spec = prepare(ref, device, info)
    except BaseException as e:  # noqa: BLE001 - reported to the parent as a usage error
        proto.write(to_wire(StartFailed(f"{type(e).__name__}: {e}")))
        return 2
    proto.write(to_wire(Hello(**info)))
    serve(spec, device, sys.stdin, proto, ref)
    sys.stdout.flush()
    sys.stderr.flush()
    end_descendants(os.getpid())               # the kernel's processes end with the worker, wherever they went
    os._exit(0)                                # stdin closed: no interpreter teardown to wait for


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
