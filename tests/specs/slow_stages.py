"""A right kernel and reference that take their time at chosen sizes (kladder's own fixture for
the watchdog): at N = 3 the reference sleeps SLOW_S, at N = 5 the kernel does. The watchdog
must call the first not judged (kladder's stage overran its budget) and the second a hang."""
import time

import kladder as kl

SLOW_S = 30.0


def scale(x):
    if x.shape[-1] == 5:
        time.sleep(SLOW_S)
    return 2 * x


def scale_ref(x):
    if x.shape[-1] == 3:
        time.sleep(SLOW_S)
    return 2 * x


spec = kl.Spec("slow_stages", kernel=scale, reference=scale_ref,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 6, widths=[3, 5])})
