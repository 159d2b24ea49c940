"""The rmsnorm spec several zoo cases share (missing_fence, silent_fallback, stale_state,
rmsnorm_n_tail, plan_cache_restart, sampled_timing): one base, each case's spec derived from it
(Spec.derive) with its own name, kernel, dims and parts."""
from __future__ import annotations

import functools

import torch


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@functools.cache
def base():
    """RMSNorm over the last dim of a bfloat16/float16 x, with a float32 weight and eps 1e-6;
    its own reference as the kernel until a case derives its spec with its kernel."""
    import kladder as kl
    return kl.Spec(
        "rmsnorm",
        kernel=rmsnorm_ref,
        reference=rmsnorm_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "w": kl.Tensor("N", dtype="float32"),
              "eps": 1e-6},
        returns=kl.Tensor("M N", like="x"),
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 16384)},
    )
