"""Three correct torch ops whose largest points hold 4 GiB tensors (2^30 float32 elements),
for bench/shared_device.py: three climbs side by side on one GPU, as a CI matrix runs them."""
import torch

import kladder as kl

DIMS = {"M": kl.Dim(1, 1 << 16), "N": kl.Dim(1, 1 << 14)}      # M * N <= 2^30: 4 GiB of float32
PRODUCTION = [{"M": 1 << 16, "N": 1 << 14}]


def add(a, b):
    return a + b


def add_ref(a, b):
    return a + b


def softmax(x):
    return torch.softmax(x, dim=-1)


def softmax_ref(x):
    return torch.softmax(x, dim=-1)


def scale(x):
    return x * 3


def scale_ref(x):
    return x * 3


add_4g = kl.Spec("add_4g", kernel=add, reference=add_ref,
                 args={"a": kl.Tensor("M N", dtype="float32"), "b": kl.Tensor("M N", dtype="float32")},
                 returns=kl.Tensor("M N", like="a"), dims=DIMS, production=PRODUCTION, rows="M")
softmax_4g = kl.Spec("softmax_4g", kernel=softmax, reference=softmax_ref,
                     args={"x": kl.Tensor("M N", dtype="float32")},
                     returns=kl.Tensor("M N", like="x"), dims=DIMS, production=PRODUCTION, rows="M")
scale_4g = kl.Spec("scale_4g", kernel=scale, reference=scale_ref,
                   args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims=DIMS, production=PRODUCTION, rows="M")
