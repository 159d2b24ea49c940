"""Every process a kernel starts ends with its worker.

A kernel may fork (a helper process, a daemon that calls setsid, a child it never waits for).
Killing the worker's process group misses a child that left the group, and a child whose parent
died is adopted by init and outlives the climb (a forked copy of a worker was found running after
its climb ended). So on Linux the worker makes itself a child subreaper (prctl
PR_SET_CHILD_SUBREAPER): an orphan anywhere below it is re-parented to it, not to init, and
stays its descendant. When the worker ends (its stdin closed, a fatal point, its parent gone)
it kills every descendant first; when the parent kills a worker (a hang, Ctrl-C) it kills the
worker's descendants too, found the same way.

Not at the end of each point: a library may keep processes across calls on purpose (torch
compile's worker pool), and they end with the worker like any other."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36       # linux/prctl.h


def subreaper() -> bool:
    """Make this process the subreaper of everything below it (Linux; elsewhere False)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_with_group(pid: int) -> None:
    """SIGKILL to a process that is not reaped yet (so `pid` is still its own) and to its process
    group. Both: a process forked to call setsid first (a fork server's child) has no group of its
    own until it has run, and a kill that came before that found no such group (ESRCH) and left
    it running: a climb that gave a worker up as soon as it was spawned then waited for its exit
    forever (CI, stop 41)."""
    for how in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            how(pid, signal.SIGKILL)


def descendants(root: int) -> list[int]:
    """Every live process below `root` (children first), from /proc; [] where there is none."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    children: dict[int, list[int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()      # the name may hold spaces and brackets
        if len(fields) > 1 and fields[0] != b"Z":           # a zombie has nothing left to kill
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def end_descendants(root: int, rounds: int = 20) -> int:
    """SIGKILL every process below `root` until none is left (one that forked meanwhile leaves
    its children to the subreaper, found the next round); returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        found = descendants(root)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.005)                                  # the kernel re-parents their children meanwhile
    return killed
