"""Correct Triton kernels that Triton's interpreter gets wrong (run/interpreter.py): on the CPU
each point must be "not judged", never failed; on a GPU they pass (docs/results/2026-12-01-h200-round/h200_trust.sh)."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

import kladder as kl


@triton.jit
def _double(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, 2 * x, mask=i < N)        # bfloat16 arithmetic: raw bits under the interpreter


def double(x):
    y = torch.empty_like(x)
    _double[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y


@triton.jit
def _narrow(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, x.to(tl.bfloat16), mask=i < N)   # float32 -> bfloat16: truncated under the interpreter


def narrow(x):
    y = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    _narrow[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y


def narrow_off(x):
    """Wrong by 3% after the narrowing: more than any rounding."""
    return (narrow(x).float() * 1.03).to(torch.bfloat16)


@triton.jit
def _exp(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    tl.store(y_ptr + i, libdevice.exp(x), mask=i < N)   # libdevice: None under the interpreter


def exp(x):
    y = torch.empty_like(x)
    _exp[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    return y


DIMS = {"M": kl.Dim(1, 64), "N": kl.Dim(1, 1024, tile=256)}
double_bf16 = kl.Spec("double_bf16", kernel=double, reference=lambda x: 2 * x,
                      args={"x": kl.Tensor("M N", dtype="bfloat16")}, returns=kl.Tensor("M N", like="x"), dims=DIMS)
# half an ulp of bfloat16 (2^-9 relative) and a little: round to nearest passes, truncation may not
TIGHT = {"bfloat16": (2.0 ** -9 * 1.02, 0.0)}
narrow_bf16 = kl.Spec("narrow_bf16", kernel=narrow, reference=lambda x: x,
                      args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", dtype="bfloat16"),
                      dims=DIMS, tolerance=TIGHT)
narrow_wrong = kl.Spec("narrow_wrong", kernel=narrow_off, reference=lambda x: x,
                       args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", dtype="bfloat16"),
                       dims=DIMS, tolerance=TIGHT)
exp_libdevice = kl.Spec("exp_libdevice", kernel=exp, reference=torch.exp,
                        args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"), dims=DIMS)
