"""The honest peer: the error a correct implementation in the kernel's own precision makes at
a point. A fixed rtol ignores what such an implementation cannot avoid: a float32 dot product's
error grows with its length, layer_norm at N = 2 cancels (x - mean), a float16 RoPE's two
terms cancel. Where an element fails the dtype's default, two peers measure that error:

- the kernel-precision peer: the reference run on the inputs as given, without the upcast (a
  float32 kernel against the reference in float32; FlashAttention's tests use this peer: the
  kernel's largest error at most twice that of a PyTorch implementation in the same precision);
- the rounding spread: the float64 reference with every input element perturbed independently
  by a Gaussian fraction (one unit roundoff: half an ulp) of its own dtype's rounding, over
  SPREAD_DRAWS draws; the spread of its outputs is the error that rounding the inputs alone
  makes, element by element, however the output cancels.

An element passes within max(the default, C x the peers' budget). The kernel-precision peer is
taken per row (its largest error in the row, relative to the row's scale): two correct
implementations round differently element by element, and one element of one of them is no
budget for the same element of the other. Pure functions: the harness calls the reference."""
from __future__ import annotations

# FlashAttention's rule: twice a correct peer's error. In RMS, twice one rounding of every
# input is the error of four independent roundings in the chain that makes each output term.
C = 2.0
# The RMS of 16 Gaussian draws is under half the true spread once in 3,000 elements and
# under a third once in a million (chi-square, 16 degrees of freedom); 3 draws of +-1 steps
# (the old sensitivity) were under a tenth of it for 4.6% of a cancelling RoPE's elements.
SPREAD_DRAWS = 16
# A kernel-precision peer more than 8 x the dtype's rtol off its reference row is not rounding
# but an overflow, an underflow to zero, or a formula that cancels in that precision: it widens
# the budget no further (at most C x 8 = 16 x the default), so it cannot hide a real bug.
PEER_CAP = 8.0
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SEED_SALT = 0x2545F491       # the draws' own stream, apart from the inputs'


def lowered(ref_args: list, dtypes: list) -> list:
    """The reference's inputs as the kernel got them: each upcast copy cast back to its own
    dtype (exact: the copies hold values of that dtype)."""
    import torch
    return [a.to(getattr(torch, dt)) if dt and isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a, dt in zip(ref_args, dtypes)]


def perturbed(ref_args: list, dtypes: list, gen) -> list:
    """One draw: every floating input element times (1 + u g), g ~ N(0, 1) drawn for it alone,
    u the unit roundoff of the input's own dtype. A Gaussian, not +-1 steps: the output's move
    is then Gaussian with the full variance however its terms cancel."""
    import torch
    out = []
    for a, dt in zip(ref_args, dtypes):
        if dt in UNIT_ROUNDOFF and isinstance(a, torch.Tensor) and a.is_floating_point():
            g = torch.randn(a.shape, generator=gen, device=a.device, dtype=a.dtype)
            a = a * (1 + UNIT_ROUNDOFF[dt] * g)
        out.append(a)
    return out


def add_draw(acc, draw, ref):
    """Accumulate one draw's squared move (float32; a non-finite draw makes the element's
    spread non-finite, which never widens a budget)."""
    import torch
    move = (draw.detach().to(ref.dtype) - ref).to(torch.float32) if isinstance(draw, torch.Tensor) else None
    if move is None or move.shape != ref.shape:
        return acc
    sq = move * move
    return sq if acc is None else acc.add_(sq)


def spread(acc, draws: int):
    """The RMS move over the draws, element by element."""
    return None if acc is None else (acc / max(draws, 1)).sqrt_()


def row_rel_error(peer_rows, ref_rows, rms_rows):
    """The kernel-precision peer's largest error in each row, relative to the element's scale
    (max(|ref|, the row's RMS)); a non-finite peer element counts as no error (it never widens
    a budget)."""
    import torch
    p = peer_rows.to(torch.float64)
    r = ref_rows.to(torch.float64)
    scale = torch.maximum(r.abs(), rms_rows)
    rel = (p - r).abs() / scale
    ok = p.isfinite() & r.isfinite() & (scale > 0)
    return torch.where(ok, rel, torch.zeros_like(rel)).amax(dim=-1)
