"""A split-K GEMV (kladder's own fixture, issue 38): y = w @ x with K cut into chunks of 8,192, each
chunk's partial sums added at the end; right at every K. Its spec declares the chunk, so rung 5
repeats it eagerly past the split (K = 16,385) on every device."""
import torch

import kladder as kl

CHUNK = 8192


def splitk_gemv(x, w):
    parts = [w[:, k:k + CHUNK].float() @ x[k:k + CHUNK].float() for k in range(0, x.shape[0], CHUNK)]
    return torch.stack(parts).sum(0).to(x.dtype)


spec = kl.Spec("splitk_gemv", kernel=splitk_gemv, reference=lambda x, w: w @ x,
               args={"x": kl.Tensor("K", dtype="float32"), "w": kl.Tensor("N K", like="x")},
               returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 4096, widths=[4096]), "K": kl.Dim(1, 65536, chunks=[CHUNK])})
