"""The worker process: `python -m kladder.run.worker REF DEVICE`, one JSON line per point on
stdin, one JSON line per outcome on the protocol pipe. Anything the kernel prints goes to
stderr, which the parent keeps per point, so it cannot corrupt the protocol.

The worker answers for everything kladder does: its own errors come back as BROKEN outcomes,
so a worker that ends without an answer was ended by the kernel. It dies with its parent (isolation.hold_lifeline)."""
from __future__ import annotations

import faulthandler
import json
import os
import sys

from .isolation import hold_lifeline

def _setup_torch(device: str) -> dict:
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


def main(argv: list[str]) -> int:
    hold_lifeline()
    ref, device = argv[0], argv[1]
    os.environ["KLADDER_SPEC_REF"] = ref        # modes that start processes of their own (jitcache)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    faulthandler.enable()                      # a segfault leaves a Python traceback in stderr
    import warnings
    warnings.filterwarnings("ignore")
    try:
        info = _setup_torch(device)
    except BaseException as e:  # noqa: BLE001 - the device refused (another process holds it): the parent retries
        proto.write(json.dumps({"error": f"{type(e).__name__}: {e}", "device_error": device == "cuda"}) + "\n")
        return 2
    try:
        from ..fingerprint import fingerprint, source_file
        from ..load import load_spec
        spec = load_spec(ref)
        info["fingerprint"] = fingerprint(source_file(ref), device)
    except BaseException as e:  # noqa: BLE001 - reported to the parent as a usage error
        proto.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return 2
    if device == "cpu":
        from .interpreter import probe
        probe()                                # once, if the spec runs Triton: what its interpreter gets wrong here
    proto.write(json.dumps({"ready": True, **info}) + "\n")
    from ..point import Point
    from .faults import Result, kladder_error
    from .stages import CLOCK
    from .trial import run_point
    # the parent's watchdog times each stage by its kind: it learns here which one began
    CLOCK.sink = lambda stage: proto.write('{"stage": "%s"}\n' % stage)
    from . import forkserver
    for line in sys.stdin:
        msg = json.loads(line)
        point = Point.from_dict(msg["point"])
        forkserver.ADDRESS, forkserver.CPU.s = msg.get("forkserver"), 0.0   # the modes' own processes fork from it
        try:
            result = run_point(spec, point, device)
        except BaseException as e:  # noqa: BLE001 - kladder's own bug: an answer, not a silent death
            result = Result(kladder_error(point, e), fatal=True)
        proto.write(json.dumps({"outcome": result.outcome.to_dict(), "fatal": result.fatal,
                                "children_cpu_s": round(forkserver.CPU.s, 3)}) + "\n")
        proto.flush()
        if result.fatal:
            os._exit(3)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)                                # stdin closed: no interpreter teardown to wait for


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
