"""silent_fallback: a downstream fused RMSNorm written against an upstream DSL's internals
(_fastlib, standing in for FlyDSL) imports `buffer_ops` from where it lived before the
upstream's 0.3 release; the import fails, the module catches the ImportError and every call
quietly takes the plain-torch path. Right on every value, several times slower, nothing logged.

y = x / sqrt(mean(x^2) + eps) * w, row by row. The fused path is one Triton program per row
(the whole row in registers) built from _fastlib's buffer_ops and expr helpers; the fallback
is the same formula in torch, in float32.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs
from kladder.zoo._rmsnorm import base, rmsnorm_ref  # noqa: F401  (rmsnorm_ref: the cases' reference, by its old name)
from kladder.zoo._fastlib import expr

CASE = dict(
    name="silent_fallback",
    gap="toolchain",
    rung=7,
    mirrors="SGLang #33142 (FlyDSL #880: buffer_ops moved out of flydsl.expr in v0.3.0)",
    needs="cpu",
    story=(
        "fused_rmsnorm was written against the internals of an upstream kernel DSL (_fastlib "
        "here, FlyDSL in the original): it imports buffer_ops from _fastlib.expr, and guards the "
        "import with `except ImportError`, meant for machines without the DSL, where it falls back "
        "to a plain-torch RMSNorm. _fastlib 0.3 moved buffer_ops into a module of its own. Since "
        "then the import fails on every machine, the module catches it, and every call runs the "
        "torch fallback: right to the last bit a test looks at, several times slower, and nothing "
        "is logged ('a silent performance regression, not a crash'). Rungs 1-4 pass it, because "
        "every value is right. Rung 7 catches it twice over: its dispatch points find that the "
        "fused Triton kernel the spec expects (`expect=['_fused_rmsnorm_kernel*']`) never ran and "
        "name the torch path that ran instead, and its import point reports the ImportError that "
        "the module raised and caught at import. The twin imports buffer_ops from its 0.3 home."
    ),
)

try:
    # The bug: buffer_ops lived in _fastlib.expr until _fastlib 0.3 moved it to _fastlib.buffer_ops.
    from kladder.zoo._fastlib.expr import buffer_ops
except ImportError:                  # no _fastlib on this machine: take the torch path below
    buffer_ops = None

try:
    from kladder.zoo._fastlib import buffer_ops as buffer_ops_v03     # the fix: 0.3's module
except ImportError:
    buffer_ops_v03 = None


@triton.jit
def _fused_rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = buffer_ops.load_row(x_ptr, row, stride_x, cols, N).to(tl.float32)
    w = buffer_ops.load_row(w_ptr, 0, 0, cols, N)
    y = x * expr.rms_scale(tl.sum(x * x, axis=0), N, eps) * w
    buffer_ops.store_row(y_ptr, row, stride_y, cols, N, y.to(y_ptr.dtype.element_ty))


@triton.jit
def _fused_rmsnorm_kernel_fixed(x_ptr, w_ptr, y_ptr, N, stride_x, stride_y, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = buffer_ops_v03.load_row(x_ptr, row, stride_x, cols, N).to(tl.float32)
    w = buffer_ops_v03.load_row(w_ptr, 0, 0, cols, N)
    y = x * expr.rms_scale(tl.sum(x * x, axis=0), N, eps) * w
    buffer_ops_v03.store_row(y_ptr, row, stride_y, cols, N, y.to(y_ptr.dtype.element_ty))


def _rmsnorm_torch(x, w, eps):
    """The fallback for machines without _fastlib: the same formula, in float32."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w).to(x.dtype)


def _launch(kernel, x, w, eps):
    # the kernel walks rows with unit inner stride: other layouts are made so first (a copy)
    x = x if x.stride(-1) == 1 else x.contiguous()
    w = w.contiguous()
    M, N = x.shape
    y = torch.empty_like(x)
    # one program holds a whole row in registers: the block is N rounded up to a power of 2
    kernel[(M,)](x, w, y, N, x.stride(0), y.stride(0), eps, BLOCK_N=triton.next_power_of_2(N))
    return y


def fused_rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    if buffer_ops is None:
        return _rmsnorm_torch(x, w, eps)
    return _launch(_fused_rmsnorm_kernel, x, w, eps)


def fused_rmsnorm_fixed(x, w, eps=1e-6):
    if buffer_ops_v03 is None:
        return _rmsnorm_torch(x, w, eps)
    return _launch(_fused_rmsnorm_kernel_fixed, x, w, eps)


def make_spec(kernel):
    import kladder as kl
    return base().derive(
        name="fused_rmsnorm",
        kernel=kernel,
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 8192, tile=8, widths=[2880, 4096])},
        toolchain=kl.Toolchain(
            # the point of the module: the fused Triton kernel runs, not the torch fallback
            expect=[kl.Expect("_fused_rmsnorm_kernel*", label="the fused Triton kernel")],
            # what the diffusion pipeline imports from this module
            imports=[f"kladder.zoo.silent_fallback:{kernel.__name__}"]),
    )


spec, fixed = build_specs(make_spec, fused_rmsnorm, fused_rmsnorm_fixed)
