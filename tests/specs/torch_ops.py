"""Correct ops that torch ships, each with the spec its author would write: the kernel is torch's
own op run in the input's dtype, the reference a plain formula run on float64 copies. Every
point of rungs 1-3 must pass, under any seed: a failure here is a false alarm (issue 15's
false-alarm suite, tests/test_false_alarms.py; on the H200: docs/results/2026-12-01-h200-round/h200_trust.sh)."""
import math

import torch
import torch.nn.functional as F

import kladder as kl

FLOATS = ["float32", "bfloat16", "float16"]
ROWS = {"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, widths=[768, 4096])}


def _rows_spec(name, kernel, reference, returns=None, **extra):
    return kl.Spec(name, kernel=kernel, reference=reference, args={"x": kl.Tensor("M N", dtype=FLOATS), **extra},
                   returns=returns or kl.Tensor("M N", like="x"), dims=ROWS, rows="M")


# ---------------------------------------------------------------------------- normalisations
def layer_norm_ref(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


layer_norm = _rows_spec("layer_norm", lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5), layer_norm_ref,
                        w=kl.Tensor("N", like="x"), b=kl.Tensor("N", like="x"))


def rms_norm_ref(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


rms_norm = _rows_spec("rms_norm", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps=1e-6), rms_norm_ref,
                      w=kl.Tensor("N", like="x"))


# ---------------------------------------------------------------------------- row reductions
def softmax_ref(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def log_softmax_ref(x):
    m = x.amax(-1, keepdim=True)
    return x - m - torch.log(torch.exp(x - m).sum(-1, keepdim=True))


def logsumexp_ref(x):
    m = x.amax(-1, keepdim=True)
    return (m + torch.log(torch.exp(x - m).sum(-1, keepdim=True))).squeeze(-1)


softmax = _rows_spec("softmax", lambda x: torch.softmax(x, -1), softmax_ref)
log_softmax = _rows_spec("log_softmax", lambda x: torch.log_softmax(x, -1), log_softmax_ref)
logsumexp = _rows_spec("logsumexp", lambda x: torch.logsumexp(x, -1), logsumexp_ref, returns=kl.Tensor("M", like="x"))
cumsum = _rows_spec("cumsum", lambda x: torch.cumsum(x, -1), lambda x: torch.cumsum(x, -1))
row_sum = _rows_spec("row_sum", lambda x: x.sum(-1), lambda x: x.sum(-1), returns=kl.Tensor("M", like="x"))
argmax = _rows_spec("argmax", lambda x: x.argmax(-1), lambda x: x.argmax(-1), returns=kl.Tensor("M", dtype="int64"))

TOPK = 8


def topk_kernel(x):
    v, i = torch.topk(x, TOPK, dim=-1)
    return {"values": v, "picked": x.gather(-1, i)}      # indices checked through what they pick: ties may swap


def topk_ref(x):
    v = torch.topk(x, TOPK, dim=-1).values
    return {"values": v, "picked": v}


topk = kl.Spec("topk", kernel=topk_kernel, reference=topk_ref, args={"x": kl.Tensor("M N", dtype=FLOATS)},
               returns={"values": kl.Tensor(f"M {TOPK}", like="x"), "picked": kl.Tensor(f"M {TOPK}", like="x")},
               dims={"M": kl.Dim(1, 4096), "N": kl.Dim(TOPK, 8192, widths=[768, 4096])}, rows="M")


# ---------------------------------------------------------------------------- elementwise
def gelu_ref(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


gelu = _rows_spec("gelu", F.gelu, gelu_ref)
silu = _rows_spec("silu", F.silu, lambda x: x / (1 + torch.exp(-x)))


# ---------------------------------------------------------------------------- products
linear = kl.Spec(
    "linear", kernel=F.linear, reference=lambda x, w, b: x @ w.T + b,
    args={"x": kl.Tensor("M K", dtype=FLOATS), "w": kl.Tensor("N K", like="x"), "b": kl.Tensor("N", like="x")},
    returns=kl.Tensor("M N", like="x"),
    dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, widths=[4096]), "K": kl.Dim(1, 16384, widths=[4096, 8192, 16384])},
    rows="M")


def sdpa_ref(q, k, v):
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return softmax_ref(s) @ v


sdpa = kl.Spec(
    "sdpa", kernel=F.scaled_dot_product_attention, reference=sdpa_ref,
    args={"q": kl.Tensor("B H S D", dtype=FLOATS), "k": kl.Tensor("B H L D", like="q"), "v": kl.Tensor("B H L D", like="q")},
    returns=kl.Tensor("B H S D", like="q"),
    dims={"B": kl.Dim(1, 8), "H": kl.Dim(1, 32), "S": kl.Dim(1, 4096), "L": kl.Dim(1, 4096), "D": kl.Dim(1, 256, widths=[64, 128])})


# ---------------------------------------------------------------------------- lookups and losses
def _indices(point, gen):
    """Token ids and class labels, drawn within the table's rows (the builder gets the point)."""
    sizes = point.sizes
    if "V" in sizes:
        return {"idx": torch.randint(0, sizes["V"], (sizes["M"],), generator=gen, device=gen.device)}
    return {"target": torch.randint(0, sizes["C"], (sizes["M"],), generator=gen, device=gen.device)}


embedding = kl.Spec(
    "embedding", kernel=F.embedding, reference=lambda idx, weight: weight[idx],
    args={"idx": kl.Tensor("M", dtype="int64"), "weight": kl.Tensor("V D", dtype=FLOATS)},
    returns=kl.Tensor("M D", like="weight"),
    dims={"M": kl.Dim(1, 8192), "V": kl.Dim(1, 32000), "D": kl.Dim(1, 4096, widths=[768, 4096])}, build=_indices, rows="M")


def cross_entropy_ref(logits, target):
    return logsumexp_ref(logits) - logits.gather(-1, target[:, None]).squeeze(-1)


cross_entropy = kl.Spec(
    "cross_entropy", kernel=lambda logits, target: F.cross_entropy(logits, target, reduction="none"),
    reference=cross_entropy_ref,
    args={"logits": kl.Tensor("M C", dtype=FLOATS), "target": kl.Tensor("M", dtype="int64")},
    returns=kl.Tensor("M", like="logits"),
    dims={"M": kl.Dim(1, 4096), "C": kl.Dim(1, 32000, widths=[1000])}, build=_indices, rows="M")


# ---------------------------------------------------------------------------- RoPE
def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(q, cos, sin):
    """As frameworks compute it: in q's dtype, every op rounded to it."""
    return q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]


def rope_ref(q, cos, sin):
    """The same rotation, written again for the float64 copies (a reference must not share the
    kernel's code: rung 3 checks)."""
    half = q.shape[-1] // 2
    rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
    return q * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)


def _angles(point, gen):
    """cos and sin of position x inverse frequency, as a framework's rotary cache holds them."""
    s, d = point.sizes["S"], point.sizes["D"]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float64)[: (d + 1) // 2] / max(d, 1)))
    ang = torch.arange(s, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat((ang, ang), dim=-1)[:, :d]
    return {"cos": ang.cos(), "sin": ang.sin()}


rope_spec = kl.Spec(
    "rope", kernel=rope, reference=rope_ref,
    args={"q": kl.Tensor("S H D", dtype=["float16", "bfloat16", "float32"]),
          "cos": kl.Tensor("S D", like="q", values=[]), "sin": kl.Tensor("S D", like="q", values=[])},
    returns=kl.Tensor("S H D", like="q"),
    dims={"S": kl.Dim(1, 8192), "H": kl.Dim(1, 32), "D": kl.Dim(2, 256, widths=[64, 128])}, build=_angles, rows="S")

SPECS = {s.name: s for s in (layer_norm, rms_norm, softmax, log_softmax, logsumexp, cumsum, row_sum, argmax, topk,
                             gelu, silu, linear, sdpa, embedding, cross_entropy, rope_spec)}
