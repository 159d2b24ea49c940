"""The heap-check re-run: a point whose worker died as heap damage does is run again alone in a
fresh worker with glibc's malloc checks on before it is blamed (run/rerun.py's HEAP_CHECK: the
trigger and what is reported)."""
from __future__ import annotations

import os

from ..core.errors import WorkerError
from ..core.outcome import Outcome
from . import rerun
from .workers import Worker

# glibc's malloc debugging: since glibc 2.34 the checks live in libc_malloc_debug.so, loaded by
# LD_PRELOAD; MALLOC_CHECK_=3 (older glibc) and the tunable (newer) make every free and malloc
# check the chunk's metadata and abort at the first damaged one; MALLOC_PERTURB_ fills freed
# and fresh memory with a byte pattern, so a use of freed memory reads garbage, not old values.
MALLOC_DEBUG_LIBS = ("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0", "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0",
                     "/lib/aarch64-linux-gnu/libc_malloc_debug.so.0", "/usr/lib64/libc_malloc_debug.so.0",
                     "/lib64/libc_malloc_debug.so.0")


def heap_check_env() -> dict[str, str]:
    """A worker's environment additions for a run with glibc's malloc checks on."""
    env = {"MALLOC_CHECK_": "3", "MALLOC_PERTURB_": "165",
           "GLIBC_TUNABLES": ":".join(t for t in (os.environ.get("GLIBC_TUNABLES", ""),
                                                 "glibc.malloc.check=3:glibc.malloc.perturb=165") if t)}
    lib = next((p for p in MALLOC_DEBUG_LIBS if os.path.exists(p)), None)
    if lib:
        env["LD_PRELOAD"] = ":".join(p for p in (os.environ.get("LD_PRELOAD", ""), lib) if p)
    return env


def heap_checked_rerun(pool, seen: rerun.Seen, timeout_s: float) -> Outcome:
    """A point whose worker died as heap damage does (faults.looks_like_heap_damage), re-run
    alone in a fresh worker with glibc's malloc checks on before it is blamed: the damage may
    be an earlier point's, in that worker (faults.after_heap_check says which it was). On CUDA
    the same: the host heap is what a SIGABRT says was damaged (the device's memory cannot
    abort the process); PYTORCH_NO_CUDA_MEMORY_CACHING is not set, since it changes what a
    store past a device tensor lands in, not what the host heap holds. `seen`: the crash as
    rerun.HEAP_CHECK's trigger read it; its settle says what is reported."""
    crashed = seen.outcome
    if pool.closed:
        return crashed
    w = Worker(pool.ref, pool.device, pool.gpus[0], extra_env=heap_check_env())
    try:
        alone, _ = w.run(seen.point, timeout_s)
    except WorkerError:
        return crashed                      # the checked worker could not start: the crash stands as it was
    finally:
        w.kill()
        w.close()
    return rerun.HEAP_CHECK.settle(seen, alone)
