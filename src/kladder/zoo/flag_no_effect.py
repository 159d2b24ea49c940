"""flag_no_effect: a softmax launcher takes a cache-hint flag, EVICT_FIRST, and then lets its
tuned defaults overwrite it, so the flag never reaches the kernel: on and off launch the same
code, and every test passes either way.

Softmax over the last dim of x [M, N], one program per row (the whole row in registers). With
EVICT_FIRST the row is loaded with eviction_policy="evict_first" (a streaming read: the row is
read once, so it should not push reusable lines out of L2), a hint the compiler turns into
other load instructions and that changes no value.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="flag_no_effect",
    gap="toolchain",
    rung=7,
    mirrors="FlyDSL #1153, #1177 (tuning knobs and a DAZ flag that never reached code generation)",
    needs="cpu",
    story=(
        "softmax() takes EVICT_FIRST, a cache hint the author's autotuning sweep searched over, "
        "and num_warps. It builds its launch options from the caller's keywords and then updates "
        "them with the tuned defaults for the dtype, so the defaults win: EVICT_FIRST=True "
        "launches the same kernel, with the same constexprs, as EVICT_FIRST=False. Nothing "
        "numerical can show it: a cache hint changes no value, so every test passes with the "
        "flag on and off ('1051 tests pass, with no numerical change in either direction'), and "
        "the sweep measured the same kernel twice and kept the first. Rungs 1-4 pass it. Rung "
        "7's flag point (`flags=[kl.Flag('EVICT_FIRST')]`) runs the kernel once per value and "
        "compares the code each launched: on a GPU the compiled binaries, under Triton's "
        "interpreter the kernel's source with the constexprs it reads; the two are the same, and "
        "the flag fails as one that never reaches code generation. The twin lets the caller's "
        "keywords override the tuned defaults."
    ),
)

# the tuned launch options per dtype, from the author's sweep (which searched EVICT_FIRST too)
TUNED = {torch.float16: {"EVICT_FIRST": False, "num_warps": 4},
         torch.bfloat16: {"EVICT_FIRST": False, "num_warps": 4}}


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr, EVICT_FIRST: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    ptrs = x_ptr + row * stride_x + cols
    if EVICT_FIRST:
        x = tl.load(ptrs, mask=cols < N, other=-float("inf"), eviction_policy="evict_first")
    else:
        x = tl.load(ptrs, mask=cols < N, other=-float("inf"))
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride_y + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=cols < N)


def _launch(x, options):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    _softmax_kernel[(M,)](x, y, N, x.stride(0), y.stride(0), BLOCK_N=triton.next_power_of_2(N), **options)
    return y


def softmax(x, EVICT_FIRST=None, num_warps=None):
    """Softmax over the last dim of x ([M, N] bf16/fp16), in float32; EVICT_FIRST streams the row."""
    options = {"EVICT_FIRST": bool(EVICT_FIRST), "num_warps": num_warps or 4}
    # The bug: the tuned defaults are applied after the caller's keywords and overwrite them.
    options.update(TUNED[x.dtype])
    return _launch(x, options)


def softmax_fixed(x, EVICT_FIRST=None, num_warps=None):
    # The fix: the tuned defaults first, then whatever the caller gave.
    options = dict(TUNED[x.dtype])
    options.update({k: v for k, v in (("EVICT_FIRST", EVICT_FIRST), ("num_warps", num_warps)) if v is not None})
    return _launch(x, options)


def softmax_ref(x):
    return torch.softmax(x, dim=-1)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "softmax_hinted",
        kernel=kernel,
        reference=softmax_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"])},
        returns=kl.Tensor("M N", like="x"),
        dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 16384, widths=[2880, 4096])},
        # the cache hint must reach the code
        toolchain=kl.Toolchain(flags=[kl.Flag("EVICT_FIRST", values=(False, True))]),
    )


spec, fixed = build_specs(make_spec, softmax, softmax_fixed)
