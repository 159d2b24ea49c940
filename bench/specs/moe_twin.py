"""The MoE twin of issue 38: a correct routed expert matmul as a library writes it (a Triton kernel,
with torch.bincount to count each expert's tokens), and an independent float64 reference
(index_add_ per expert, torch.bincount to skip the empty ones). Both run ATen's histogram kernel
(kernelHistogram1D on CUDA): torch's, not the kernel under test, so rung 3's reference independence
must pass. Before issue 38 it failed on the H100 ("the reference runs the kernel under test (GPU
kernels ... kernelHistogram1D ...)").

y[t] = x[t] @ w[ids[t]]  for x: (T, H), ids: (T,) in [0, E), w: (E, H, N)."""
import torch
import triton
import triton.language as tl

import kladder as kl


@triton.jit
def _routed_matmul(x_ptr, ids_ptr, w_ptr, y_ptr, H, N, stride_we, stride_wh, BLOCK_H: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    t = tl.program_id(0)
    nb = tl.program_id(1)
    cols = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    e = tl.load(ids_ptr + t)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for h0 in range(0, H, BLOCK_H):
        hs = h0 + tl.arange(0, BLOCK_H)
        xv = tl.load(x_ptr + t * H + hs, mask=hs < H, other=0.0).to(tl.float32)
        wv = tl.load(w_ptr + e * stride_we + hs[:, None] * stride_wh + cols[None, :],
                     mask=(hs[:, None] < H) & (cols[None, :] < N), other=0.0).to(tl.float32)
        acc += tl.sum(xv[:, None] * wv, axis=0)
    tl.store(y_ptr + t * N + cols, acc.to(y_ptr.dtype.element_ty), mask=cols < N)


def routed_matmul(x, ids, w):
    """The launcher: counts tokens per expert (torch.bincount, as a grouped GEMM sizes its
    groups), then one program per token and block of N columns."""
    E, H, N = w.shape
    counts = torch.bincount(ids, minlength=E)
    if int(counts.sum()) != x.shape[0]:
        raise ValueError("every token needs an expert in [0, E)")
    x, ids, w = x.contiguous(), ids.contiguous(), w.contiguous()
    y = torch.empty((x.shape[0], N), dtype=x.dtype, device=x.device)
    BLOCK_N = 64
    _routed_matmul[(x.shape[0], triton.cdiv(N, BLOCK_N))](x, ids, w, y, H, N, w.stride(0), w.stride(1),
                                                          BLOCK_H=32, BLOCK_N=BLOCK_N)
    return y


def routed_matmul_ref(x, ids, w):
    """Independent: per expert, its tokens' rows times its weight, added into place (float64)."""
    out = torch.zeros((x.shape[0], w.shape[2]), dtype=x.dtype, device=x.device)
    counts = torch.bincount(ids, minlength=w.shape[0])
    for e in torch.nonzero(counts).flatten().tolist():
        rows = torch.nonzero(ids == e).flatten()
        out.index_add_(0, rows, x[rows] @ w[e])
    return out


spec = kl.Spec(
    "routed_matmul", kernel=routed_matmul, reference=routed_matmul_ref,
    args={"x": kl.Tensor("T H", dtype=["bfloat16", "float32"]),
          "ids": kl.Tensor("T", dtype="int64", range=(0, "E-1")),
          "w": kl.Tensor("E H N", like="x")},
    returns=kl.Tensor("T N", like="x"),
    dims={"T": kl.Dim(1, 512), "E": kl.Dim(sizes=[8]), "H": kl.Dim(1, 256, tile=32), "N": kl.Dim(1, 256, tile=64)},
)
