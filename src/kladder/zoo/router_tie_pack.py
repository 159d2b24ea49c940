"""router_tie_pack: top-k routing packs the expert id into the low mantissa bits of the fp32
score and sorts once; two scores a few ulps apart become one packed value and the expert id
decides, so the router picks the wrong expert when scores are nearly tied.

Softmax top-k routing (Mixtral, Qwen-MoE): for every token, the TOPK experts with the largest
router logits (softmax is monotone, so the ranking is the logits'), in descending order, and
their weights, the softmax over the chosen logits. One program holds the whole rows of E
logits of 16 tokens and picks the TOPK experts one by one, each by one max reduction. To get
the id out of that reduction without an argmax pass, the buggy kernel maps each score's bits
to an int32 with the floats' order and overwrites its lowest ceil(log2(E)) bits (the low
mantissa bits) with the expert id, then reads each winner's id back from the low bits.
Scores that differ only in those bits (within 2^ID_BITS ulps) then rank by id, not by
score. The twin packs into a 64-bit key.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="router_tie_pack",
    gap="values",
    rung=2,
    mirrors="FlyDSL #1213 (GLM-5 MonoKernel: expert 92 where the replay needed 226)",
    needs="cpu",
    story=(
        "The router picks each token's top-8 experts by repeated max over int32 keys that "
        "hold the fp32 logit in the floats' order with the expert id in its low "
        "ceil(log2(E)) bits (the low mantissa bits; 8 at E = 256), and reads each winner's "
        "id back from those bits. Logits within 2^8 ulps of each other (about 1.5e-5 "
        "relative) become one key and rank by expert id instead of by score: the token goes "
        "to the wrong expert, or to the right experts in the wrong order. Random normal "
        "logits are rarely that close: 1 token in 1,020 at E = 256, 1 in 3,055 at E = 128, "
        "1 in 12,500 at E = 64 (measured over 400,000 tokens each), so the unit test passed; "
        "real router logits cluster, and a replayed GLM routing needed expert 226, not 92. "
        "kladder's rung-2 'ties' values (every row b, b+1ulp, b+2ulp, b+3ulp) catch it on "
        "nearly every token: the kernel returns the lowest ids of a tied group where the "
        "reference (a stable descending sort: equal logits rank by lower id, the twin's "
        "tie-break too) returns the logits 3 ulps up; 'tiny' (subnormals next to +-0) "
        "catches it too. Rung 1 is a lottery: its CPU points hold few tokens at large E (at "
        "most 33 at E = 255 or 256), about 0.2 wrong tokens expected over all of them (an 18% "
        "chance of a catch; with kladder's seeds it passes); on a GPU its points run 4,096 "
        "tokens at every E edge, about 16 wrong tokens expected, so there rung 1 catches it "
        "by chance."
    ),
)

TOPK = 8      # DeepSeek-V3, Qwen3-MoE, GLM: 8 routed experts per token
BLOCK_T = 16  # tokens per program


@triton.jit
def _ordered_bits(x):
    """The fp32 scores' bits as int32 keys in the floats' order: negatives get their magnitude
    bits flipped; -0 is made +0 first (-0 == +0 is a tie, not an order)."""
    bits = tl.where(x == 0.0, 0.0, x).to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def _route_kernel(x_ptr, ids_ptr, w_ptr, T, E, stride_x, stride_xe, stride_i, stride_w,
                  BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, ID_BITS: tl.constexpr, TOPK: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    e = tl.arange(0, BLOCK_E)
    x_rows = x_ptr + rt[:, None] * stride_x
    x = tl.load(x_rows + e[None, :] * stride_xe, mask=(rt[:, None] < T) & (e[None, :] < E), other=float("-inf"))
    # One 32-bit key per expert: the expert id rides in the score's low mantissa bits, so a
    # single max reduction per pick yields the best score and its id (no argmax pass, no
    # key-value pairs). The id goes in as BLOCK_E-1-e: equal scores rank by lower id, as a
    # stable descending sort. The bug: scores within 2^ID_BITS ulps become one key and rank
    # by id, not by score.
    low = (1 << ID_BITS) - 1
    key = (_ordered_bits(x) & ~low) | (BLOCK_E - 1 - e)[None, :]
    k = tl.arange(0, TOPK)
    ids = tl.zeros((BLOCK_T, TOPK), tl.int32)
    for i in tl.static_range(TOPK):
        best = tl.max(key, axis=1)
        ids = tl.where(k[None, :] == i, (BLOCK_E - 1 - (best & low))[:, None], ids)
        key = tl.where(key == best[:, None], -2147483648, key)     # keys are unique: one lane
    _store_topk(x_rows, stride_xe, ids, ids_ptr, w_ptr, rt, T, stride_i, stride_w, TOPK)


@triton.jit
def _route_kernel_fixed(x_ptr, ids_ptr, w_ptr, T, E, stride_x, stride_xe, stride_i, stride_w,
                        BLOCK_T: tl.constexpr, BLOCK_E: tl.constexpr, ID_BITS: tl.constexpr, TOPK: tl.constexpr):
    rt = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    e = tl.arange(0, BLOCK_E)
    x_rows = x_ptr + rt[:, None] * stride_x
    x = tl.load(x_rows + e[None, :] * stride_xe, mask=(rt[:, None] < T) & (e[None, :] < E), other=float("-inf"))
    # The fix: a 64-bit key, the whole 32-bit score above the id (same tie-break).
    key = (_ordered_bits(x).to(tl.int64) << 32) | (BLOCK_E - 1 - e).to(tl.int64)[None, :]
    k = tl.arange(0, TOPK)
    ids = tl.zeros((BLOCK_T, TOPK), tl.int32)
    for i in tl.static_range(TOPK):
        best = tl.max(key, axis=1)
        ids = tl.where(k[None, :] == i, (BLOCK_E - 1 - (best & 0xFFFFFFFF)).to(tl.int32)[:, None], ids)
        key = tl.where(key == best[:, None], -9223372036854775808, key)
    _store_topk(x_rows, stride_xe, ids, ids_ptr, w_ptr, rt, T, stride_i, stride_w, TOPK)


@triton.jit
def _store_topk(x_rows, stride_xe, ids, ids_ptr, w_ptr, rt, T, stride_i, stride_w, TOPK: tl.constexpr):
    """The picked ids, and the softmax over their logits (re-read by id)."""
    k = tl.arange(0, TOPK)
    top = (rt[:, None] < T) & (k[None, :] < TOPK)
    logit = tl.load(x_rows + ids * stride_xe, mask=top, other=0.0)
    p = tl.exp(logit - tl.max(logit, axis=1)[:, None])
    tl.store(ids_ptr + rt[:, None] * stride_i + k[None, :], ids, mask=top)
    tl.store(w_ptr + rt[:, None] * stride_w + k[None, :], p / tl.sum(p, axis=1)[:, None], mask=top)


def _launch(kernel, logits, top_k):
    T, E = logits.shape
    if top_k > E:
        raise ValueError(f"top-{top_k} routing needs at least {top_k} experts, got E = {E}")
    if top_k & (top_k - 1):
        raise ValueError(f"top_k must be a power of 2 (a block of the kernel), got {top_k}")
    if logits.dtype != torch.float32:
        raise TypeError(f"router logits must be float32, got {logits.dtype}")
    ids = torch.empty((T, top_k), dtype=torch.int32, device=logits.device)
    w = torch.empty((T, top_k), dtype=torch.float32, device=logits.device)
    block_e = triton.next_power_of_2(E)
    id_bits = max(block_e.bit_length() - 1, 1)       # enough low bits for any lane's id
    kernel[(triton.cdiv(T, BLOCK_T),)](logits, ids, w, T, E, *logits.stride(), ids.stride(0), w.stride(0),
                                       BLOCK_T=BLOCK_T, BLOCK_E=block_e, ID_BITS=id_bits, TOPK=top_k)
    return ids, w


def route_topk(logits, top_k=TOPK):
    """(ids [T, top_k] int32, weights [T, top_k] fp32): each token's top_k experts by router
    logit, descending, and the softmax over their logits (logits: [T, E] fp32, any strides)."""
    return _launch(_route_kernel, logits, top_k)


def route_topk_fixed(logits, top_k=TOPK):
    return _launch(_route_kernel_fixed, logits, top_k)


def route_topk_ref(logits, top_k):
    # stable: equal logits (an exact tie, -0 and +0 among them) rank by lower expert id
    ids = torch.sort(logits, dim=-1, descending=True, stable=True).indices[:, :top_k]
    w = torch.softmax(logits.gather(-1, ids), dim=-1)
    return ids.to(torch.int32), w.to(torch.float32)


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "route_topk",
        kernel=kernel,
        reference=route_topk_ref,
        args={"logits": kl.Tensor("T E", dtype="float32"), "top_k": TOPK},
        returns={"ids": kl.Tensor(f"T {TOPK}", dtype="int32"),
                 "weights": kl.Tensor(f"T {TOPK}", dtype="float32")},
        # E: routed experts (Mixtral 8, Qwen1.5-MoE 60, OLMoE 64, Qwen3 128, DeepSeek-V3 and
        # GLM 256); top-k cuts it at 8
        dims={"T": kl.Dim(1, 4096, tile=BLOCK_T),
              "E": kl.Dim(TOPK, 256, widths=[60, 64, 128, 256], chunks=[TOPK])},
    )


spec, fixed = build_specs(make_spec, route_topk, route_topk_fixed)
