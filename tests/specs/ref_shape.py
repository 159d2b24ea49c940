"""A correct kernel whose reference returns another shape than returns= declares: the spec's
fault (BROKEN, naming the reference), never the kernel's FAILED."""
import kladder as kl

spec = kl.Spec("ref_shape", kernel=lambda x: x * 2, reference=lambda x: (x * 2).sum(-1),
               args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 8), "N": kl.Dim(1, 16)})
