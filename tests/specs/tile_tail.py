"""A tile-tail bug for kladder.climbing.shrink's tests: the launcher runs max(1, N // 256) tiles, so the
last partial tile is never written once there is a full one. Its smallest failing point is one
tile plus one (M = 1, N = 257); N = 256 and every N < 256 pass."""
import torch

import kladder as kl

TILE = 256


def scale(x):
    n = x.shape[-1]
    covered = min(n, max(1, n // TILE) * TILE)
    out = torch.empty_like(x)                  # what is not written stays as torch.empty left it
    out[..., :covered] = 2 * x[..., :covered]
    return out


spec = kl.Spec("tile_tail", kernel=scale, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 8), "N": kl.Dim(1, 4096, tile=TILE)})
