"""A correct kernel: every point must pass (kladder's own fixture)."""
import torch

import kladder as kl


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def softmax_ref(x):
    return torch.softmax(x, dim=-1)


spec = kl.Spec(
    "softmax",
    kernel=softmax,
    reference=softmax_ref,
    args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"])},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 512, tile=16), "N": kl.Dim(1, 8192, tile=128, widths=[2880, 4096])},
)
