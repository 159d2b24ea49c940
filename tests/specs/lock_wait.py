"""A right kernel that waits, at N = 4, while another process holds the lock file named by
$KLADDER_TEST_LOCK (the stand-in for a device another process keeps busy): it hangs only under
that load. On first finding the lock held it touches LOCK + ".tried", so that the holder knows
the point is waiting. Without the variable it never waits."""
import fcntl
import os

import kladder as kl


def scale(x):
    path = os.environ.get("KLADDER_TEST_LOCK")
    if path and x.shape[-1] == 4:
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                open(path + ".tried", "w").close()
                fcntl.flock(f, fcntl.LOCK_EX)          # waits while the other process holds it
            fcntl.flock(f, fcntl.LOCK_UN)
    return 2 * x


spec = kl.Spec("lock_wait", kernel=scale, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 5, widths=[4])})
