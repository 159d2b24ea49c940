"""The honest peer: the error a correct implementation in the kernel's own precision makes at
a point. A fixed rtol ignores what such an implementation cannot avoid: a float32 dot product's
error grows with its length, layer_norm at N = 2 cancels (x - mean), a float16 RoPE's two
terms cancel, a peaked attention's logits amplify their own rounding. Where an element fails
the dtype's default, two measurements set its budget:

- the rounding spread s: the float64 reference with every input element perturbed
  independently by a Gaussian fraction (one unit roundoff, half an ulp) of its own dtype's
  rounding, over SPREAD_DRAWS draws; its RMS move, element by element. s / u (u: the inputs'
  largest unit roundoff) is the size of the terms that make the element, however they cancel
  (a dot product that cancels to 0.2 from terms of size 85 has s / u ~ 85): the dtype's default
  applies to that scale too, atol + rtol x s / u, as it applies to |ref| and the row's RMS;
- the kernel-precision peer: the reference run on the inputs as given, without the upcast (a
  float32 kernel against the reference in float32). Its largest error over the output in units
  of s' (s with the output's own rounding added), K, is how many roundings' worth a correct
  implementation accumulates (a long dot product, a chain of ops): the budget grows with the
  accumulation length the peer shows, C x K x s', up to the larger of MAX_WIDENING x the rest
  and HALF_DIGITS (the output's sqrt(u) at the element's scale).

FlashAttention's tests use the peer's rule per tensor (the kernel's largest error at most
twice that of a PyTorch implementation in the same precision); here it is applied element by
element, each in units of its own rounding. Pure functions: the harness calls the reference."""
from __future__ import annotations

from ..core.dispatchmodes import dynamo_disable_when_imported

# FlashAttention's rule: twice a correct peer's largest error.
C = 2.0
# The RMS of 16 Gaussian draws is under half the true spread once in 3,000 elements and under a
# third once in a million (chi-square, 16 degrees of freedom); 3 draws of +-1 steps (the old
# sensitivity) were under a tenth of it for 4.6% of a cancelling RoPE's elements, and at N = 2
# all three moved both inputs of a layer_norm row together (a common scale it is blind to) for
# one row in eight.
SPREAD_DRAWS = 16
# How far a kernel-precision peer may widen a budget: up to the larger of MAX_WIDENING x what
# the default and the spread allow, and an error of sqrt(u) of the element's scale (u: the
# output's unit roundoff; half its digits lost). A peer past that is not rounding but an
# overflow, an underflow to zero or a formula that cancels in that precision (relative errors
# of order 1: a dropped K tail, a wrong tile's bias, probabilities underflowed are 10-100 x the
# default and more), so a broken peer cannot hide a real bug. Rounding reaches sqrt(u) only after
# ~1/u accumulated roundings: measured on the H200, a float32 GEMM at K = 16383 (cuBLAS) is off by
# 285 x s (1.3e-5 of the element, 8 x would allow 1e-5) and torch's float16 cumsum, which
# accumulates in float16 (pytorch/pytorch#180150), by 34 x s at N = 4096 (1.4% of the element;
# float16's sqrt(u) is 2.2%).
MAX_WIDENING = 8.0
HALF_DIGITS = 0.5
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SEED_SALT = 0x2545F491       # the draws' own stream, apart from the inputs'
# The draws stop early where the verdict is already decided: after these many draws, if every
# failing element passes with the spread so far taken as sqrt(sum of squared moves / SPREAD_DRAWS)
# (the remaining draws counted as moving nothing: a lower bound of the 16 draws' spread) and the
# peer's budget at its least (C x the peer's own error at the element: K x s' is at least that
# whatever s is), the 16 draws cannot change the verdict: every budget only grows with s, the
# verdict is the largest budget's (checks/values.decided). A failure never stops the draws; the one
# exception is a later draw that would have made an element's spread non-finite (the reference
# overflowing under a 2^-24 move of its inputs), which then counts 0: the early stop keeps the
# finite spread the earlier draws measured.
CHECK_DRAWS = (4, 8, 12)
# A near miss is settled with more evidence before it is blamed: an output whose every remaining
# failure is within SETTLE_MARGIN x its budget is judged again with K the largest of more correct
# runs in the kernel's precision (another backend's summation order, and PEER_RUNS runs on a fresh
# rounding of the inputs, RE_ROUND units of roundoff apart), each against the float64 reference of
# its own inputs. The budget stays under peer_cap (8 x the rest, sqrt(u) of the element), and a
# failure past SETTLE_MARGIN x its budget (the zoo's value bugs are 10-100 x past it) never gets
# here: more evidence can excuse a rounding that is twice as unlucky as one peer's, not a bug.
SETTLE_MARGIN = 2.0
PEER_RUNS = 3
RE_ROUND = 8.0
RUNS_SALT = 0x5BD1E995


def lowered(ref_args: list, dtypes: list) -> list:
    """The reference's inputs as the kernel got them: each upcast copy cast back to its own
    dtype (exact: the copies hold values of that dtype)."""
    import torch
    return [a.to(getattr(torch, dt)) if dt and isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a, dt in zip(ref_args, dtypes, strict=False)]


def perturbed(ref_args: list, dtypes: list, gen) -> list:
    """One draw: every floating input element times (1 + u g), g ~ N(0, 1) drawn for it alone,
    u the unit roundoff of the input's own dtype. A Gaussian, not +-1 steps: the output's move
    is then Gaussian with the full variance however its terms cancel."""
    return _moved(ref_args, dtypes, gen, 1.0)


def rerounded(ref_args: list, dtypes: list, gen) -> list:
    """A fresh rounding of the inputs: every floating element moved by RE_ROUND x u x g and
    rounded to its own dtype again (held in the reference's dtype, exactly). The reference in the
    kernel's precision on these, against the float64 reference on them, is one more correct
    run: its rounding errors a fresh sample of a correct implementation's."""
    import torch
    moved = _moved(ref_args, dtypes, gen, RE_ROUND)
    return [m.to(getattr(torch, dt)).to(m.dtype) if dt in UNIT_ROUNDOFF and isinstance(m, torch.Tensor)
            and m.is_floating_point() else m for m, dt in zip(moved, dtypes, strict=False)]


def _moved(ref_args: list, dtypes: list, gen, units: float) -> list:
    import torch
    out = []
    for a, dt in zip(ref_args, dtypes, strict=False):
        if dt in UNIT_ROUNDOFF and isinstance(a, torch.Tensor) and a.is_floating_point():
            # float32 Gaussians (half a float64 draw's bytes; g's own rounding moves the draw by
            # 2^-24 of u: nothing) and one fused a + u a g: no temporaries of a's size but g (at a
            # 2 GiB float32 weight, 3 passes over memory where a * (1 + u g) made 5)
            g = torch.randn(a.shape, generator=gen, device=a.device,
                            dtype=torch.float32 if a.dtype == torch.float64 else a.dtype)
            a = torch.addcmul(a, a, g, value=units * UNIT_ROUNDOFF[dt])
        out.append(a)
    return out


def add_draw(acc, draw, ref):
    """Accumulate one draw's squared move (float32; a non-finite draw makes the element's
    spread non-finite, which never widens a budget)."""
    import torch
    if not isinstance(draw, torch.Tensor) or draw.shape != ref.shape:
        return acc                 # not a draw of this output (compared before subtracting: a draw that
                                   # broadcasts against the reference would pass as one, any other raise)
    move = (draw.detach().to(ref.dtype) - ref).to(torch.float32)
    sq = move * move
    return sq if acc is None else acc.add_(sq)


def spread(acc, draws: int):
    """The RMS move over the draws, element by element."""
    return None if acc is None else (acc / max(draws, 1)).sqrt_()


def unit_of(dtypes: list) -> float:
    """The largest unit roundoff among the floating inputs' dtypes: s / unit_of is the terms' size."""
    units = [UNIT_ROUNDOFF[d] for d in dtypes if d in UNIT_ROUNDOFF]
    return max(units) if units else 0.0


def rounding(spread, scale, out_dtype: str):
    """The rounding spread with the output's own rounding added (one unit roundoff at the
    default's scale): s = sqrt(spread^2 + (u_out x scale)^2), a non-finite spread counting 0."""
    import torch
    u = UNIT_ROUNDOFF.get(out_dtype, 0.0)
    sp = torch.zeros_like(scale) if spread is None else spread.to(scale.dtype)
    sp = torch.where(sp.isfinite(), sp, torch.zeros_like(sp))
    return torch.sqrt(sp * sp + (u * scale) ** 2)


def peer_errors(peer, ref, s):
    """The kernel-precision peer's errors in units of s where the peer and the reference are
    finite and s > 0 (a non-finite peer never widens a budget): (largest, sum of squares, count)."""
    import torch
    p, r = peer.to(torch.float64), ref.to(torch.float64)
    ok = p.isfinite() & r.isfinite() & (s > 0)
    k = torch.where(ok, (p - r).abs() / torch.where(ok, s, torch.ones_like(s)), torch.zeros_like(s))
    if not k.numel():
        return 0.0, 0.0, 0
    return float(k.max()), float((k * k).sum()), int(ok.sum())


def tail_factor(largest: float, sum_squares: float, count: int, elements: int) -> float:
    """K: the peer's error, in units of s, at the tail an output of `elements` elements reaches:
    the larger of its largest error and its RMS error times the largest of that many Gaussian
    draws (sqrt(2 ln 2n)). The two agree for a peer whose errors are independent; where they are
    not (identical rows, a peer that rounds every column the same way) its largest is the largest
    of few draws, while another correct order of the same sums (split-K) shows the tail (measured
    on the H200: F.linear at K = 16384 with identical weight rows, 2.6 x the peer's largest)."""
    import math
    if not count:
        return largest
    rms = math.sqrt(sum_squares / count)
    return max(largest, rms * math.sqrt(2 * math.log(2 * max(elements, 1))))


def peer_cap(rest, scale, out_dtype: str):
    """The most a peer may allow an element: MAX_WIDENING x the rest (the default, the spread's
    budget), or HALF_DIGITS of the output's digits at the element's scale, the larger."""
    import torch
    u = UNIT_ROUNDOFF.get(out_dtype, 0.0)
    return torch.maximum(MAX_WIDENING * rest, (u ** HALF_DIGITS) * scale)


# ---------------------------------------------------------------------------- the backward's own roundings
# A gradient's terms are not the inputs: layer_norm's grad of x at N = 1 is rstd x (w dy - mean(w dy))
# = 0 from two terms of size rstd |w dy| (rstd = 316 at variance 0), which no perturbation of the
# inputs moves (the true gradient is 0 at every rounding: s = 0), while a float32 kernel leaves one
# rounding of them (3.7e-05, measured on the H200). And a weight's gradient is a sum over every row,
# which a correct kernel may add in any order (float32 atomics, in whatever order its programs
# finish), while the honest peer (torch's pairwise sum) is more accurate than any such order. So
# on a backward point every draw of the spread also rounds the reference's backward itself:
# every floating result of an op of its autograd (the vector-Jacobian products, the engine's sums of
# two paths' gradients) is moved by a Gaussian ACC_UNIT of itself, and a reduction's (sum, mean,
# a product's inner dimension, n terms) by ACC_UNIT x sqrt(n - 1) x the sum of its terms' magnitudes
# more: that bounds the RMS rounding error of adding the n terms in ANY order (each partial sum is
# at most the sum of |terms|), so the spread's budget (the default at s / unit) admits every order.
# ACC_UNIT is float32's unit roundoff (or the inputs', when finer): a correct backward computes in
# float32 at least, so a float16 gradient's budget barely moves, and one summed in float16 (the
# zoo's layernorm_dw_half_accum, 2^13 x float32's unit a step) is still caught.
ACC_UNIT = 2.0 ** -24
_NOT_ROUNDING = ("copy_", "clone", "_to_copy", "detach", "fill_", "fill", "zero_", "zeros_like", "ones_like",
                 "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "zeros", "ones", "empty",
                 "full", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "where", "neg", "abs", "masked_fill",
                 "index_select", "gather", "cat", "stack", "constant_pad_nd", "select_backward", "slice_backward",
                 "_unsafe_view", "expand_copy", "sign", "eq", "ne", "lt", "le", "gt", "ge")


def acc_unit(unit: float) -> float:
    """The unit a correct backward's own arithmetic rounds at: float32's, or the inputs' when finer."""
    return min(ACC_UNIT, unit) if unit else ACC_UNIT


def backward_rounding(gen, unit: float):
    """A TorchDispatchMode that rounds (moves) every floating result of the ops run under it, as
    above; entered around the reference's autograd.grad in the spread's draws (run/harness.py)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    return _Rounding(gen, unit, TorchDispatchMode)


def _reduced(func, args, kwargs, out):
    """For a reduction: (n terms a result adds, sum of their |terms| at each result), else None."""
    import torch
    aten = torch.ops.aten
    name = func.overloadpacket.__name__
    if name in ("sum", "mean") and args and isinstance(args[0], torch.Tensor):
        t = args[0]
        dims = args[1] if len(args) > 1 and args[1] is not None else kwargs.get("dim")
        keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        if not dims:
            dims = list(range(t.dim()))
        dims = [dims] if isinstance(dims, int) else list(dims)
        n = 1
        for d in dims:
            n *= t.shape[d] if t.dim() else 1
        mag = aten.sum.dim_IntList(t.abs(), dims, keep) if t.dim() else t.abs()
        if name == "mean":
            mag = mag / max(n, 1)
        return n, mag.reshape(out.shape)
    if name in ("mm", "bmm", "addmm", "baddbmm"):
        a, b = (args[1], args[2]) if name in ("addmm", "baddbmm") else (args[0], args[1])
        mag = torch.matmul(a.abs(), b.abs())
        return a.shape[-1], mag.reshape(out.shape)
    return None


class _Rounding:
    def __new__(cls, gen, unit, base):
        class Rounding(base):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                name = func.overloadpacket.__name__
                if func.is_view or name in _NOT_ROUNDING or name.rstrip("_") in _NOT_ROUNDING:
                    return out
                for t in (out if isinstance(out, (tuple, list)) else (out,)):
                    _round(func, args, kwargs, t, gen, unit)
                return out
        dynamo_disable_when_imported(Rounding)   # its first op would import torch._dynamo: 2.2 CPU s a worker
        return Rounding()


def _round(func, args, kwargs, t, gen, unit: float) -> None:
    import torch
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or not t.numel():
        return
    scale = t.abs()
    red = _reduced(func, args, kwargs, t)
    if red is not None:
        n, mag = red
        scale = torch.hypot(scale, mag.to(t.dtype) * max(n - 1, 0) ** 0.5)
    scale.nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)      # a non-finite result is not moved
    g = torch.randn(t.shape, generator=gen, device=t.device, dtype=torch.float32)
    # in place, so that the op's result stays the tensor autograd holds (a fresh one, or the
    # in-place op's own argument)
    t.addcmul_(g.to(t.dtype), scale, value=unit)
