"""expert_wgrad_unwritten: a MoE layer's weight gradient, computed as one GEMM per expert over
the tokens routed to it, allocates its [E, K, N] output with torch.empty and skips the
experts that got no token: their gradient, which is zero, is whatever the allocator held.

dW[e] = x[tokens of e]^T @ dy[tokens of e]. The launcher sorts the tokens by expert id,
counts them per expert and runs the grouped GEMM (here one torch.mm per expert, as the
library's cuBLAS loop does) only for the experts with tokens, writing into an output it
allocated with torch.empty. An expert with no token has a zero gradient, and nothing writes
it. The twin allocates the output with torch.zeros.
"""
import torch

from kladder.zoo import build_specs

CASE = dict(
    name="expert_wgrad_unwritten",
    gap="values",
    rung=2,
    mirrors="tgale96/grouped_gemm #36 (NaN from uninitialized output when batch_sizes[i] == 0); "
            "vllm-project/vllm-ascend #9170 (a local expert with 0 tokens skips its GEMM, out = torch.empty_like)",
    needs="cpu",
    story=(
        "The weight gradient of a MoE layer is a grouped GEMM with a variable K: for each expert e, "
        "dW[e] = x_e^T @ dy_e over the tokens routed to e. grouped_gemm's gmm(trans_a=True) allocates "
        "that [E, K, N] output with torch.empty (_allocate_output in grouped_gemm/backend.py), and an "
        "expert whose batch size is 0 gets no GEMM, so its gradient, which should be zero, is "
        "uninitialized memory: garbage, NaN or Inf, run to run (github.com/tgale96/grouped_gemm/issues/36). "
        "vllm-ascend's fused MoE has the same shape in its forward (github.com/vllm-project/vllm-ascend/"
        "issues/9170: `if (currentM > 0)` skips the expert's GEMM and `out = torch.empty_like(...)` is "
        "never zeroed: NaN logits under expert imbalance, intermittent because the allocator sometimes "
        "hands back zeroed pages). Unit tests route many tokens uniformly, so every expert gets some. "
        "kladder's spec says the ids are experts, range=(0, 'E-1'), and passes E as kl.Size('E'). At rung "
        "2's wide shape (T = 3855 tokens over E = 16 experts, where random routing, like a unit test's, "
        "reaches every expert) only the id kinds fail: 'unused' (the last expert gets no token), "
        "'same' (every token to one expert: 15 experts empty), 'ends' (only the first and the last "
        "expert) and 'lengths'; every other value kind and the ids 'distinct', 'sorted' and "
        "'reversed' pass there. The unwritten gradients hold the NaN that kladder's workers fill "
        "torch.empty with. At the base shape (T = 17 over 16 experts) random routing already leaves "
        "experts empty, so every kind but 'distinct' (17 tokens cycled over 16 experts) fails there, "
        "and rung 1 catches it wherever a point has fewer "
        "tokens than experts (T = 1 leaves E - 1 experts empty)."
    ),
)


def _launch(x, dy, expert_ids, num_experts, alloc):
    T, K = x.shape
    N = dy.shape[1]
    if dy.shape[0] != T or expert_ids.shape != (T,):
        raise ValueError(f"x [T, K], dy [T, N], expert_ids [T]: got {tuple(x.shape)}, {tuple(dy.shape)}, "
                         f"{tuple(expert_ids.shape)}")
    order = torch.argsort(expert_ids, stable=True)               # tokens grouped by expert
    counts = torch.bincount(expert_ids, minlength=num_experts).tolist()
    xs, dys = x[order], dy[order]
    out = alloc((num_experts, K, N), dtype=x.dtype, device=x.device)
    start = 0
    for e, m in enumerate(counts):
        if m == 0:
            continue                                             # no token, no GEMM
        torch.mm(xs[start:start + m].t(), dys[start:start + m], out=out[e])
        start += m
    return out


def moe_wgrad(x, dy, expert_ids, num_experts):
    """dW [E, K, N]: for every expert, x^T @ dy over the tokens routed to it (x [T, K], dy [T, N],
    expert_ids [T] int64 in [0, E))."""
    return _launch(x, dy, expert_ids, num_experts, torch.empty)


def moe_wgrad_fixed(x, dy, expert_ids, num_experts):
    return _launch(x, dy, expert_ids, num_experts, torch.zeros)


def moe_wgrad_ref(x, dy, expert_ids, num_experts):
    out = torch.zeros((num_experts, x.shape[1], dy.shape[1]), dtype=x.dtype, device=x.device)
    for e in range(num_experts):
        rows = expert_ids == e
        out[e] = x[rows].t() @ dy[rows]
    return out


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "moe_wgrad",
        kernel=kernel,
        reference=moe_wgrad_ref,
        args={"x": kl.Tensor("T K", dtype="float32"),
              "dy": kl.Tensor("T N", like="x"),
              "expert_ids": kl.Tensor("T", dtype="int64", range=(0, "E-1")),
              "num_experts": kl.Size("E")},
        returns=kl.Tensor("E K N", like="x"),
        # T: tokens in the batch; K, N: the expert's input and output widths; E: the models'
        # expert counts (Mixtral 8, DeepSeek-MoE 16 per rank, OLMoE 64)
        dims={"T": kl.Dim(1, 4096), "K": kl.Dim(1, 1024), "N": kl.Dim(1, 1024),
              "E": kl.Dim(sizes=[8, 16, 64])},
    )


spec, fixed = build_specs(make_spec, moe_wgrad, moe_wgrad_fixed)
