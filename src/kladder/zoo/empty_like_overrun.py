"""empty_like_overrun: a BLOCK add whose store lost its mask writes up to BLOCK - 1 elements
past the end of the output its own launcher allocated with torch.empty_like.

out = a + b over a flat tensor, one program per BLOCK elements. The loads are masked; the
store is not. Every element inside `out` is right, so a value comparison passes; the extra
stores land past the end of the launcher's allocation, in memory no one owns.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="empty_like_overrun",
    gap="shapes",
    rung=1,
    mirrors="aiter #6344 (garbage past N), FlyDSL #1264 (a sentinel past N); aiter's guard-page out-of-bounds tests",
    needs="cpu",
    story=(
        "The add's loads are masked with offs < n, but its store was copied from the "
        "library's aligned fast path, where every size is a multiple of BLOCK = 1024, and "
        "lost the mask: the last program writes its whole block, up to 1,023 elements past "
        "the end of the output the launcher allocated with torch.empty_like. Every element "
        "inside the output is right, so the unit tests' allclose passes; the stray stores "
        "land in whatever the allocator put after the output (on a GPU inside the caching "
        "allocator's block: no fault, memcheck sees nothing; on the host they damage the "
        "heap and crash a later, unrelated allocation). aiter's guard-page tests place every "
        "output at the very end of its allocation for this reason. kladder guards the "
        "tensors the kernel allocates itself: its rung-1 points with N % 1024 != 0 (N = 1, "
        "1023, 1025, ...) catch it in the guard bytes after the returned output."
    ),
)

BLOCK = 1024


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    # The bug: the store of the aligned fast path, without the tail's mask.
    tl.store(out_ptr + offs, a + b)


@triton.jit
def _add_kernel_fixed(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    # The fix: the store is masked as the loads are.
    tl.store(out_ptr + offs, a + b, mask=mask)


def _launch(kernel, a, b):
    a = a.contiguous()
    b = b.contiguous()
    out = torch.empty_like(a)
    n = out.numel()
    kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)
    return out


def add(a, b):
    """a + b, elementwise, for tensors of one shape and dtype."""
    return _launch(_add_kernel, a, b)


def add_fixed(a, b):
    return _launch(_add_kernel_fixed, a, b)


def add_ref(a, b):
    return a + b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "add",
        kernel=kernel,
        reference=add_ref,
        args={"a": kl.Tensor("N", dtype=["float32", "float16"]),
              "b": kl.Tensor("N", like="a")},
        returns=kl.Tensor("N", like="a"),
        dims={"N": kl.Dim(1, 1 << 24, tile=BLOCK)},
    )


spec, fixed = build_specs(make_spec, add, add_fixed)
