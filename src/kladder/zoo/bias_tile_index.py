"""bias_tile_index: a grouped GEMM's per-expert bias pointer omits the N-tile index, so every
N-tile after the first adds the first tile's biases.

out[e] = x[e] @ w[e] + bias[e] for every expert e (fp16 in, fp32 accumulation and bias,
fp16 out). One program per (M-tile, N-tile, expert). The bias is added in the epilogue; its
pointer is built from the expert's row and the lane offsets, but not from the N-tile's
start, so the program of N-tile j reads bias[e, 0:BLOCK_N] instead of
bias[e, j*BLOCK_N:(j+1)*BLOCK_N]. The store mask is right, so nothing is written out of bounds.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="bias_tile_index",
    gap="values",
    rung=2,
    mirrors="aiter #5801 (gpt-oss-120b on a vLLM server, gfx1250)",
    needs="cpu",
    story=(
        "The epilogue of a grouped (per-expert) GEMM adds bias[e, n] through a pointer built "
        "from the expert's bias row and tl.arange(0, BLOCK_N), without the N-tile's start "
        "pid_n * BLOCK_N: every N-tile after the first adds the first tile's biases. The unit "
        "test used zero biases at widths of one N-tile, where the wrong pointer reads the "
        "right values; gpt-oss's biases are non-zero and differ column to column, and its "
        "accuracy collapsed. kladder's rung-2 'distinct' values for the bias (one of the "
        "default kinds: v[j] = (-1)^j (1 + 3j/(N-1)), non-negligible and different in every "
        "tile) catch it at N = 64, two N-tiles of 32: the second tile's 32 columns are off "
        "by up to 4. Rung 1 catches it first, and says less about why: its random normal "
        "biases differ tile to tile too, so every rung-1 point with N > 32 (N = 33, 2879, "
        "2880, 8192 ...) fails on the columns past the first tile; only the N <= 32 points "
        "pass. At rung 2 every point that keeps a random bias fails as well; the passes are "
        "biases nearly equal in every column ('ties') and huge x or w, whose products "
        "(about 1e5) overflow the fp16 output or dwarf a bias error of 4."
    ),
)

BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32


@triton.jit
def _grouped_gemm_bias_kernel(x_ptr, w_ptr, b_ptr, o_ptr, M, N, K,
                              stride_xe, stride_xm, stride_xk, stride_we, stride_wk, stride_wn,
                              stride_be, stride_bn, stride_oe, stride_om, stride_on,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n, e = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = _expert_tile(x_ptr + e * stride_xe, w_ptr + e * stride_we, rm, rn, M, N, K,
                       stride_xm, stride_xk, stride_wk, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K)
    # Epilogue: the expert's bias row. The bug: the lane offsets lack the N-tile's start
    # (pid_n * BLOCK_N), so every N-tile adds the first tile's biases.
    b_ptrs = b_ptr + e * stride_be + tl.arange(0, BLOCK_N) * stride_bn
    bias = tl.load(b_ptrs, mask=rn < N, other=0.0).to(tl.float32)
    out = acc + bias[None, :]
    o_ptrs = o_ptr + e * stride_oe + rm[:, None] * stride_om + rn[None, :] * stride_on
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _grouped_gemm_bias_kernel_fixed(x_ptr, w_ptr, b_ptr, o_ptr, M, N, K,
                                    stride_xe, stride_xm, stride_xk, stride_we, stride_wk, stride_wn,
                                    stride_be, stride_bn, stride_oe, stride_om, stride_on,
                                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n, e = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = _expert_tile(x_ptr + e * stride_xe, w_ptr + e * stride_we, rm, rn, M, N, K,
                       stride_xm, stride_xk, stride_wk, stride_wn, BLOCK_M, BLOCK_N, BLOCK_K)
    # The fix: the bias offsets are the tile's own columns.
    b_ptrs = b_ptr + e * stride_be + rn * stride_bn
    bias = tl.load(b_ptrs, mask=rn < N, other=0.0).to(tl.float32)
    out = acc + bias[None, :]
    o_ptrs = o_ptr + e * stride_oe + rm[:, None] * stride_om + rn[None, :] * stride_on
    tl.store(o_ptrs, out.to(o_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _expert_tile(x_ptr, w_ptr, rm, rn, M, N, K, stride_xm, stride_xk, stride_wk, stride_wn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """x[rm, :] @ w[:, rn] for one expert, fp32 accumulation, K tail masked."""
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(x_ptr + rm[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + kk[:, None] * stride_wk + rn[None, :] * stride_wn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    return acc


def _launch(kernel, x, w, bias):
    E, M, K = x.shape
    N = w.shape[2]
    out = torch.empty((E, M, N), dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), E)
    kernel[grid](x, w, bias, out, M, N, K, *x.stride(), *w.stride(), *bias.stride(), *out.stride(),
                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return out


def grouped_gemm_bias(x, w, bias):
    """out[e] = x[e] @ w[e] + bias[e] (x: [E, M, K] fp16, w: [E, K, N] fp16, bias: [E, N] fp32;
    out: [E, M, N] fp16)."""
    return _launch(_grouped_gemm_bias_kernel, x, w, bias)


def grouped_gemm_bias_fixed(x, w, bias):
    return _launch(_grouped_gemm_bias_kernel_fixed, x, w, bias)


def grouped_gemm_bias_ref(x, w, bias):
    return x @ w + bias[:, None, :]


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "grouped_gemm_bias",
        kernel=kernel,
        reference=grouped_gemm_bias_ref,
        # fp16, not bf16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as their
        # raw uint16 bits, so bf16 would fail the twin on the CPU for the interpreter's sake.
        # The bias takes the default value kinds, "distinct" among them: per-channel biases
        # that differ tile to tile.
        args={"x": kl.Tensor("E M K", dtype="float16"),
              "w": kl.Tensor("E K N", dtype="float16"),
              "bias": kl.Tensor("E N", dtype="float32")},
        returns=kl.Tensor("E M N", like="x"),
        # E: local experts; N: the expert's output width (gpt-oss: 2880)
        dims={"E": kl.Dim(1, 128),
              "M": kl.Dim(1, 4096, tile=BLOCK_M),
              "N": kl.Dim(1, 8192, tile=BLOCK_N, widths=[2880]),
              "K": kl.Dim(1, 8192, tile=BLOCK_K, widths=[2880])},
    )


spec, fixed = build_specs(make_spec, grouped_gemm_bias, grouped_gemm_bias_fixed)
