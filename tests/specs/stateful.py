"""A launcher that keeps a factor computed for the row length of its first call in module
state (kladder's own fixture for rung 4): every first call in a fresh process is right; a
later call at another N uses the stale factor."""

import kladder as kl

STATE = {}


def scale_rows(x):
    # a per-width factor computed by the first call and kept: right for that width only
    factor = STATE.setdefault("factor", 3.0 / x.shape[-1])
    return x * (factor * x.shape[-1])


spec = kl.Spec("scale_rows", kernel=scale_rows, reference=lambda x: 3 * x,
               args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 64, tile=4), "N": kl.Dim(1, 256, tile=32)})
