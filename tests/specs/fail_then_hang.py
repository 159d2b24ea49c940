"""Four points: N = 2 is wrong, N = 4 sleeps for an hour, N = 1 and N = 3 are right (kladder's own
fixture, for tests/test_isolation.py's Ctrl-C test: a climb sitting in a hang with a failure
already reported, and nothing that costs a worker's restart before it)."""
import time

import kladder as kl


def double(x):
    n = x.shape[-1]
    if n == 4:
        time.sleep(3600)
    return 2 * x + (1 if n == 2 else 0)


spec = kl.Spec("fail_then_hang", kernel=double, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 4)})
