"""A correct kernel whose reference calls the kernel's own launcher (issue 38): the reference is
not independent (BROKEN at rung 3's independence point, once), and the kernel passes every other
point."""

import kladder as kl


def rowscale(x, w):
    return (x.float() * w).to(x.dtype)


def rowscale_ref(x, w):
    """The test's "reference": the launcher itself, in float64."""
    return rowscale(x, w)


spec = kl.Spec("rowscale", kernel=rowscale, reference=rowscale_ref,
               args={"x": kl.Tensor("M N", dtype=["bfloat16", "float32"]), "w": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=32)})
