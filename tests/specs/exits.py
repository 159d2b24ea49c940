"""A kernel that ends its process or asks for too much, at chosen sizes (kladder's own
fixture): N = 1 calls os._exit(3), N = 2 sys.exit(0), N = 3 raises KeyboardInterrupt, N = 4
allocates 1 TiB; N = 5 is right."""
import os
import sys

import torch

import kladder as kl


def scale(x):
    n = x.shape[-1]
    if n == 1:
        os._exit(3)
    if n == 2:
        sys.exit(0)
    if n == 3:
        raise KeyboardInterrupt
    if n == 4:
        torch.empty(1 << 40, dtype=torch.uint8)
    return 2 * x


spec = kl.Spec("exits", kernel=scale, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 5, widths=[3])})
