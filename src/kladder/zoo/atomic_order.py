"""atomic_order: a split-K GEMM whose splits add their partial tiles into the fp32 output with
float atomics, in whatever order they arrive; its spec declares deterministic=True.

C = A @ B with fp16 inputs and an fp32 output, for decode-sized M and long K. SPLIT_K programs
share each BLOCK_M x BLOCK_N tile of C, each taking every SPLIT_K-th BLOCK_K slice of K, and
each adds its fp32 partial tile into C (zeroed by the launcher) with tl.atomic_add. Float
addition is not associative: with three or more splits the bits of C depend on the order the
splits arrive in, which the hardware decides call by call. Every value is within the
tolerance; no two calls need agree bit for bit. The twin stores each split's partial tile in
its own slot and sums the slots in split order in a second kernel: the same bits every call.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="atomic_order",
    gap="repetition",
    rung=5,
    mirrors="SGLang #41868 (nondeterministic pipelined write-back: \"Answers look fluent but are wrong\")",
    needs="cuda",
    story=(
        "A split-K GEMM for decode (fp16 in, fp32 out, K up to 16384) lets its SPLIT_K programs per "
        "output tile add their partial tiles straight into C with tl.atomic_add: no workspace, no "
        "second kernel, and every value within the tolerance. The library promises batch-invariant, "
        "reproducible outputs (Spec(deterministic=True): a serving stack that caches prefixes or "
        "compares runs needs the same bits for the same inputs), but fp32 addition is not associative "
        "and the splits arrive in the order the hardware schedules them, so from three splits on C's "
        "bits change from call to call. Every correctness test passes, each call being right within "
        "the tolerance; no test called it twice on the same inputs and compared the bits. Rung 5's "
        "repetition does, and with deterministic=True a bitwise difference fails, with the rate of "
        "calls that differ. On the CPU the interpreter adds in program order, so the bits never change "
        "there: the catch needs a GPU. (Rung 4's A-B-A, comparing A before and after B bit for bit, "
        "also trips over it on a GPU, where its message blames state left by B.)"
    ),
)

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 64
CONFIGS = [{"SPLIT_K": 4}, {"SPLIT_K": 8}]
DEFAULT_SPLIT_K = 4


@triton.jit
def _partial_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(pid_k * BLOCK_K, K, SPLIT_K * BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    return acc, rm, rn


@triton.jit
def _splitk_atomic_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                          stride_cm, stride_cn, SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    acc, rm, rn = _partial_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                SPLIT_K, BLOCK_M, BLOCK_N, BLOCK_K)
    # The bug: splits add into C in the order they arrive; fp32 addition is not associative.
    tl.atomic_add(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
                  mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def _splitk_slots_kernel(a_ptr, b_ptr, part_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                         SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    acc, rm, rn = _partial_tile(a_ptr, b_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                                SPLIT_K, BLOCK_M, BLOCK_N, BLOCK_K)
    # The fix: each split's partial tile in its own slot ...
    tile = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(part_ptr + (tile * SPLIT_K + tl.program_id(2)) * (BLOCK_M * BLOCK_N) + slot, acc)


@triton.jit
def _sum_slots_kernel(part_ptr, c_ptr, M, N, stride_cm, stride_cn, SPLIT_K: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = pid_m * tl.num_programs(1) + pid_n
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):          # ... summed in split order: the same bits every call
        total += tl.load(part_ptr + (tile * SPLIT_K + s) * (BLOCK_M * BLOCK_N) + slot)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, total, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _check(SPLIT_K):
    if SPLIT_K not in (4, 8):
        raise ValueError(f"SPLIT_K must be 4 or 8, got {SPLIT_K}")


def _grid(a, b, SPLIT_K):
    M, K = a.shape
    N = b.shape[1]
    return M, N, K, (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), SPLIT_K)


def splitk_gemm(a, b, SPLIT_K=DEFAULT_SPLIT_K):
    """C = A @ B (fp16 in, fp32 out), K split SPLIT_K ways (4 or 8)."""
    _check(SPLIT_K)
    M, N, K, grid = _grid(a, b, SPLIT_K)
    c = torch.zeros((M, N), dtype=torch.float32, device=a.device)       # the splits add into it
    _splitk_atomic_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                SPLIT_K=SPLIT_K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c


def splitk_gemm_fixed(a, b, SPLIT_K=DEFAULT_SPLIT_K):
    _check(SPLIT_K)
    M, N, K, grid = _grid(a, b, SPLIT_K)
    parts = torch.empty(grid[0] * grid[1] * SPLIT_K * BLOCK_M * BLOCK_N, dtype=torch.float32, device=a.device)
    c = torch.empty((M, N), dtype=torch.float32, device=a.device)
    _splitk_slots_kernel[grid](a, b, parts, M, N, K, *a.stride(), *b.stride(),
                               SPLIT_K=SPLIT_K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    _sum_slots_kernel[grid[:2]](parts, c, M, N, *c.stride(), SPLIT_K=SPLIT_K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return c


def splitk_gemm_ref(a, b):
    return a @ b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "splitk_gemm_f32",
        kernel=kernel,
        reference=splitk_gemm_ref,
        # fp16, not bf16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as their raw bits
        args={"a": kl.Tensor("M K", dtype="float16"), "b": kl.Tensor("K N", dtype="float16")},
        returns=kl.Tensor("M N", dtype="float32"),
        dims={"M": kl.Dim(1, 256, tile=BLOCK_M),
              "N": kl.Dim(1, 8192, tile=BLOCK_N),
              "K": kl.Dim(1, 16384, tile=[BLOCK_K, 4 * BLOCK_K, 8 * BLOCK_K], widths=[2880, 4096, 7168])},
        configs=CONFIGS,
        repetition=kl.Repetition(deterministic=True),     # the library promises the same bits for the same inputs
    )


spec, fixed = build_specs(make_spec, splitk_gemm, splitk_gemm_fixed)
