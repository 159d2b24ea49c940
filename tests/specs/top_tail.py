"""A tail bug at the top of a range (issue 21 item 8): a launcher takes a looped path once a row
no longer fits one block (N > 1024 columns), and that path handles the last partial tile wrong
(from column 100 on, when N % 8 != 0). Rung 1's edges at the bottom of the range (1, 7, 8, 9,
25) and the maximum (4096, whole tiles) never reach it; 4095 and 4089 do."""

import kladder as kl

TILE, BLOCK = 8, 1024


def scale(x):
    out = 2 * x
    n = x.shape[-1]
    if n > BLOCK and n % TILE:                 # the looped path's tail: scaled by 3 from column 100
        out[..., 100:] = 3 * x[..., 100:]
    return out


def scale_fixed(x):
    return 2 * x


def _spec(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=lambda x: 2 * x,
                   args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
                   dims={"M": kl.Dim(1, 8), "N": kl.Dim(1, 4096, tile=TILE)})


spec = _spec("top_tail", scale)
fixed = _spec("top_tail_fixed", scale_fixed)
