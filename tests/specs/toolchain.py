"""Fixtures for rung 7 (kladder's own): small Triton kernels under the interpreter.

- scale: y = 2 x; TWICE picks (6 x) / 3 over x * 2 (the same within rounding, other code and
  other bits), UNUSED is a constexpr the kernel never reads. `scale` passes TWICE through;
  `scale_lost` passes the caller's TWICE into UNUSED, so the flag changes no code;
  `scale_disk_planned` keeps its plan in a file under TRITON_CACHE_DIR keyed without the flag,
  so a restarted process runs the last process's TWICE.
- routed: the launcher runs `_short_kernel` for N <= 64 and `_long_kernel` above; `routed_torch`
  never launches a kernel (a fallback).
- everything_skipped: every tensor is over the CPU budget: a climb runs no point.
"""
import json
import os

import torch
import triton
import triton.language as tl

import kladder as kl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, N, TWICE: tl.constexpr, UNUSED: tl.constexpr, BLOCK: tl.constexpr):
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + c, mask=c < N)
    y = x * 6.0 / 3.0 if TWICE else x * 2
    tl.store(y_ptr + c, y, mask=c < N)


def scale(x, TWICE=False):
    x = x.contiguous()
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), TWICE=TWICE, UNUSED=False, BLOCK=64)
    return y


def scale_lost(x, TWICE=False):
    x = x.contiguous()
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), TWICE=False, UNUSED=TWICE, BLOCK=64)
    return y


def scale_disk_planned(x, TWICE=False):
    x = x.contiguous()
    folder = os.environ.get("TRITON_CACHE_DIR")
    path = os.path.join(folder, "scale_plan.json") if folder else None
    if path and os.path.exists(path):
        with open(path) as f:
            TWICE = json.load(f)["TWICE"]                     # the bug: the key leaves the flag out
    elif path:
        os.makedirs(folder, exist_ok=True)
        with open(path, "w") as f:
            json.dump({"TWICE": TWICE}, f)
    y = torch.empty_like(x)
    _scale_kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), TWICE=TWICE, UNUSED=False, BLOCK=64)
    return y


@triton.jit
def _short_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    c = tl.arange(0, BLOCK)
    tl.store(y_ptr + c, tl.load(x_ptr + c, mask=c < N) * 2, mask=c < N)


@triton.jit
def _long_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + c, tl.load(x_ptr + c, mask=c < N) * 2, mask=c < N)


def routed(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel() <= 64:
        _short_kernel[(1,)](x, y, x.numel(), BLOCK=64)
    else:
        _long_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y


def routed_torch(x):
    return x * 2


def double_ref(x):
    return 2 * x


def make(kernel, **kw):
    return kl.Spec(kernel.__name__, kernel=kernel, reference=double_ref, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 4096, tile=64)}, **kw)


flag_reaches = make(scale, toolchain=kl.Toolchain(flags=[kl.Flag("TWICE")]))
flag_lost = make(scale_lost, toolchain=kl.Toolchain(flags=[kl.Flag("TWICE")]))
disk_planned = make(scale_disk_planned, toolchain=kl.Toolchain(flags=[kl.Flag("TWICE")]))
ROUTES = [kl.Expect("_short_kernel", when={"N": [1, 64]}, label="the short kernel"),
          kl.Expect("_long_kernel", when={"N": 65})]
route_kept = make(routed, toolchain=kl.Toolchain(expect=ROUTES))
route_lost = make(routed_torch, toolchain=kl.Toolchain(expect=ROUTES))
everything_skipped = kl.Spec("huge", kernel=routed_torch, reference=double_ref,
                             args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
                             dims={"N": kl.Dim(1 << 20, 1 << 21)})
