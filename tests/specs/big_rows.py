"""A row kernel whose sizes reach every 32-bit cliff: x (M, N) bfloat16, M <= 2^22, N <= 16384,
independent rows (`kladder points` lists its cliff points; nothing here runs on a big point)."""

import kladder as kl


def double(x):
    return 2 * x


def double_ref(x):
    return 2 * x


spec = kl.Spec(
    "double_rows",
    kernel=double,
    reference=double_ref,
    args={"x": kl.Tensor("M N", dtype="bfloat16")},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 1 << 22), "N": kl.Dim(1, 16384)},
    rows="M",
)
