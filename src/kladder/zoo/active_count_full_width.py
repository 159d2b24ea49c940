"""active_count_full_width: a MoE routing step writes the number of active experts from the
lane one past the last expert (lane == E); when E fills the whole 256-lane block, that lane
does not exist and the count is never written.

After top-k routing the persistent MoE kernel needs, per batch, which experts got a token
(`used`, one flag per expert) and how many did (`n_active`, to schedule the expert GEMMs).
One program of 256 lanes (8 warps x 32 threads) reads one expert per lane and reduces the
flags; the lane just past the last expert (lane E, idle otherwise) writes the count. The
launcher has specializations for power-of-two expert counts up to 256. At E = 256 lane 256
does not exist: `n_active` keeps whatever its torch.empty held. The twin writes it from lane 0.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="active_count_full_width",
    gap="shapes",
    rung=1,
    mirrors="mirage-project/mirage #664 (SM100 MoE top-k: active-expert-count initialization for the "
            "full-width expert configuration; `threadIdx.x == NUM_EXPERTS` when NUM_EXPERTS == blockDim.x == 256)",
    needs="cpu",
    story=(
        "Mirage's SM100 top-k softmax task writes its active-expert bookkeeping from the thread whose "
        "index equals NUM_EXPERTS (`if (threadIdx.x == NUM_EXPERTS && mpk_active_expert_ids != nullptr)`) "
        "in a block of exactly 256 threads; the kernel supports power-of-two expert counts up to 256. "
        "At 128 experts thread 128 exists; at 256 no thread has that index, so the count is never "
        "initialized. The PR (github.com/mirage-project/mirage/pull/664: 'two SM100 MoE top-k routing "
        "edge cases that caused decode instability in the 256-expert path') fixes it with the "
        "subgroup shuffle mask of the last row group: 'Thread 0 always exists, unlike threadIdx.x == "
        "NUM_EXPERTS when NUM_EXPERTS == blockDim.x == 256'. Asked why 256 matters, its author calls "
        "it latent: the model under test (Qwen3-30B-A3B) has "
"128 experts, while the wrapper ships the 256 specialization too, never run. Here one program of 256 lanes flags the "
        "experts that got a token and lane E writes their count into an int32 the launcher allocated "
        "with torch.empty. The launcher accepts exactly the counts it has specializations for, so the "
        "author declares E = kl.Dim(sizes=[8, 16, 32, 64, 128, 256]) (a range would put points at "
        "sizes the launcher refuses, twin included); rung 1 lists every declared size and fails every "
        "point at E = 256, where n_active holds the largest int32 that kladder's workers fill "
        "torch.empty's integers with; every point at E <= 128 passes."
    ),
)

TOPK = 8
BLOCK_T = 16
LANES = 256                           # the block: 8 warps x 32 threads
EXPERTS = (8, 16, 32, 64, 128, 256)   # power-of-two expert counts up to one block


@triton.jit
def _route_kernel(x_ptr, ids_ptr, used_ptr, T, E, stride_x, stride_xe, stride_i,
                  BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, TOPK: tl.constexpr):
    """Each token's top-k experts (ties: lower id first), and a flag on every expert picked."""
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    e = tl.arange(0, BLOCK_E)
    x = tl.load(x_ptr + rt[:, None] * stride_x + e[None, :] * stride_xe,
                mask=(rt[:, None] < T) & (e[None, :] < E), other=float("-inf"))
    bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
    key = ((bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(tl.int64) << 32) | (BLOCK_E - 1 - e).to(tl.int64)[None, :]
    k = tl.arange(0, TOPK)
    ids = tl.zeros((BLOCK_T, TOPK), tl.int32)
    for i in tl.static_range(TOPK):
        best = tl.max(key, axis=1)
        ids = tl.where(k[None, :] == i, (BLOCK_E - 1 - (best & 0xFFFFFFFF)).to(tl.int32)[:, None], ids)
        key = tl.where(key == best[:, None], -9223372036854775808, key)
    top = (rt[:, None] < T) & (k[None, :] < TOPK)
    tl.store(ids_ptr + rt[:, None] * stride_i + k[None, :], ids, mask=top)
    tl.atomic_max(used_ptr + ids, tl.full((BLOCK_T, TOPK), 1, tl.int32), mask=top)


@triton.jit
def _count_kernel(used_ptr, n_ptr, E, LANES: tl.constexpr):
    lane = tl.arange(0, LANES)
    used = tl.load(used_ptr + lane, mask=lane < E, other=0)
    n = tl.sum(used, axis=0)
    # The bug: the lane one past the last expert writes the count; at E == LANES there is none.
    tl.store(n_ptr + lane * 0, tl.full((LANES,), 0, tl.int32) + n, mask=lane == E)


@triton.jit
def _count_kernel_fixed(used_ptr, n_ptr, E, LANES: tl.constexpr):
    lane = tl.arange(0, LANES)
    used = tl.load(used_ptr + lane, mask=lane < E, other=0)
    n = tl.sum(used, axis=0)
    # The fix: lane 0 always exists.
    tl.store(n_ptr + lane * 0, tl.full((LANES,), 0, tl.int32) + n, mask=lane == 0)


def _launch(count_kernel, logits):
    T, E = logits.shape
    if E not in EXPERTS:
        raise ValueError(f"no routing specialization for {E} experts (power-of-two counts up to {LANES}): "
                         f"supported {list(EXPERTS)}")
    if logits.dtype != torch.float32:
        raise TypeError(f"router logits must be float32, got {logits.dtype}")
    ids = torch.empty((T, TOPK), dtype=torch.int32, device=logits.device)
    used = torch.zeros((E,), dtype=torch.int32, device=logits.device)
    n_active = torch.empty((), dtype=torch.int32, device=logits.device)
    _route_kernel[(triton.cdiv(T, BLOCK_T),)](logits, ids, used, T, E, *logits.stride(), ids.stride(0),
                                              BLOCK_T=BLOCK_T, BLOCK_E=triton.next_power_of_2(E), TOPK=TOPK)
    count_kernel[(1,)](used, n_active, E, LANES=LANES)
    return ids, used, n_active


def route_active(logits):
    """(ids [T, 8] int32, used [E] int32, n_active [] int32): each token's top-8 experts by
    router logit (descending, ties: lower id first), a 1 on every expert some token picked, and
    how many experts did. logits: [T, E] fp32, E a power of two up to 256."""
    return _launch(_count_kernel, logits)


def route_active_fixed(logits):
    return _launch(_count_kernel_fixed, logits)


def route_active_ref(logits):
    E = logits.shape[1]
    ids = torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :TOPK]
    used = (torch.bincount(ids.reshape(-1), minlength=E) > 0).to(torch.int32)
    return ids.to(torch.int32), used, used.sum().to(torch.int32)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "route_active",
        kernel=kernel,
        reference=route_active_ref,
        args={"logits": kl.Tensor("T E", dtype="float32")},
        returns={"ids": kl.Tensor(f"T {TOPK}", dtype="int32"),
                 "used": kl.Tensor("E", dtype="int32"),
                 "n_active": kl.Tensor("", dtype="int32")},
        # E: the expert counts the launcher has specializations for (its documentation's list)
        dims={"T": kl.Dim(1, 4096, tile=BLOCK_T), "E": kl.Dim(sizes=list(EXPERTS))},
    )


spec, fixed = build_specs(make_spec, route_active, route_active_fixed)
