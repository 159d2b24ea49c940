"""torch's own ops whose inputs have a declared range (issue 34: values keep to what is declared):
log over (0, 9], binary cross-entropy over [0, 1] (torch raises outside it). Correct kernels:
rung 2 must pass every point it runs."""
import torch
import torch.nn.functional as F

import kladder as kl

log = kl.Spec("log_ranged", kernel=torch.log, reference=torch.log,
              args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"], range=(1e-3, 9))},
              returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)})

bce = kl.Spec("bce_ranged", kernel=lambda p, t: F.binary_cross_entropy(p, t, reduction="none"),
              reference=lambda p, t: F.binary_cross_entropy(p, t, reduction="none"),
              args={"p": kl.Tensor("M N", dtype="float32", range=(0, 1)),
                    "t": kl.Tensor("M N", dtype="float32", range=(0, 1))},
              returns=kl.Tensor("M N", like="p"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)})
