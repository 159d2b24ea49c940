"""ce_grad_scale_skipped: a fused cross-entropy's backward multiplies the gradient it saved in
the forward by grad_output through the wrong pointer, and skips that multiply when grad_output
is 1.0, which is all its tests ever hand it.

The forward computes the mean loss and, in the same pass over the logits, its gradient
(softmax - onehot) / M, saved for backward. The backward scales the saved gradient by
grad_output, row by row; the scaling kernel reads the scale through the row's own pointer
instead of grad_output's, so each row is scaled by its own first element (about 1 / (M V)).
"""
import torch
import triton
import triton.language as tl

from kladder.zoo import build_specs

CASE = dict(
    name="ce_grad_scale_skipped",
    gap="values",
    rung=2,
    mirrors="TransformerEngine #2139 (Megatron-LM #1750: grad_norm 0 with the TE cross entropy)",
    needs="cpu",
    story=(
        "A fused cross entropy computes the mean loss and its gradient in one pass of the forward "
        "and saves the gradient; the backward only scales it by grad_output. An optimisation skips "
        "that scaling when grad_output is 1.0, and the scaling kernel itself loads the scale through "
        "the wrong pointer (the row of the saved gradient instead of grad_output), so any other "
        "grad_output multiplies each row by its own first element, about 1 / (M V): the gradients "
        "vanish and training diverges, while the loss is right. Every test called loss.backward() "
        "on the loss itself, grad_output 1.0, and took the skip (TE's reviewer: 'this error slipped "
        "through the tests because we have an optimization to skip the backward kernel when the "
        "grad output is 1'); a loss scaler, gradient accumulation's 1/steps or DDP's 1/world hands "
        "it something else. kladder hands a scalar loss 1.0 at every point but rung 2's, whose "
        "'scaled' (2^16) and 'normal' upstream gradients catch it on every logit."
    ),
)


@triton.jit
def _ce_fwd_kernel(x_ptr, x_stride, y_ptr, loss_ptr, g_ptr, g_stride, n_cols, inv_rows, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * x_stride
    g_ptr += row * g_stride
    target = tl.load(y_ptr + row)
    m = -float("inf")
    d = 0.0
    for off in range(0, n_cols, BLOCK):                      # online max and sum of exp: one pass
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, 0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), 0)
        m = m_new
    lse = m + tl.log(d)
    tl.store(loss_ptr + row, lse - tl.load(x_ptr + target).to(tl.float32))
    for off in range(0, n_cols, BLOCK):                      # the gradient, while the row is hot
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        g = tl.exp(x - lse)
        g = tl.where(cols == target, g - 1.0, g) * inv_rows
        tl.store(g_ptr + cols, g, mask=cols < n_cols)


@triton.jit
def _element_mul_kernel(g_ptr, g_stride, grad_output_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g_ptr += row * g_stride
    # The bug: the scale is loaded through the row's pointer, not grad_output_ptr.
    scale = tl.load(g_ptr)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        g = tl.load(g_ptr + cols, mask=cols < n_cols)
        tl.store(g_ptr + cols, g * scale, mask=cols < n_cols)


@triton.jit
def _element_mul_kernel_fixed(g_ptr, g_stride, grad_output_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    g_ptr += row * g_stride
    # The fix: the scale is grad_output's one element.
    scale = tl.load(grad_output_ptr)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        g = tl.load(g_ptr + cols, mask=cols < n_cols)
        tl.store(g_ptr + cols, g * scale, mask=cols < n_cols)


BLOCK = 128


def _make_function(mul_kernel):
    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, target):
            # the kernel walks rows with unit inner stride and reads target[row]: other layouts copied first
            logits = logits if logits.stride(-1) == 1 else logits.contiguous()
            target = target.contiguous()
            M, V = logits.shape
            loss = torch.empty(M, dtype=torch.float32, device=logits.device)
            grad = torch.empty((M, V), dtype=torch.float32, device=logits.device)
            _ce_fwd_kernel[(M,)](logits, logits.stride(0), target, loss, grad, grad.stride(0), V, 1.0 / M, BLOCK=BLOCK)
            ctx.save_for_backward(grad)
            ctx.dtype = logits.dtype
            return (loss.sum() / M).to(logits.dtype)

        @staticmethod
        def backward(ctx, grad_output):
            (grad,) = ctx.saved_tensors
            # a loss is almost always handed 1.0: the saved gradient is then the answer as it is
            if not torch.equal(grad_output, torch.ones_like(grad_output)):
                scale = grad_output.reshape(1).to(torch.float32).contiguous()
                grad = grad.clone()
                M, V = grad.shape
                mul_kernel[(M,)](grad, grad.stride(0), scale, V, BLOCK=BLOCK)
            return grad.to(ctx.dtype), None

    return CrossEntropy


_CE = _make_function(_element_mul_kernel)
_CE_FIXED = _make_function(_element_mul_kernel_fixed)


def cross_entropy(logits, target):
    """Mean cross entropy of logits [M, V] (fp32/fp16) against target [M] (int64), fused with its gradient."""
    return _CE.apply(logits, target)


def cross_entropy_fixed(logits, target):
    return _CE_FIXED.apply(logits, target)


def cross_entropy_ref(logits, target):
    logp = logits - torch.logsumexp(logits, -1, keepdim=True)
    return -logp.gather(-1, target[:, None]).mean()


def targets(point, gen):
    """Class indices in [0, V): a range= is inclusive and V itself is no class."""
    sizes = point.sizes
    return {"target": torch.randint(0, sizes["V"], (sizes["M"],), generator=gen, device=gen.device)}


def make_spec(kernel):
    import kladder as kl
    return kl.Spec(
        "cross_entropy",
        kernel=kernel,
        reference=cross_entropy_ref,
        args={"logits": kl.Tensor("M V", dtype=["float32", "float16"]),
              "target": kl.Tensor("M", dtype="int64")},
        returns=kl.Tensor("", like="logits"),
        dims={"M": kl.Dim(1, 1024), "V": kl.Dim(2, 32768, tile=BLOCK, widths=[32000])},
        build=targets,
        grads=["logits"],
    )


spec, fixed = build_specs(make_spec, cross_entropy, cross_entropy_fixed)
