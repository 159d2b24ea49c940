"""small_overrun: writes a few elements past the end of its out-argument, inside the
allocator's block; every element inside the output is right.

out = silu(gate) * up over the flattened tensors, into a caller-provided `out`. The kernel
was written for the library's own buffers, which pad every activation to whole 16-byte
vectors, and zero-fills that pad; a caller's exact-size `out` has no pad, so the zeros land
past its end whenever the element count is not a multiple of 8.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="small_overrun",
    gap="shapes",
    rung=1,
    mirrors="measured: memcheck misses it under the caching allocator",
    needs="cpu",
    story=(
        "silu_and_mul writes into the caller's `out`. It zero-fills the output up to the next "
        "whole 16-byte vector (8 x 16-bit) because the library's own buffers carry that pad "
        "and a consumer reads whole vectors; a caller's exact-size `out` has none, so up to 7 "
        "zeros land past its end whenever M * N is not a multiple of 8. The writes stay "
        "inside the caching allocator's block: no fault, compute-sanitizer memcheck reports "
        "0 errors unless caching is off, and every element inside `out` is right, so a value "
        "comparison passes. kladder's rung-1 points with M * N % 8 != 0 (N = 1, 7, 9, the "
        "neighbours of each width) catch it in the guard bytes after `out`."
    ),
)

BLOCK = 1024
VEC = 8  # 8 x 16-bit = one 16-byte vector


@triton.jit
def _silu_mul_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr, VEC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(gate_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    # Write the tail out to a whole 16-byte vector, zeroing the pad a vector-wide consumer reads.
    # The bug: that pad is past the end of an exact-size `out`.
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=offs < tl.cdiv(n, VEC) * VEC)


@triton.jit
def _silu_mul_kernel_fixed(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr, VEC: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(gate_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    y = g * tl.sigmoid(g) * u
    # The fix: store exactly the n elements `out` holds.
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=offs < n)


def _launch(kernel, gate, up, out):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    gate = gate.contiguous()
    up = up.contiguous()
    n = out.numel()
    kernel[(triton.cdiv(n, BLOCK),)](gate, up, out, n, BLOCK=BLOCK, VEC=VEC)
    return out


def silu_and_mul(gate, up, out):
    """out = silu(gate) * up, elementwise over contiguous [M, N] tensors (bf16/fp16)."""
    return _launch(_silu_mul_kernel, gate, up, out)


def silu_and_mul_fixed(gate, up, out):
    return _launch(_silu_mul_kernel_fixed, gate, up, out)


def silu_and_mul_ref(gate, up):
    return torch.nn.functional.silu(gate) * up


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "silu_and_mul",
        kernel=kernel,
        reference=silu_and_mul_ref,
        args={"gate": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "up": kl.Tensor("M N", like="gate"),
              "out": kl.Out("M N", like="gate")},
        # N is the MLP's intermediate size (gpt-oss 2880, Llama-3-8B 14336, Llama-2-7B 11008)
        dims={"M": kl.Dim(1, 65536),
              "N": kl.Dim(1, 16384, tile=VEC, widths=[2880, 11008, 14336])},
    )


spec, fixed = build_specs(make_spec, silu_and_mul, silu_and_mul_fixed)
