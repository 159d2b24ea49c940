"""A kernel that forks at every call: a child that sleeps, and a daemon (a double fork and
setsid: it leaves the worker's process group and its parent). Each writes its pid to
$KLT_PIDS. Correct values: only the processes it leaves behind are wrong (tests/test_kernel_processes.py)."""
import os
import time

import kladder as kl


def _sleeper(daemon: bool) -> None:
    if daemon:
        os.setsid()
        if os.fork():
            os._exit(0)               # the middle process exits: the sleeper is an orphan
    with open(os.environ["KLT_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(600)
    os._exit(0)


def forking_double(x):
    for daemon in (False, True):
        if os.fork() == 0:
            _sleeper(daemon)
    time.sleep(0.2)
    return 2 * x


spec = kl.Spec("forking", kernel=forking_double, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
