"""layernorm_dw_half_accum: a layer norm's backward sums the gradients of its weight and bias
over the rows in the input's own dtype, so in float16 every row's addition rounds to 11 bits.

Forward and the gradient of x: one program per 16 rows, float32 inside. The gradients of w and
b: one program per row, adding its dy * xhat (and dy) into dw and db with an atomic add, in the
output's dtype. In float32 that is right; in float16 each of the M additions rounds the running
sum to 11 bits, and the sum drifts.
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="layernorm_dw_half_accum",
    gap="values",
    rung=2,
    mirrors="karpathy/llm.c #428 (dweight mismatch), fixed by #476: accumulate in float, not in bfloat16",
    needs="cpu",
    story=(
        "The backward's weight and bias gradients are sums over every row of the batch: dw = "
        "sum_m dy * xhat, db = sum_m dy. The kernel accumulated them in the input's dtype, the "
        "buffer it returns (llm.c: atomicAdd on bfloat16; here each row's share is added with an "
        "atomic add in float16), so in half precision each addition "
        "rounds the running sum to 11 bits: the error grows with the number of rows, and the unit test, a few rows of the smallest model, stayed "
        "within its tolerance. The gradient of x, row-local and computed in float32, is right, "
        "and so is the forward. kladder judges the gradient of every input the spec lists at every "
        "point. Rung 1's CPU points in float16 hold at most 2 rows (its M = 1024 point is float32 "
        "at N = 1), too few additions to show; rung 2's points, 17 rows of 768 in float16 at every "
        "value kind, put db (and dw) ulps past what the honest peer (the reference's own backward in "
        "float16, which sums in float32) allows, and on a GPU rung 1's 4,096-row points do. The "
        "twin accumulates in float32 and rounds once."
    ),
)


@triton.jit
def _ln_fwd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, stride, M, N, eps,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, 1) / N
    xc = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, 1) / N + eps)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(mean_ptr + rows, mean, mask=rows < M)
    tl.store(rstd_ptr + rows, rstd, mask=rows < M)


@triton.jit
def _ln_bwd_dx_kernel(dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr, dx_ptr, stride, M, N,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + rows, mask=rows < M, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
    xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
    wdy = w[None, :] * dy
    c1 = tl.sum(xhat * wdy, 1) / N
    c2 = tl.sum(wdy, 1) / N
    dx = (wdy - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
    tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _ln_bwd_dwdb_kernel(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, stride, M, N,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + rows, mask=rows < M, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
    xhat = (x - mean[:, None]) * rstd[:, None]
    # this block of rows' share, summed in float32, then added into dw and db
    dw = tl.sum(dy * xhat, 0)
    db = tl.sum(dy, 0)
    # The bug: the shares are added into the output itself, in its dtype (float16 for a
    # float16 model): every block's addition rounds the running sum to 11 bits.
    tl.atomic_add(dw_ptr + cols, dw.to(dw_ptr.dtype.element_ty), mask=cols < N)
    tl.atomic_add(db_ptr + cols, db.to(db_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def _ln_bwd_dwdb_kernel_fixed(dy_ptr, x_ptr, mean_ptr, rstd_ptr, dw_ptr, db_ptr, stride, M, N,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.load(mean_ptr + rows, mask=rows < M, other=0.0)
    rstd = tl.load(rstd_ptr + rows, mask=rows < M, other=0.0)
    xhat = (x - mean[:, None]) * rstd[:, None]
    dw = tl.sum(dy * xhat, 0)
    db = tl.sum(dy, 0)
    # The fix: the shares are added into float32 buffers; the launcher rounds them once.
    tl.atomic_add(dw_ptr + cols, dw, mask=cols < N)
    tl.atomic_add(db_ptr + cols, db, mask=cols < N)


EPS = 1e-5
ROWS = 16           # rows a program of the forward and of dx holds
SHARE_ROWS = 1      # rows a program of dw/db sums before adding its share (llm.c: one row a thread)


def _make_function(dwdb_kernel, acc_dtype):
    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            x = x.contiguous()
            M, N = x.shape
            y = torch.empty_like(x)
            mean = torch.empty(M, dtype=torch.float32, device=x.device)
            rstd = torch.empty(M, dtype=torch.float32, device=x.device)
            block = triton.next_power_of_2(N)            # one program holds ROWS whole rows
            _ln_fwd_kernel[(triton.cdiv(M, ROWS),)](x, w.contiguous(), b.contiguous(), y, mean, rstd, x.stride(0), M, N, EPS,
                                                    BLOCK_M=ROWS, BLOCK_N=block)
            ctx.save_for_backward(x, w, mean, rstd)
            return y

        @staticmethod
        def backward(ctx, dy):
            x, w, mean, rstd = ctx.saved_tensors
            dy = dy.contiguous()                         # an expand-ed or transposed grad_output: made plain first
            M, N = x.shape
            dx = torch.empty_like(x)
            block = triton.next_power_of_2(N)
            _ln_bwd_dx_kernel[(triton.cdiv(M, ROWS),)](dy, x, w.contiguous(), mean, rstd, dx, x.stride(0), M, N,
                                                       BLOCK_M=ROWS, BLOCK_N=block)
            dw = torch.zeros(N, dtype=acc_dtype or w.dtype, device=w.device)
            db = torch.zeros(N, dtype=acc_dtype or w.dtype, device=w.device)
            dwdb_kernel[(triton.cdiv(M, SHARE_ROWS),)](dy, x, mean, rstd, dw, db, x.stride(0), M, N,
                                                       BLOCK_M=SHARE_ROWS, BLOCK_N=block)
            return dx, dw.to(w.dtype), db.to(w.dtype)

    return LayerNorm


_LN = _make_function(_ln_bwd_dwdb_kernel, None)
_LN_FIXED = _make_function(_ln_bwd_dwdb_kernel_fixed, torch.float32)


def layer_norm(x, w, b):
    """y = (x - mean) / sqrt(var + eps) * w + b over the last dim (x: [M, N] fp32/fp16; w, b: [N], x's dtype)."""
    return _LN.apply(x, w, b)


def layer_norm_fixed(x, w, b):
    return _LN_FIXED.apply(x, w, b)


def layer_norm_ref(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "layer_norm",
        kernel=kernel,
        reference=layer_norm_ref,
        args={"x": kl.Tensor("M N", dtype=["float32", "float16"]),
              "w": kl.Tensor("N", like="x"),
              "b": kl.Tensor("N", like="x")},
        returns=kl.Tensor("M N", like="x"),
        dims={"M": kl.Dim(1, 1024), "N": kl.Dim(1, 4096, widths=[768])},
        grads=["x", "w", "b"],
    )


spec, fixed = build_specs(make_spec, layer_norm, layer_norm_fixed)
