"""A kernel wrong only for N in [1000, 1100] (a band between the ladder's edges: its tile
points are 1, 255-257, 769 and 4096), for kladder explore's tests."""

import kladder as kl


def scale(x):
    y = 2 * x
    if 1000 <= x.shape[-1] <= 1100:
        y[..., -1] += 1.0                      # the last element of each row is off, only in the band
    return y


spec = kl.Spec("band", kernel=scale, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 4), "N": kl.Dim(1, 4096, tile=256)})
