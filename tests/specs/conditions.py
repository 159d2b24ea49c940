"""Fixtures for rung 7's conditions (tests/test_conditions.py): Triton kernels under the
interpreter whose launcher picks a kernel from an environment variable, KLT_FAST.

- fast_at_call reads KLT_FAST at every call ("1": `_fast_kernel`, else `_plain_kernel`), as a
  library must when a serving launcher sets the variable from its config after importing it;
- fast_at_import reads it once, when this module is imported: set later, it changes nothing
  (the classic serving bug);
- rowsum(x, precise=True): `_precise_kernel` when precise, `_quick_kernel` otherwise; rowsum's
  specs name `precise` in an expectation's `when`, and one calls it without the keyword.
Both kernels compute y = 2 x, so every value is right whichever path runs: only rung 7 can tell.
"""
import os

import torch
import triton
import triton.language as tl

import kladder as kl

FAST_AT_IMPORT = os.environ.get("KLT_FAST") == "1"      # the bug: read once, at import


@triton.jit
def _fast_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + c, tl.load(x_ptr + c, mask=c < N) * 2, mask=c < N)


@triton.jit
def _plain_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    c = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + c, mask=c < N)
    tl.store(y_ptr + c, x + x, mask=c < N)


def _launch(kernel, x):
    x = x.contiguous()
    y = torch.empty_like(x)
    kernel[(triton.cdiv(x.numel(), 64),)](x, y, x.numel(), BLOCK=64)
    return y


def fast_at_call(x):
    return _launch(_fast_kernel if os.environ.get("KLT_FAST") == "1" else _plain_kernel, x)


def fast_at_import(x):
    return _launch(_fast_kernel if FAST_AT_IMPORT else _plain_kernel, x)


def rowsum(x, precise=True):
    return _launch(_fast_kernel if precise else _plain_kernel, x)


def double_ref(x, precise=True):
    return 2 * x


def make(kernel, name=None, **kw):
    return kl.Spec(name or kernel.__name__, kernel=kernel, reference=double_ref, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 1 << 16, tile=64)}, **kw)


FAST = [kl.Expect("_fast_kernel", when={"$KLT_FAST": "1"}, label="the fast kernel"),
        kl.Expect("_plain_kernel", when={"$KLT_FAST": [None, "0"]}, label="the plain kernel")]
FLAG = kl.Flag(env="KLT_FAST", values=(None, "0", "1"), set="after_import")
read_at_call = make(fast_at_call, toolchain=kl.Toolchain(expect=FAST, flags=[FLAG]))
read_at_import = make(fast_at_import, toolchain=kl.Toolchain(expect=FAST, flags=[FLAG]))
LEAN = kl.Flag(env="KLT_FAST", values=(None, "1"), set="after_import")    # two values: two child processes a point
lean_at_call = make(fast_at_call, "lean_at_call", toolchain=kl.Toolchain(expect=FAST, flags=[LEAN]))
lean_at_import = make(fast_at_import, "lean_at_import", toolchain=kl.Toolchain(expect=FAST, flags=[LEAN]))
precise_default = make(rowsum, toolchain=kl.Toolchain(expect=[kl.Expect("_fast_kernel", when={"precise": True}),
                                       kl.Expect("_plain_kernel", when={"precise": False})]))
gated = make(fast_at_call, "gated", toolchain=kl.Toolchain(expect=[kl.Expect("_fast_kernel", when={"$KLT_FAST": "1", "torch": ">=2.0"}, label="the fast kernel"),
                                   kl.Expect("_wgmma_kernel", when={"N": [4096, 1 << 16], "capability": ">=9.0"},
                                             label="the Hopper kernel")], flags=[LEAN]),
             )
