"""Three points, one of which hangs (kladder's own fixture, for the interrupt tests that need a
climb sitting in a hang and nothing else: tests/test_isolation.py): N = 2 sleeps for an hour,
N = 1 and N = 3 are right."""
import time

import kladder as kl


def double(x):
    if x.shape[-1] == 2:
        time.sleep(3600)
    return 2 * x


spec = kl.Spec("hang_one", kernel=double, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 3)})
