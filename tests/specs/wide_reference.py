"""A kernel whose float64 reference holds far more than its tensors (kladder's own fixture, issue
38): y = x * sum(x) computed by the reference through the N x N outer product, as a fused
linear + loss reference materialises its logits. The declared tensors are 2 x N floats; the
reference's peak is N^2 float64s (128 MiB at N = 4096)."""
import torch

import kladder as kl


def scale_by_sum(x):
    return x * x.sum()


def scale_by_sum_ref(x):
    outer = x[:, None] * torch.ones_like(x)[None, :]        # N x N: x_i in every column
    return outer.sum(0) * 0 + x * outer.diagonal().sum()


spec = kl.Spec("wide_reference", kernel=scale_by_sum, reference=scale_by_sum_ref,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 1 << 20)})
