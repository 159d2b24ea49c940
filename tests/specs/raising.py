"""Launchers that raise (tests/test_kernel_trace.py): a launcher whose signature does not take
what the spec passes (refused when its spec is built: tests build it themselves), one that raises inside torch through a helper of its own, and a Triton
kernel whose body raises (under the interpreter: an InterpreterError from the body's exception)."""
import torch
import triton
import triton.language as tl

import kladder as kl


def scale(x, w):                             # the spec passes x, w, eps: one too many
    return x * w


def ref(x, w, eps):
    return x * w


ARGS = {"x": kl.Tensor("M N", dtype="float32"), "w": kl.Tensor("N", dtype="float32"), "eps": 1e-6}
DIMS = {"M": kl.Dim(1, 64), "N": kl.Dim(2, 64)}


def signature():
    """The spec of `scale`: a SpecError when built (kladder binds the launcher's signature at load)."""
    return kl.Spec("signature", kernel=scale, reference=ref, args=ARGS, returns=kl.Tensor("M N", like="x"), dims=DIMS)


def matmul_scale(x, w, eps):
    return _helper(x, w)


def _helper(x, w):
    return x @ w.unsqueeze(0)                # (M, N) @ (1, N): torch refuses the shapes


in_torch = kl.Spec("in_torch", kernel=matmul_scale, reference=ref, args=ARGS, returns=kl.Tensor("M N", like="x"), dims=DIMS)


@triton.jit
def _bad_body(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < N)
    y = x + tl.arange(0, 3)                  # a range of 3: not a power of two
    tl.store(y_ptr + cols, y, mask=cols < N)


def body(x, w, eps):
    y = torch.empty_like(x)
    _bad_body[(1,)](x, y, x.shape[-1], BLOCK=64)
    return y


in_body = kl.Spec("in_body", kernel=body, reference=ref, args=ARGS, returns=kl.Tensor("M N", like="x"), dims=DIMS)
