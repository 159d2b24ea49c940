"""undeclared_mutation: an out-variant custom op (it writes its result into `out`) registered
with torch.library.custom_op without declaring that it mutates `out`; eagerly it is right,
under torch.compile the call has no declared effect and the compiled graph drops it.

y = x * w (x: [M, N] bf16/fp16, w: [N] fp32, computed in fp32), written into a caller-owned
`out` buffer by a Triton kernel, one program per BLOCK_M x BLOCK_N tile.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="undeclared_mutation",
    gap="execution modes",
    rung=4,
    mirrors="torch.compile gap (reference/003 §06): an op's declared contract differs from what it does",
    needs="cpu",
    story=(
        "scale_out writes x * w into a buffer the caller owns (an engine preallocates its "
        "activations) and is registered as a custom op so that a compiled model can call it. Its "
        "author wrote mutates_args=() because the op returns nothing new and 'only writes the "
        "output', and gave it a fake implementation that returns None. Eager calls go straight to "
        "the kernel and are right at every shape and layout, so every eager rung passes. Under "
        "torch.compile the op is a node with no outputs and, as declared, no side effects: the "
        "compiled graph drops the call and `out` keeps what it held (kladder's signalling-NaN "
        "poison). Rung 4's compiled mode catches it at the first call. The fix declares "
        "mutates_args=('out',), and the compiled graph keeps the call."
    ),
)


@triton.jit
def _scale_kernel(x_ptr, w_ptr, out_ptr, M, N, stride_x, stride_o, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rows = pm * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pn * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    tl.store(out_ptr + rows[:, None] * stride_o + cols[None, :], (x * w[None, :]).to(out_ptr.dtype.element_ty), mask=mask)


def _launch(x, w, out):
    if x.stride(-1) != 1:
        x = x.contiguous()
    M, N = x.shape
    grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
    _scale_kernel[grid](x, w.contiguous(), out, M, N, x.stride(0), out.stride(0), BLOCK_M=32, BLOCK_N=64)


# The bug: the op writes `out` but declares no mutation.
@torch.library.custom_op("kladder_zoo::scale_out", mutates_args=())
def scale_out(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    _launch(x, w, out)


@scale_out.register_fake
def _scale_out_fake(x, w, out):
    return None


# The fix: mutates_args names the buffer it writes.
@torch.library.custom_op("kladder_zoo::scale_out_fixed", mutates_args=("out",))
def scale_out_fixed(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    _launch(x, w, out)


@scale_out_fixed.register_fake
def _scale_out_fixed_fake(x, w, out):
    return None


def scale_ref(x, w):
    return x * w


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "scale_out",
        kernel=kernel,
        reference=scale_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "w": kl.Tensor("N", dtype="float32"),
              "out": kl.Out("M N", like="x")},
        dims={"M": kl.Dim(1, 4096, tile=32),
              "N": kl.Dim(1, 16384, tile=64, widths=[2880, 4096])},
    )


spec, fixed = build_specs(make_spec, scale_out, scale_out_fixed)
