"""Where a climb's time went, for kladder's own benchmarks (bench/light_climb.py): with
KLADDER_TIMELINE=PATH set, the climb appends one strict-JSON line to PATH for each rung's start
and end and for each run of a point on a lane (which lane, which worker, when it asked for the lane,
when it got it, when the run ended: wall-clock seconds, time.time()). Without it nothing is
written and nothing is measured. A line that cannot be written is dropped: a timeline never
ends a climb."""
from __future__ import annotations

import json
import os
import threading
import time

VARIABLE = "KLADDER_TIMELINE"
_lock = threading.Lock()


def on() -> bool:
    return bool(os.environ.get(VARIABLE))


def now() -> float:
    return time.time()


def mark(kind: str, **facts) -> None:
    """One line: {"kind": ..., "thread": ..., **facts}; nothing where KLADDER_TIMELINE is unset."""
    path = os.environ.get(VARIABLE)
    if not path:
        return
    try:
        line = json.dumps({"kind": kind, "thread": threading.current_thread().name, **facts}, allow_nan=False,
                          default=str)
        with _lock, open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    except (OSError, ValueError):
        pass
