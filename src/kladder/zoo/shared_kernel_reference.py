"""shared_kernel_reference: the test's "reference" is the same op through the library's other
entry point, which runs the kernel under test; the comparison passes while both are wrong.

A norm library exports two entry points over one Triton kernel: rms_norm(x, w, eps) and
fused_add_rms_norm(x, residual, w, eps) (residual add, then the norm; a constexpr flag in
the kernel). The kernel takes the mean of squares over its padded block, BLOCK_N = N rounded
up to a power of two, instead of over N: right for N = 2048 or 4096, too small a mean (so
too large an output) for any other width, 19% at N = 2880. The unit test's reference is
fused_add_rms_norm with a zero residual, "the fused path, already tested in production",
which dispatches to the same kernel and agrees with it to the output's rounding, bug included.
"""
import torch
import triton
import triton.language as tl

CASE = dict(
    name="shared_kernel_reference",
    gap="contracts",
    rung=3,
    mirrors="reference/000 §11 (paged vs continuous batching: two paths, one mha_decoding kernel)",
    needs="cpu",
    story=(
        "rms_norm divides the sum of squares by its padded block width (N rounded up to a "
        "power of two) instead of by N: right at N = 2048 and 4096, and 19% too large an "
        "output at gpt-oss's N = 2880. Its test compares it with fused_add_rms_norm(x, 0, "
        "w), the library's other entry point, believed correct because the model runs it; "
        "both dispatch to the same Triton kernel, so they agree to the output's rounding at every shape, "
        "value and layout, bug and all (in reference/000 the paged and continuous-batching "
        "paths both ran mha_decoding, and the group-16 bug passed the comparison). kladder's "
        "rungs 1 and 2 see the two agree and pass: a comparison cannot see a bug its "
        "reference shares. Rung 3 runs the kernel and the reference once each under a "
        "tracer and flags the reference itself: one broken point (the spec's problem, not "
        "a failure of the kernel), 'the reference rms_norm_ref_via_library is not independent "
        "of the kernel under test: it runs ... its Triton kernels _rmsnorm_kernel ...'; every "
        "other rung-3 point passes, and the zoo counts the broken reference as the catch. The twin is the same case written right: the kernel divides by "
        "N and the reference is plain torch. With that reference the original kernel fails "
        "at rung 1 wherever N sits well below a power of two (N = 2049, 2879, 2880, 2881, "
        "4097: 10 of 23 points; at 2047 and 4095 it is off by 0.02%, inside bf16's tolerance)."
    ),
)


@triton.jit
def _rmsnorm_kernel(x_ptr, r_ptr, w_ptr, y_ptr, r_out_ptr, N, stride_xm, stride_xn, stride_rm, stride_rn,
                    stride_w, eps, BLOCK_N: tl.constexpr, HAS_RESIDUAL: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(r_ptr + row * stride_rm + cols * stride_rn, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(r_out_ptr + row * N + cols, x.to(r_out_ptr.dtype.element_ty), mask=cols < N)
    w = tl.load(w_ptr + cols * stride_w, mask=cols < N, other=0.0).to(tl.float32)
    # The bug: the mean of squares over the padded block, not over the row's N elements.
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / BLOCK_N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def _rmsnorm_kernel_fixed(x_ptr, r_ptr, w_ptr, y_ptr, r_out_ptr, N, stride_xm, stride_xn, stride_rm, stride_rn,
                          stride_w, eps, BLOCK_N: tl.constexpr, HAS_RESIDUAL: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride_xm + cols * stride_xn, mask=cols < N, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        x += tl.load(r_ptr + row * stride_rm + cols * stride_rn, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(r_out_ptr + row * N + cols, x.to(r_out_ptr.dtype.element_ty), mask=cols < N)
    w = tl.load(w_ptr + cols * stride_w, mask=cols < N, other=0.0).to(tl.float32)
    # The fix: the mean over the row's N elements (the masked lanes hold zeros).
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def _launch(kernel, x, residual, w, eps):
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    r_out = torch.empty((M, N), dtype=x.dtype, device=x.device) if residual is not None else y
    r = residual if residual is not None else x
    # one program holds a whole row in registers: the block is N rounded up to a power of 2
    kernel[(M,)](x, r, w, y, r_out, N, *x.stride(), *r.stride(), w.stride(0), eps,
                 BLOCK_N=triton.next_power_of_2(N), HAS_RESIDUAL=residual is not None)
    return y, r_out


def rms_norm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bf16/fp16, w: [N] fp32)."""
    return _launch(_rmsnorm_kernel, x, None, w, eps)[0]


def fused_add_rms_norm(x, residual, w, eps=1e-6):
    """h = x + residual; returns (rms_norm(h, w, eps), h): the decoder layer's fused path."""
    return _launch(_rmsnorm_kernel, x, residual, w, eps)


def rms_norm_fixed(x, w, eps=1e-6):
    return _launch(_rmsnorm_kernel_fixed, x, None, w, eps)[0]


def rms_norm_ref_via_library(x, w, eps):
    """The test's reference: the fused entry point with a zero residual ("already tested")."""
    return fused_add_rms_norm(x, torch.zeros_like(x), w, eps)[0]


def rms_norm_ref(x, w, eps):
    """An independent reference: plain torch."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def make_spec(kernel, reference):
    import kladder as kl
    return kl.Spec(
        "rms_norm",
        kernel=kernel,
        reference=reference,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "w": kl.Tensor("N", dtype="float32"),
              "eps": 1e-6},
        returns=kl.Tensor("M N", like="x"),
        # M: the tokens of a decode batch (kept small: on the CPU every row is a program,
        # and this case's reference runs the interpreted kernel too); N: hidden sizes
        dims={"M": kl.Dim(1, 256),
              "N": kl.Dim(1, 16384, widths=[2048, 2880, 4096])},
    )


# The twin is not "identical but for the kernel": the case is the reference. Its kernel is
# right and its reference is plain torch (with that reference the buggy kernel fails rung 1).
spec = make_spec(rms_norm, rms_norm_ref_via_library)
fixed = make_spec(rms_norm_fixed, rms_norm_ref)
