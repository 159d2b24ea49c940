"""A kernel wrong on every other call in its process (kladder's own fixture): the first call
of each point fails, its replay passes, so the outcome must be flaky, not failed or passed."""

import kladder as kl

CALLS = [0]


def sometimes(x):
    CALLS[0] += 1
    y = 2 * x
    if CALLS[0] % 2:
        y[..., 0] += 1.0
    return y


spec = kl.Spec("sometimes", kernel=sometimes, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 4)})
