"""A kernel that misbehaves on purpose at chosen sizes, to test isolation (not a zoo case:
this is kladder's own test fixture). N = 3 raises, N = 5 segfaults, N = 7 hangs, N = 6
writes past its out-argument, N = 4 runs out of memory; every other size is right."""
import ctypes
import time

import torch

import kladder as kl


def scale(x, out):
    n = x.shape[-1]
    if n == 3:
        raise RuntimeError("unsupported N")
    if n == 4:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")
    if n == 5:
        ctypes.string_at(0)                    # dereference NULL: SIGSEGV
    if n == 7:
        time.sleep(3600)
    if n == 6:
        flat = out.view(-1)
        wide = torch.as_strided(flat, (flat.numel() + 2,), (1,))   # two elements past the end
        wide.copy_(torch.cat([(2 * x).reshape(-1), torch.ones(2, dtype=x.dtype)]))
        return None
    out.copy_(2 * x)
    return None


def scale_ref(x):
    return 2 * x


spec = kl.Spec(
    "scale",
    kernel=scale,
    reference=scale_ref,
    args={"x": kl.Tensor("N", dtype="float32"), "out": kl.Out("N", like="x")},
    dims={"N": kl.Dim(1, 9, widths=[3, 4, 5, 6, 7, 8])},
)
