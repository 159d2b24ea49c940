"""Kernels whose float32 sums run in a different order on every call, as atomics in whatever order
the programs finish do on a GPU (tests/test_grads.py): correct, but not bit-for-bit deterministic.
And kernels that are wrong in ways only the backward shows."""
import torch
import torch.nn.functional as F

import kladder as kl


def ln_ref(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def _row_sum(t, acc, order=None):
    """The rows of `t` added one at a time in `order` (a fresh random order when None), into `acc`."""
    order = torch.randperm(t.shape[0]) if order is None else order
    total = torch.zeros(t.shape[1:], dtype=acc, device=t.device)
    for m in order.tolist():
        total += t[m].to(acc)
    return total


def row_sum(x):
    return _row_sum(x, torch.float32)


def _rowsum(name, deterministic):
    return kl.Spec(name, kernel=row_sum, reference=lambda x: x.sum(0),
                   args={"x": kl.Tensor("M N", dtype="float32")}, dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 256)},
                   returns=kl.Tensor("N", like="x"), repetition=kl.Repetition(deterministic=deterministic))


rowsum_any = _rowsum("rowsum_any", False)
rowsum_det = _rowsum("rowsum_det", True)


def layer_norm_atomic(acc=torch.float32, seed=None):
    """F.layer_norm whose backward adds each row's share of dw and db in a random order (`seed`:
    one fixed order), accumulating in `acc` (float16: the zoo's layernorm_dw_half_accum bug)."""
    class LayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w, b)
            return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)

        @staticmethod
        def backward(ctx, dy):
            x, w, b = ctx.saved_tensors
            with torch.enable_grad():
                leaves = [t.detach().requires_grad_() for t in (x, w, b)]
                gx, _, _ = torch.autograd.grad(F.layer_norm(leaves[0], x.shape[-1:], leaves[1], leaves[2], 1e-5), leaves, dy)
            xc = x - x.mean(-1, keepdim=True)
            xhat = xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5)
            order = None if seed is None else torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(seed))
            return gx, _row_sum(dy * xhat, acc, order).to(w.dtype), _row_sum(dy, acc, order).to(b.dtype)
    return LayerNorm.apply


def ln_spec(name, kernel, deterministic=False, n_min=3):
    return kl.Spec(name, kernel=kernel, reference=ln_ref,
                   args={"x": kl.Tensor("M N", dtype="float32"), "w": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x")},
                   dims={"M": kl.Dim(1, 4096), "N": kl.Dim(n_min, 4096)}, returns=kl.Tensor("M N", like="x"),
                   grads=["x", "w", "b"], repetition=kl.Repetition(deterministic=deterministic))


ln_atomic = ln_spec("ln_atomic", layer_norm_atomic())
ln_atomic_det = ln_spec("ln_atomic_det", layer_norm_atomic(), deterministic=True)


def _raises_in_backward():
    class Raises(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            return F.layer_norm(x, x.shape[-1:], w, b, 1e-5)

        @staticmethod
        def backward(ctx, dy):
            raise RuntimeError("the backward ran")
    return Raises.apply


raises_in_backward = ln_spec("raises_in_backward", _raises_in_backward())
