"""A trivial spec of three points (kladder's own fixture, for the start-up benchmark)."""

import kladder as kl

spec = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 3)})
