"""compounding_bias: an RMSNorm whose hand-written float32 -> bfloat16 conversion truncates
(drops the low 16 bits) instead of rounding to nearest even: every element is within
bfloat16's tolerance, and every error points toward zero.

y = (x * rstd).to(bf16) * w, rounded to bf16 again: the two roundings of Hugging Face's
LlamaRMSNorm (normalise, cast to the input dtype, scale by the weight). The kernel does each
conversion by hand, on the bits, as kernels for targets without a native float32 -> bfloat16
convert instruction do; the buggy conversion truncates. Each truncation shrinks |y| by up to
one bfloat16 ulp (2^-8 to 2^-7 relative, 0.28% on average), so every output leans toward zero
by about 0.55% on average and 1.55% at worst: within the 1.6e-2 a bfloat16 output is allowed.
The twin rounds to nearest even on the same bits.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="compounding_bias",
    gap="model",
    rung=8,
    mirrors="reference/000 §7.2 (126 layers: small per-layer errors compound)",
    needs="cpu",
    story=(
        (
        "The RMSNorm converts float32 to bfloat16 by hand, on the bits, twice (x * rstd cast to "
        "the input dtype, then the product with the weight), as kernels for targets without a "
        "native convert instruction do, and the conversion drops the low 16 bits: a truncation, "
        "not round-to-nearest-even. Each output element is off by at most two ulps' worth (1.55% "
        "of |y|), inside bfloat16's 1.6e-2 tolerance, so a unit test with assert_close passes and "
        "so do kladder's kernel rungs 1-4 at default tolerances: no element is out of bounds. "
        "What is wrong is the sign: every error points toward zero (a mean lean of about -0.55%), "
        "where a correct kernel's rounding errors cancel. kladder's comparison reports that lean "
        "as a warning on the kernel rungs. Rung 8 swaps the kernel into the model's rmsnorm slot "
        "in bfloat16: on kladder's 4-layer model the answers do not move (exact match 1.0, as "
        "with the twin), but the lean reaches the logits, which shrink by 0.57% where the twin's "
        "move by 0.001%, and the right answers' negative log-likelihood rises 6.0% (3% allowed; "
        "the twin moves it -0.6%, 64 problems on the CPU): rung 8 fails it on that score. On a "
        "model deep enough (reference/000 suspected 126 layers) the same lean moves answers too. "
        "Under Triton's interpreter the kernel rungs cannot show the warning (the interpreter "
        "itself truncates every float32 -> bfloat16 conversion); on a GPU they do. The twin "
        "rounds to nearest even on the same bits."
    )
    ),
)
SLOT = "rmsnorm"   # the model slot rung 8 swaps this kernel into (Spec.slot)


@triton.jit
def _to_bf16_bits(y, FIXED: tl.constexpr):
    """float32 -> the float32 holding the bfloat16 value, by hand on the bits (the cast back
    to bfloat16 is then exact). NaN and Inf keep their class: their exponent is untouched."""
    bits = y.to(tl.uint32, bitcast=True)
    if FIXED:
        # round to nearest even: add half an ulp, plus one when the kept part is odd; NaN is
        # left alone (adding could carry it into Inf)
        rounded = bits + 0x7FFF + ((bits >> 16) & 1)
        bits = tl.where(y != y, bits, rounded)
    # The bug (FIXED False): no rounding step, the low 16 bits are just dropped (truncation).
    return (bits & 0xFFFF0000).to(tl.float32, bitcast=True)


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, y_ptr, N, stride_x, stride_xn, stride_w, stride_y, stride_yn, eps,
                    BLOCK_N: tl.constexpr, FIXED: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols * stride_xn, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols * stride_w, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    normed = _to_bf16_bits(x * rstd, FIXED)          # LlamaRMSNorm: cast to the input dtype ...
    y = _to_bf16_bits(normed * w, FIXED)             # ... then scale by the weight, in that dtype
    tl.store(y_ptr + row * stride_y + cols * stride_yn, y.to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x, w, eps, fixed):
    if x.dtype != torch.bfloat16:
        raise TypeError(f"rmsnorm: x is {x.dtype}; this kernel is written for bfloat16")
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_kernel[(M,)](x, w, y, N, x.stride(0), x.stride(1), w.stride(0), y.stride(0), y.stride(1), eps,
                          BLOCK_N=triton.next_power_of_2(N), FIXED=fixed)
    return y


def rmsnorm(x, w, eps=1e-6):
    """y = x / sqrt(mean(x^2) + eps) * w, row by row (x: [M, N] bfloat16, w: [N] float32)."""
    return _launch(x, w, eps, fixed=False)


def rmsnorm_fixed(x, w, eps=1e-6):
    return _launch(x, w, eps, fixed=True)


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "rmsnorm_bf16",
        kernel=kernel,
        reference=rmsnorm_ref,
        args={"x": kl.Tensor("M N", dtype="bfloat16"),
              "w": kl.Tensor("N", dtype="float32"),
              "eps": 1e-6},
        returns=kl.Tensor("M N", like="x"),
        # hidden sizes the author's models use (Llama-3-8B 4096, gpt-oss 2880) and head_dim 128
        dims={"M": kl.Dim(1, 4096),
              "N": kl.Dim(1, 8192, widths=[128, 2880, 4096])},
        model=kl.InModel(slot=SLOT),
    )


spec, fixed = build_specs(make_spec, rmsnorm, rmsnorm_fixed)
