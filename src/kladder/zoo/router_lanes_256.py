"""router_lanes_256: a top-k gating kernel gives each of its 256 lanes exactly one expert, so
a router wider than one block never proposes an expert with index 256 or more.

Softmax top-k routing: for every token, the TOPK experts with the largest router logits, in
descending order (equal logits: the lower id first), and the softmax over the chosen logits.
The kernel was written when every checkpoint it served had at most 256 experts: one program
holds BLOCK_T tokens x 256 lanes, lane e loads expert e, masked by e < E. The launcher
accepts the expert counts it has tuned specializations for, 512 among them. At E = 512 the
experts 256..511 are never loaded: every token whose best experts sit there is routed to the
best of the first 256. The twin's lanes cover the whole row (BLOCK_E = next power of 2 >= E).
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="router_lanes_256",
    gap="shapes",
    rung=1,
    mirrors="kekzl/imp #2056 (top-k gating never proposed an expert with index >= 256: Qwen3.8-Flash-Next, "
            "512 experts, best expert 338, imp picked 68)",
    needs="cpu",
    story=(
        "imp's topk_gating_kernel and its fused decode gating kernel gave each of their 256 threads "
        "exactly one expert (tid < n_experts), so a router wider than one block never proposed an "
        "expert with index >= 256; the router logits were right, only the selection was capped "
        "(github.com/kekzl/imp/pull/2056). It was invisible because every checkpoint served until then "
        "had at most 256 experts; a 512-expert model routed every token whose best experts sit above "
        "255 to the best of the first 256 (the PR's teacher-forced score on unseen prose: 14.25 before the "
        "fix, 6.00 after, llama.cpp 5.54). Here one program "
        "holds 16 tokens x 256 lanes, lane e loads expert e. The launcher takes only the expert counts "
        "it has specializations for (8, 16, 64, 128, 256, 512), as routing kernels do (a switch over "
        "the expert count), so its author declares E = kl.Dim(sizes=[8, 16, 64, 128, 256, 512]): a "
        "range would put points at E = 9, 255, 257 ... that the launcher refuses, twin included. "
        "Rung 1 lists every declared size; at E = 512 almost every token's top 8 holds an expert "
        "above 255, and every such point fails; every point at E <= 256 passes."
    ),
)

TOPK = 8            # DeepSeek-V3, Qwen3-MoE, GLM: 8 routed experts per token
BLOCK_T = 16        # tokens per program
LANES = 256         # one block: 8 warps x 32 threads, one expert each
EXPERTS = (8, 16, 64, 128, 256, 512)   # the expert counts the launcher has specializations for


@triton.jit
def _ordered_bits(x):
    """The fp32 scores' bits as int32 keys in the floats' order (-0 made +0 first)."""
    bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def _gate_kernel(x_ptr, ids_ptr, w_ptr, T, E, stride_x, stride_xe, stride_i, stride_w,
                 BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, TOPK: tl.constexpr, LANES: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    # The bug: one lane per expert, LANES lanes: experts LANES.. are never loaded.
    e = tl.arange(0, LANES)
    x_rows = x_ptr + rt[:, None] * stride_x
    x = tl.load(x_rows + e[None, :] * stride_xe, mask=(rt[:, None] < T) & (e[None, :] < E), other=float("-inf"))
    _pick(x, e, x_rows, stride_xe, ids_ptr, w_ptr, rt, T, stride_i, stride_w, LANES, BLOCK_T, TOPK)


@triton.jit
def _gate_kernel_fixed(x_ptr, ids_ptr, w_ptr, T, E, stride_x, stride_xe, stride_i, stride_w,
                       BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, TOPK: tl.constexpr, LANES: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    # The fix: the lanes cover the whole row.
    e = tl.arange(0, BLOCK_E)
    x_rows = x_ptr + rt[:, None] * stride_x
    x = tl.load(x_rows + e[None, :] * stride_xe, mask=(rt[:, None] < T) & (e[None, :] < E), other=float("-inf"))
    _pick(x, e, x_rows, stride_xe, ids_ptr, w_ptr, rt, T, stride_i, stride_w, BLOCK_E, BLOCK_T, TOPK)


@triton.jit
def _pick(x, e, x_rows, stride_xe, ids_ptr, w_ptr, rt, T, stride_i, stride_w, WIDTH: tl.constexpr, BLOCK_T: tl.constexpr,
          TOPK: tl.constexpr):
    """TOPK max reductions over 64-bit keys (the score's ordered bits above WIDTH-1-e: equal
    scores rank by lower id), then the softmax over the picked logits."""
    key = (_ordered_bits(x).to(tl.int64) << 32) | (WIDTH - 1 - e).to(tl.int64)[None, :]
    k = tl.arange(0, TOPK)
    ids = tl.zeros((BLOCK_T, TOPK), tl.int32)
    for i in tl.static_range(TOPK):
        best = tl.max(key, axis=1)
        ids = tl.where(k[None, :] == i, (WIDTH - 1 - (best & 0xFFFFFFFF)).to(tl.int32)[:, None], ids)
        key = tl.where(key == best[:, None], -9223372036854775808, key)
    top = (rt[:, None] < T) & (k[None, :] < TOPK)
    logit = tl.load(x_rows + ids * stride_xe, mask=top, other=0.0)
    p = tl.exp(logit - tl.max(logit, axis=1)[:, None])
    tl.store(ids_ptr + rt[:, None] * stride_i + k[None, :], ids, mask=top)
    tl.store(w_ptr + rt[:, None] * stride_w + k[None, :], p / tl.sum(p, axis=1)[:, None], mask=top)


def _launch(kernel, logits, top_k):
    T, E = logits.shape
    if E not in EXPERTS:
        raise ValueError(f"no gating specialization for {E} experts; supported: {list(EXPERTS)}")
    if top_k != TOPK:
        raise ValueError(f"the gating kernel is built for top-{TOPK}, got top_k = {top_k}")
    if logits.dtype != torch.float32:
        raise TypeError(f"router logits must be float32, got {logits.dtype}")
    ids = torch.empty((T, top_k), dtype=torch.int32, device=logits.device)
    w = torch.empty((T, top_k), dtype=torch.float32, device=logits.device)
    kernel[(triton.cdiv(T, BLOCK_T),)](logits, ids, w, T, E, *logits.stride(), ids.stride(0), w.stride(0),
                                       BLOCK_T=BLOCK_T, BLOCK_E=triton.next_power_of_2(E), TOPK=top_k, LANES=LANES)
    return ids, w


def gate_topk(logits, top_k=TOPK):
    """(ids [T, top_k] int32, weights [T, top_k] fp32): each token's top_k experts by router
    logit, descending (ties: lower id first), and the softmax over their logits. logits: [T, E]
    fp32, E one of EXPERTS."""
    return _launch(_gate_kernel, logits, top_k)


def gate_topk_fixed(logits, top_k=TOPK):
    return _launch(_gate_kernel_fixed, logits, top_k)


def gate_topk_ref(logits, top_k):
    ids = torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :top_k]
    w = torch.softmax(logits.gather(-1, ids), dim=-1)
    return ids.to(torch.int32), w.to(torch.float32)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "gate_topk",
        kernel=kernel,
        reference=gate_topk_ref,
        args={"logits": kl.Tensor("T E", dtype="float32"), "top_k": TOPK},
        returns={"ids": kl.Tensor(f"T {TOPK}", dtype="int32"),
                 "weights": kl.Tensor(f"T {TOPK}", dtype="float32")},
        # E: the expert counts the launcher has specializations for (its documentation's list)
        dims={"T": kl.Dim(1, 4096, tile=BLOCK_T), "E": kl.Dim(sizes=list(EXPERTS))},
    )


spec, fixed = build_specs(make_spec, gate_topk, gate_topk_fixed)
