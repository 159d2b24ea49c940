"""A float32 GEMV as a model's decode step runs it: x (M, K) against a weight w (N, K), plus a
bias; M = 1 is the decode path (one token), N and K up to 65,536 (a 2 GiB weight at N = 8192,
K = 65536). The kernel is torch's own F.linear (cuBLAS's GEMV at M = 1), the reference the
plain formula on float64 copies: every point must pass; at its big points (w past 2^27
elements) kladder's own stages must cost seconds, not minutes (bench/big_point.py)."""
import torch.nn.functional as F

import kladder as kl

gemv = kl.Spec(
    "gemv", kernel=F.linear, reference=lambda x, w, b: x @ w.T + b,
    args={"x": kl.Tensor("M K", dtype="float32"), "w": kl.Tensor("N K", like="x"), "b": kl.Tensor("N", like="x")},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 65536, widths=[4096, 8192]), "K": kl.Dim(1, 65536, widths=[4096, 65536])},
    rows="M")
