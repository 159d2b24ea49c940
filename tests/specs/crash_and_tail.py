"""A kernel that ends its process at M = N = 1 and writes a wrong last element at N = 2 (kladder's
own fixture for the executors: a crash and a failure among passing points, cheap on the CPU)."""
import os

import kladder as kl


def scale(x):
    if x.numel() == 1:
        os._exit(3)
    y = 2 * x
    if x.shape[-1] == 2:
        y[..., -1] += 1
    return y


spec = kl.Spec("crash_and_tail", kernel=scale, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("M N", dtype=["float32", "float16"])}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 4), "N": kl.Dim(1, 8)})
