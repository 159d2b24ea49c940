"""Three points whose kernel sleeps a quarter second a call: a climb long enough to be
interrupted between its points (the SIGINT test of tests/test_reports.py)."""
import time

import kladder as kl


def slow_double(x):
    time.sleep(0.25)
    return 2 * x


spec = kl.Spec("slow_double", kernel=slow_double, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 3)})
