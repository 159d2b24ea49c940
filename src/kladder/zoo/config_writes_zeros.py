"""config_writes_zeros: the launcher accepts a BLOCK_K the inner product cannot use; with
that config the kernel issues no MMA and stores zeros.

C = A @ B (fp16 in, fp32 accumulate, fp16 out). The kernel feeds the matrix unit in
MMA_K-deep slices of each K tile, BLOCK_K // MMA_K of them. The launcher's config list
was copied from a kernel whose MMA is 16 deep, so it accepts BLOCK_K = 16, for which
16 // 32 = 0 slices run: the K loop turns, nothing accumulates, and C is all zeros.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="config_writes_zeros",
    gap="shapes",
    rung=1,
    mirrors="FlyDSL #1264",
    needs="cpu",
    story=(
        "The kernel consumes each K tile in 32-deep slices, the depth of the MMA it was "
        "written for, and runs BLOCK_K // 32 slices per tile. Its launcher accepts the "
        "BLOCK_K list of a sibling kernel whose MMA is 16 deep, 16 included; at BLOCK_K = 16 "
        "no slice runs and C comes back all zeros, with no error. Every tuned entry and the "
        "smoke test use BLOCK_K = 64, so no test ever ran the 16. kladder's rung-1 config "
        "points run every config the launcher accepts, and BLOCK_K = 16 fails at any shape."
    ),
)

BLOCK_M, BLOCK_N = 64, 64
MMA_K = 32  # depth of one matrix instruction's K slice, as the kernel was written for it
CONFIGS = [{"BLOCK_K": 16}, {"BLOCK_K": 32}, {"BLOCK_K": 64}, {"BLOCK_K": 128}]


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 MMA_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, MMA_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # one K tile, fed to the matrix unit MMA_K columns at a time
        for s in tl.static_range(BLOCK_K // MMA_K):
            ks = k0 + s * MMA_K + rk
            a = tl.load(a_ptr + rm[:, None] * stride_am + ks[None, :] * stride_ak,
                        mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
            b = tl.load(b_ptr + ks[:, None] * stride_bk + rn[None, :] * stride_bn,
                        mask=(ks[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _check(BLOCK_K):
    if BLOCK_K not in (16, 32, 64, 128):
        raise ValueError(f"BLOCK_K must be 16, 32, 64 or 128, got {BLOCK_K}")


def _launch(a, b, BLOCK_K, mma_k):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _gemm_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                       BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, MMA_K=mma_k)
    return c


def gemm(a, b, BLOCK_K=64):
    """C = A @ B (fp16 in, fp32 accumulate, fp16 out)."""
    _check(BLOCK_K)
    # The bug: the slice depth is fixed at MMA_K, so a BLOCK_K below it runs zero slices.
    return _launch(a, b, BLOCK_K, MMA_K)


def gemm_fixed(a, b, BLOCK_K=64):
    _check(BLOCK_K)
    # The fix: a tile shallower than the MMA is fed in one slice of its own depth
    # (a 16-deep fp16 dot is a valid matrix instruction shape too).
    return _launch(a, b, BLOCK_K, min(BLOCK_K, MMA_K))


def gemm_ref(a, b):
    return a @ b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "gemm_mma",
        kernel=kernel,
        reference=gemm_ref,
        # fp16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as raw bits.
        args={"a": kl.Tensor("M K", dtype="float16"), "b": kl.Tensor("K N", dtype="float16")},
        returns=kl.Tensor("M N", like="a"),
        dims={"M": kl.Dim(1, 8192, tile=BLOCK_M),
              "N": kl.Dim(1, 8192, tile=BLOCK_N),
              "K": kl.Dim(1, 8192, tile=[16, 32, 64, 128], widths=[2880, 4096, 7168])},
        configs=CONFIGS,
    )


spec, fixed = build_specs(make_spec, gemm, gemm_fixed)
