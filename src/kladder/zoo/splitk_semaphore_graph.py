"""splitk_semaphore_graph: a split-K GEMM counts arrivals on per-tile counters that are zeroed
once, when they are allocated, outside the CUDA graph; replays never put them back to zero.

C = A @ B with fp16 inputs, fp32 partials and an fp16 output, for decode-sized M and long K.
SPLIT_K programs share each BLOCK_M x BLOCK_N output tile, each taking every SPLIT_K-th
BLOCK_K slice of K. Each stores its fp32 partial tile in its own slot of a workspace and
counts its arrival on the tile's int32 counter with tl.atomic_add; the program that reads
SPLIT_K - 1 (the last to arrive) sums the partials in split order and writes the tile of C.

Eager calls count on freshly zeroed counters. Under CUDA-graph capture the launcher
allocates nothing and uses the counters kept with the workspace, zeroed once when the
workspace was allocated (at warm-up, outside the graph). The kernel never resets them:
replay 1 is right and leaves every counter at SPLIT_K; from replay 2 on, no arrival reads
SPLIT_K - 1, no program writes C, and C keeps what its buffer held. The twin's last arrival
puts its tile's counter back to zero.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="splitk_semaphore_graph",
    gap="execution modes",
    rung=4,
    mirrors="aiter #4494",
    needs="cuda",
    story=(
        "splitk_gemm splits K across SPLIT_K programs per output tile (decode-sized M, K up "
        "to 16384): each stores its fp32 partial tile in a workspace and counts its arrival on "
        "the tile's int32 counter with tl.atomic_add, and the program that reads SPLIT_K - 1 "
        "sums the partials and writes the tile of C. Eager calls take freshly zeroed counters "
        "(torch.zeros, 4 bytes a tile). Under CUDA-graph capture the launcher allocates "
        "nothing, to keep one block per GEMM per captured batch size out of the graph's "
        "private pool, and takes the counters kept with the workspace, zeroed once when the "
        "workspace was allocated at warm-up, outside the graph. The kernel never puts them "
        "back: replay 1 is right and leaves every counter at SPLIT_K; on replay 2 the "
        "arrivals read SPLIT_K .. 2 SPLIT_K - 1, no program writes C, and the output keeps "
        "what its buffer held (in aiter the stale counters hung Kimi-K3's warm-up; this kernel "
        "waits on nothing, so it returns stale output instead). The unit test ran every shape "
        "and split eagerly and never captured the GEMM: \"no test crossed split-K with "
        "capture\". Rung 4's graph mode catches it: it warms up, captures, and replays three "
        "times on new inputs with the output poisoned before each replay; replay 1 passes "
        "and replays 2 and 3 return the poison in every element (a graph point after the "
        "first in one worker fails from replay 1: the counters stay dirty). Nothing else sees "
        "it: every eager call is right (rung 1, A-B-A, the side stream; reused buffers are "
        "skipped, the kernel allocates its output). On the CPU the graph mode is skipped with "
        "its reason, only the eager modes run, and they pass: the catch needs a GPU. (The "
        "kernel-level mechanism runs on the CPU in tests/test_zoo_rung4_gpu_kernels.py.)"
    ),
)

BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 64
CONFIGS = [{"SPLIT_K": 2}, {"SPLIT_K": 4}]
DEFAULT_SPLIT_K = 4


@triton.jit
def _splitk_kernel(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K,
                   stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # split pid_k takes the K slices pid_k, pid_k + SPLIT_K, pid_k + 2 * SPLIT_K, ...
    for k0 in range(pid_k * BLOCK_K, K, SPLIT_K * BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    # this split's partial tile, in its own slot: no atomics on data, no zeroing needed
    tile = pid_m * tl.num_programs(1) + pid_n
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tile_parts = part_ptr + tile * (SPLIT_K * BLOCK_M * BLOCK_N)
    tl.store(tile_parts + pid_k * (BLOCK_M * BLOCK_N) + slot, acc)
    tl.debug_barrier()                                    # every thread's partial is stored ...
    arrived = tl.atomic_add(count_ptr + tile, 1)          # ... before the arrival (acq_rel) publishes it
    if arrived == SPLIT_K - 1:
        # The last to arrive sums the partials in split order: the same bits whichever split
        # arrives last. Loads through L2 (.cg): the partials were written by other SMs.
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            total += tl.load(tile_parts + s * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, total.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
        # The bug: the counter stays at SPLIT_K. Eager calls never see it (fresh counters
        # each call); a graph replays this launch on the same counters.


@triton.jit
def _splitk_kernel_fixed(a_ptr, b_ptr, c_ptr, part_ptr, count_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                         SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
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
    tile = pid_m * tl.num_programs(1) + pid_n
    slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tile_parts = part_ptr + tile * (SPLIT_K * BLOCK_M * BLOCK_N)
    tl.store(tile_parts + pid_k * (BLOCK_M * BLOCK_N) + slot, acc)
    tl.debug_barrier()
    arrived = tl.atomic_add(count_ptr + tile, 1)
    if arrived == SPLIT_K - 1:
        total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            total += tl.load(tile_parts + s * (BLOCK_M * BLOCK_N) + slot, cache_modifier=".cg")
        tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, total.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
        # The fix: every split of this launch has arrived, so the last one puts the counter
        # back to zero for the next launch, eager, captured or replayed.
        tl.atomic_xchg(count_ptr + tile, 0)


def _check(SPLIT_K):
    if SPLIT_K not in (2, 4):
        raise ValueError(f"SPLIT_K must be 2 or 4, got {SPLIT_K}")


def _capturing(t):
    return t.is_cuda and torch.cuda.is_current_stream_capturing()


# Per device: (fp32 partial tiles, int32 counters for captured calls), grown on demand.
_WORKSPACE = {}
# The twin's own, so that nothing the buggy kernel leaves behind reaches it.
_WORKSPACE_FIXED = {}
# Workspaces a bigger one replaced: a graph captured earlier still points at them.
_OUTGROWN = []


def _workspace(cache, device, n_partials, n_counters):
    ws = cache.get(device)
    if ws is not None and ws[0].numel() >= n_partials and ws[1].numel() >= n_counters:
        return ws
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise RuntimeError("splitk_gemm: no workspace for this shape yet; call it once before capturing "
                           "a graph (the engine's warm-up does)")
    if ws is not None:
        _OUTGROWN.append(ws)
        n_partials, n_counters = max(n_partials, ws[0].numel()), max(n_counters, ws[1].numel())
    # Partials need no zeroing: every split writes its slot before it arrives.
    ws = cache[device] = (
        torch.empty(triton.next_power_of_2(n_partials), dtype=torch.float32, device=device),
        torch.zeros(triton.next_power_of_2(n_counters), dtype=torch.int32, device=device))
    return ws


def _launch(kernel, cache, a, b, SPLIT_K):
    _check(SPLIT_K)
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N), SPLIT_K)
    tiles = grid[0] * grid[1]
    partials, kept_counters = _workspace(cache, a.device, tiles * SPLIT_K * BLOCK_M * BLOCK_N, tiles)
    # Inside a capture, allocate nothing: a block allocated here is taken from the
    # graph's private pool and held for the graph's life, one per GEMM per captured
    # batch size. Use the counters kept with the workspace, zeroed when it was allocated.
    counters = kept_counters if _capturing(a) else torch.zeros(tiles, dtype=torch.int32, device=a.device)
    kernel[grid](a, b, c, partials, counters, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                 SPLIT_K=SPLIT_K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return c


def splitk_gemm(a, b, SPLIT_K=DEFAULT_SPLIT_K):
    """C = A @ B (fp16 in, fp32 partials, fp16 out), K split SPLIT_K ways (2 or 4)."""
    return _launch(_splitk_kernel, _WORKSPACE, a, b, SPLIT_K)


def splitk_gemm_fixed(a, b, SPLIT_K=DEFAULT_SPLIT_K):
    return _launch(_splitk_kernel_fixed, _WORKSPACE_FIXED, a, b, SPLIT_K)


def splitk_gemm_ref(a, b):
    return a @ b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "splitk_gemm",
        kernel=kernel,
        reference=splitk_gemm_ref,
        # fp16, not bf16: Triton 3.9's interpreter multiplies bf16 tl.dot operands as their
        # raw uint16 bits, so bf16 would fail the twin on the CPU for the interpreter's sake.
        args={"a": kl.Tensor("M K", dtype="float16"), "b": kl.Tensor("K N", dtype="float16")},
        returns=kl.Tensor("M N", like="a"),
        # split-K is the decode path: few rows, long K. A split walks K in slices of BLOCK_K,
        # SPLIT_K * BLOCK_K apart (64, 128, 256); K widths: gpt-oss 2880, Llama-3-8B 4096,
        # DeepSeek-V3 7168.
        dims={"M": kl.Dim(1, 256, tile=BLOCK_M),
              "N": kl.Dim(1, 8192, tile=BLOCK_N),
              "K": kl.Dim(1, 16384, tile=[BLOCK_K, 2 * BLOCK_K, 4 * BLOCK_K], widths=[2880, 4096, 7168])},
        configs=CONFIGS,
        modes=kl.Modes(graphs=True),            # the engine captures its decode GEMMs in CUDA graphs, one per batch size
    )


spec, fixed = build_specs(make_spec, splitk_gemm, splitk_gemm_fixed)
