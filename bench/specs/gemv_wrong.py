"""A GEMV that is wrong by 8% at its big points, for bench/light_climb.py (issue 32: "a GEMV whose failing
big point (M = 1, N = 16384, K = 65536, w 4 GiB) spent 104.7 s in the peer stage while its kernel ran
0.28 s and its values were off by 8%"). The user's kernel is not ours to ship; this one fails the same
way: torch's F.linear, then every output scaled by 1.08 once w holds 2^31 elements or more (a stand-in
for a split-K path taken only there that counts one partial sum twice). An error 10^4 times past any
budget: kladder should judge it at once, without asking the honest peer for evidence.

`spec` is wrong only at the big points; `small` is the same kernel wrong at every size (its threshold 1),
for a smoke run of the bench on the CPU."""
import torch.nn.functional as F

import kladder as kl

BIG = 1 << 31                  # elements of w from which the wrong path runs


def _gemv(threshold):
    def gemv(x, w):
        y = F.linear(x, w)
        return y * 1.08 if w.numel() >= threshold else y
    return gemv


gemv_big, gemv_any = _gemv(BIG), _gemv(1)


def gemv_ref(x, w):
    return x @ w.T


def _spec(name, kernel):
    return kl.Spec(
        name, kernel=kernel, reference=gemv_ref,
        args={"x": kl.Tensor("M K", dtype=["bfloat16", "float16", "float32"]), "w": kl.Tensor("N K", like="x")},
        returns=kl.Tensor("M N", like="x"),
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 65536, widths=[4096, 16384]),
              "K": kl.Dim(1, 65536, widths=[4096, 65536])},
        rows="M")


spec = _spec("gemv_wrong", gemv_big)
small = _spec("gemv_wrong_small", gemv_any)
