"""The lifeline: a worker ends the moment the climb's process is gone, whatever ended it.
The parent (workers.Worker) holds the write end of a pipe and passes the read end to the worker
process in KLADDER_LIFELINE (a descriptor's number: the one state that crosses the process
boundary in the environment, since the worker is a new `python -m kladder.run.worker` or a fork
of the fork server; a fork of the climb's own process, run/forked.py, is handed it directly); the
worker's hold_lifeline takes it out of its environment at once."""
from __future__ import annotations

import os
import signal
import threading

from .reaper import end_descendants

LIFELINE_ENV = "KLADDER_LIFELINE"


def hold_lifeline(fd: int | None = None) -> None:
    """In a worker: end this process group the moment the climb's process is gone. The
    parent holds the write end of a pipe whose read end the worker waits on; when the parent
    dies in any way (kill -9 too) the kernel closes it, the read returns, and the worker kills
    its whole process group (its own children included), even while a kernel hangs. (A
    parent-death signal would not do: Linux sends it when the parent *thread* that started the
    worker ends, and lanes start workers from threads.) `fd`: the read end, where the worker is
    a fork of the process that holds the pipe (run/forked.py); else KLADDER_LIFELINE names it."""
    if fd is None:
        fd = os.environ.pop(LIFELINE_ENV, None)
    if fd is None:
        return

    def wait() -> None:
        try:
            while os.read(int(fd), 1):
                pass
        except OSError:
            pass
        end_descendants(os.getpid())            # the kernel's processes that left the group (run/reaper.py)
        os.killpg(os.getpgid(0), signal.SIGKILL)

    threading.Thread(target=wait, name="kladder-lifeline", daemon=True).start()
