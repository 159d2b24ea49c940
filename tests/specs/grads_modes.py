"""Backward bugs that only one mode shows (tests/test_grads_modes.py), each with its fixed twin:
- rung 5's stream: a layer norm whose backward sums dw and db into a ring of float32 workspaces
  (so that a backward need not wait for the one before to finish reading its slot) and zeroes a
  slot only when it allocates it: calls 1-4 are right, call 5 adds its sums to call 1's. Every
  single-call test passes; the stream's fifth call does not.
- rung 4's compiled: torch's layer norm registered as a custom op (torch.library.custom_op) with
  its backward a second custom op, whose fake (meta) kernel says dx is contiguous while the real
  kernel writes it column-major. Eager autograd takes the real tensor as it comes (the values are
  right); under torch.compile the compiled backward trusts the fake's strides (Inductor asserts
  them: "This error most often comes from a incorrect fake (aka meta) kernel for a custom op").
The correct op compiled with its backward: grads_torch.layernorm_op."""
import torch
import torch.nn.functional as F

import kladder as kl

EPS = 1e-5
SLOTS = 4


def ln_ref(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


def _spec(name, kernel, **extra):
    return kl.Spec(name, kernel=kernel, reference=ln_ref,
                   args={"x": kl.Tensor("M N", dtype="float32"), "w": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x")},
                   dims={"M": kl.Dim(1, 512), "N": kl.Dim(3, 4096, tile=64)}, returns=kl.Tensor("M N", like="x"),
                   grads=["x", "w", "b"], **extra)


def _dx(dy, x, w):
    mean = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt(((x - mean) ** 2).mean(-1, keepdim=True) + EPS)
    xhat = (x - mean) * rstd
    wdy = dy * w
    return rstd * (wdy - wdy.mean(-1, keepdim=True) - xhat * (wdy * xhat).mean(-1, keepdim=True)), xhat


# ---------------------------------------------------------------------------- the stream
def ring_layer_norm(zero_reused: bool):
    """A layer norm whose backward reduces dw and db into slot k % SLOTS of a ring of float32
    workspaces (one ring per width, dtype and device); a new slot is zeroed, a reused one only
    when `zero_reused` (the fix)."""
    rings: dict = {}

    class RingLayerNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b):
            ctx.save_for_backward(x, w)
            return F.layer_norm(x, x.shape[-1:], w, b, EPS)

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            ring = rings.setdefault((x.shape[-1], x.dtype, x.device), {"calls": 0, "slots": []})
            k = ring["calls"] % SLOTS
            ring["calls"] += 1
            if k == len(ring["slots"]):
                ring["slots"].append(torch.zeros(2, x.shape[-1], dtype=torch.float32, device=x.device))
            elif zero_reused:
                ring["slots"][k].zero_()
            ws = ring["slots"][k]
            dx, xhat = _dx(dy, x, w)
            ws[0] += (dy * xhat).float().sum(0)
            ws[1] += dy.float().sum(0)
            return dx, ws[0].to(w.dtype).clone(), ws[1].to(w.dtype).clone()
    return RingLayerNorm.apply


ring_workspace = _spec("ln_ring_workspace", ring_layer_norm(False))
ring_workspace_fixed = _spec("ln_ring_workspace_fixed", ring_layer_norm(True))


# ---------------------------------------------------------------------------- compiled
def _ln_shape(x):
    return [x.shape[-1]]


def _save_inputs(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _bwd_op(name: str, bug: str = ""):
    """A layer norm custom op whose backward is a custom op `name`_bwd. `bug`: "strides", its real
    kernel writes dx column-major (its fake says contiguous); "last7", dw's last 7 columns off by
    1.0 (wrong eager too: the compiled mode's own judgement of a gradient's values); "": right."""
    @torch.library.custom_op(f"kladder_tests::{name}_bwd", mutates_args=())
    def bwd(dy: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gx, xhat = _dx(dy, x, w)
        dx = torch.empty_strided(gx.shape, (1, gx.shape[0]), dtype=gx.dtype, device=gx.device) if bug == "strides" \
            else torch.empty_like(gx)
        dx.copy_(gx)
        dw = (dy * xhat).sum(0)
        if bug == "last7":
            dw[-7:] += 1.0
        return dx, dw, dy.sum(0)

    @bwd.register_fake
    def _(dy, x, w):
        return torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)

    @torch.library.custom_op(f"kladder_tests::{name}", mutates_args=())
    def fwd(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, _ln_shape(x), w, b, EPS)

    @fwd.register_fake
    def _(x, w, b):
        return torch.empty_like(x)

    def backward(ctx, dy):
        x, w, _ = ctx.saved_tensors
        return bwd(dy, x, w)
    fwd.register_autograd(backward, setup_context=_save_inputs)
    return fwd


fake_strides = _spec("ln_bwd_fake_strides", _bwd_op("ln_bwd_fake_strides", "strides"))
fake_strides_fixed = _spec("ln_bwd_fake_strides_fixed", _bwd_op("ln_bwd_fake_strides_fixed"))
dw_last7 = _spec("ln_bwd_dw_last7", _bwd_op("ln_bwd_dw_last7", "last7"))
