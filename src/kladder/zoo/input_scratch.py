"""input_scratch: a fused residual-add RMSNorm that keeps its pre-norm sum in its input.

out = rmsnorm(x + r) * w (x, r: [M, N] bf16/fp16, w: [N] fp32; fp32 inside, out in x's
dtype), one program per row, looping over the row in BLOCK_N columns twice: the first pass
adds and accumulates the sum of squares, the second normalises. The buggy kernel stores the
sum x + r back over x in the first pass and reads it from there in the second: no scratch
buffer, no second add. `out` is right; x is not what the caller passed any more. The fixed
twin loads x and r again in the second pass and adds them again.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="input_scratch",
    gap="contracts",
    rung=3,
    mirrors="common in kernel libraries (an in-place epilogue nobody declared: an input reused as scratch)",
    needs="cpu",
    story=(
        "The fused add + RMSNorm loops over a row twice, because a row of 8K columns does not "
        "fit in one block: once to add the residual and accumulate the sum of squares, once to "
        "normalise. Its author kept the sum for the second pass where it already had a buffer "
        "of the right shape, dtype and strides: x itself (`tl.store(x_ptr + offs, h)` in the "
        "first loop, `tl.load(x_ptr + offs)` in the second), which saves a scratch allocation "
        "and an add per element. Every output is right, at every shape and value and for every "
        "layout but a broadcast x (whose rows share one storage row the programs overwrite), "
        "so each unit test that compares out with torch passes. But x is the caller's: the "
        "hidden states a skip connection adds back a layer later, the activations autograd "
        "saved, the prefill buffer another branch reads, now hold x + r, and the model drifts "
        "with no error anywhere near the kernel. The spec declares x a plain input, as its "
        "author would: kladder compares every input's bytes after each call with those it "
        "passed, and the rung-3 points (every layout, dtype and padding point) fail on x, "
        "every element changed. The twin reads x and r again in the second pass and writes "
        "only out."
    ),
)


@triton.jit
def _add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, N, sxm, sxn, srm, srn, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = cols < N
        h = (tl.load(x_ptr + row * sxm + cols * sxn, mask=m, other=0.0).to(tl.float32)
             + tl.load(r_ptr + row * srm + cols * srn, mask=m, other=0.0).to(tl.float32))
        # The bug: the sum is kept for the second pass in x, the caller's input.
        tl.store(x_ptr + row * sxm + cols * sxn, h.to(x_ptr.dtype.element_ty), mask=m)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = cols < N
        h = tl.load(x_ptr + row * sxm + cols * sxn, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(out_ptr + row * N + cols, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def _add_rmsnorm_kernel_fixed(x_ptr, r_ptr, w_ptr, out_ptr, N, sxm, sxn, srm, srn, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = cols < N
        h = (tl.load(x_ptr + row * sxm + cols * sxn, mask=m, other=0.0).to(tl.float32)
             + tl.load(r_ptr + row * srm + cols * srn, mask=m, other=0.0).to(tl.float32))
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = cols < N
        # The fix: the sum is formed again from the inputs, which stay as they were passed.
        h = (tl.load(x_ptr + row * sxm + cols * sxn, mask=m, other=0.0).to(tl.float32)
             + tl.load(r_ptr + row * srm + cols * srn, mask=m, other=0.0).to(tl.float32))
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        tl.store(out_ptr + row * N + cols, (h * rstd * w).to(out_ptr.dtype.element_ty), mask=m)


EPS = 1e-6
BLOCK_N = 256


def _launch(kernel, x, r, w):
    M, N = x.shape
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M and N:
        kernel[(M,)](x, r, w.contiguous(), out, N, x.stride(0), x.stride(1), r.stride(0), r.stride(1), EPS,
                     BLOCK_N=BLOCK_N)
    return out


def add_rmsnorm(x, r, w):
    """rmsnorm(x + r) * w, the sum in fp32, the output in x's dtype."""
    return _launch(_add_rmsnorm_kernel, x, r, w)


def add_rmsnorm_fixed(x, r, w):
    return _launch(_add_rmsnorm_kernel_fixed, x, r, w)


def add_rmsnorm_ref(x, r, w):
    h = x + r
    return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "add_rmsnorm",
        kernel=kernel,
        reference=add_rmsnorm_ref,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]),
              "r": kl.Tensor("M N", like="x"),
              "w": kl.Tensor("N", dtype="float32")},
        returns=kl.Tensor("M N", like="x"),
        # M: tokens; N: the hidden size, cut into BLOCK_N columns per loop step
        dims={"M": kl.Dim(1, 1024),
              "N": kl.Dim(1, 8192, tile=BLOCK_N, widths=[2048, 4096])},
        rows="M",
    )


spec, fixed = build_specs(make_spec, add_rmsnorm, add_rmsnorm_fixed)
