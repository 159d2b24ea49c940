"""gemm_k_tail: the K loop runs K // BLOCK_K times and drops the K tail.

C = A @ B with fp16 inputs, fp32 accumulation and an fp16 output. The buggy kernel loads
only whole K tiles, so it is right whenever BLOCK_K divides K and silently drops the last
K % BLOCK_K columns of A (rows of B) otherwise.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="gemm_k_tail",
    gap="shapes",
    rung=1,
    mirrors="FlyDSL #1199, #1230 (K = 2880)",
    needs="cpu",
    story=(
        "The K loop runs K // BLOCK_K times and its loads carry no K mask, so the last "
        "K % BLOCK_K columns of A never reach the accumulator. Every K the author tested "
        "(512, 1024, 4096) is a multiple of every accepted BLOCK_K, so the unit test passed; "
        "gpt-oss's K = 2880 is a multiple of 64 but not of 128, and with BLOCK_K = 128 the "
        "output is off by the dropped 64 columns. kladder's rung-1 tile edges (K = 65 with "
        "BLOCK_K = 64, K = 127, 129 ...) and the model width K = 2880 with BLOCK_K = 128 "
        "catch it."
    ),
)

BLOCK_M, BLOCK_N = 64, 64
CONFIGS = [{"BLOCK_K": 32}, {"BLOCK_K": 64}, {"BLOCK_K": 128}]


@triton.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # Whole K tiles only, so the hot loop carries no K mask (one compare less per load).
    # The bug: the K % BLOCK_K tail is never loaded.
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _gemm_kernel_fixed(a_ptr, b_ptr, c_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # The fix: cdiv(K, BLOCK_K) tiles, the last one masked in K (zeros add nothing).
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _launch(kernel, a, b, BLOCK_K):
    if BLOCK_K not in (32, 64, 128):
        raise ValueError(f"BLOCK_K must be 32, 64 or 128, got {BLOCK_K}")
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c


def gemm(a, b, BLOCK_K=64):
    """C = A @ B (fp16 in, fp32 accumulate, fp16 out)."""
    return _launch(_gemm_kernel, a, b, BLOCK_K)


def gemm_fixed(a, b, BLOCK_K=64):
    return _launch(_gemm_kernel_fixed, a, b, BLOCK_K)


def gemm_ref(a, b):
    return a @ b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "gemm",
        kernel=kernel,
        reference=gemm_ref,
        # fp16, not bf16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as their
        # raw uint16 bits, so bf16 would fail the twin on the CPU for the interpreter's sake.
        args={"a": kl.Tensor("M K", dtype="float16"), "b": kl.Tensor("K N", dtype="float16")},
        returns=kl.Tensor("M N", like="a"),
        dims={"M": kl.Dim(1, 8192, tile=BLOCK_M),
              "N": kl.Dim(1, 8192, tile=BLOCK_N),
              "K": kl.Dim(1, 8192, tile=[32, 64, 128], widths=[2880, 4096, 7168])},
        configs=CONFIGS,
    )


spec, fixed = build_specs(make_spec, gemm, gemm_fixed)
