"""Values: the kernel's output against the reference's, NaN-aware, with per-dtype
tolerances scaled by the reference's magnitude. Every mismatch is collected before anything
is reported, and located: which elements, in what pattern, how far off, and what was allowed
(the habit of torch.testing)."""
from __future__ import annotations

from ..outcome import Check, Finding, Largest
from ..spec import Tolerance
from .pattern import Where, describe, original_index, unravel


def compare(name: str, out, ref, tol: Tolerance, where: Where, about: dict | None = None,
            sensitivity=None, nonfinite: str | None = None) -> Finding | None:
    """NaN-aware: a position where one side is finite and the other not, or where both are
    infinite with different signs, fails whatever the tolerance. `about` (dtype, shape, mode)
    travels into the finding as facts.

    The tolerance scales with the larger of |ref|, the reference row's RMS and, when given,
    the output's sensitivity to rounding its inputs (checks/sensitivity.py): a dot product over
    K = 7167 terms that cancels to 0.22 carries the rounding error of terms of size ~85."""
    import torch
    # float32 arithmetic is exact enough for every tolerance below float64's (the rounding of
    # the reference to float32, 6e-8, is 20x under float32's rtol) and halves the bytes moved
    work = torch.float64 if out.dtype in (torch.float64, torch.int64) or not out.is_floating_point() else torch.float32
    o = out.detach().to(work)
    r = ref.detach().to(device=o.device, dtype=work)
    if r.shape != o.shape:
        return Finding(Check.CONTRACT, name, facts={"reference_shape": list(r.shape), "kernel_shape": list(o.shape)})
    if not out.is_floating_point():
        bad = out.detach().to(torch.int64) != ref.detach().to(device=o.device, dtype=torch.int64)
        allowed = torch.zeros_like(o)
    else:
        allowed = allowed_of(r, tol, sensitivity)
        both_nan = o.isnan() & r.isnan()
        same_inf = o.isinf() & r.isinf() & (o == r)
        finite = o.isfinite() & r.isfinite()
        bad = ~(both_nan | same_inf) & (~finite | ((o - r).abs() > allowed))
        # a true value past the output dtype's largest finite is +-inf in that dtype (or the
        # largest finite, for a kernel that saturates): overflow is the right answer there
        # (a reference within the tolerance of the largest finite may round either way)
        fmax = torch.finfo(out.dtype).max
        over = r.isfinite() & (r.abs() + allowed > fmax)
        bad &= ~(over & (o.sign() == r.sign()) & (o.abs() >= fmax))
        if nonfinite == "ignore":
            # NaN/Inf inputs must not reach the outputs; positions the reference cannot say are skipped
            bad = (bad & r.isfinite()) | ~o.isfinite()
    if int(bad.sum()) == 0:
        return None
    return _finding(name, o, r, bad, allowed, where, about or {})


def allowed_of(r, tol: Tolerance, sensitivity=None):
    """What each element may differ from the reference `r` (in r's dtype): atol + rtol x the
    larger of |r|, its row's RMS and, when given, the output's sensitivity. Rung 5 holds a
    call to the first call's output with it (run/modes/differ.py)."""
    import torch
    scale = torch.maximum(r.abs(), row_rms(r))
    if sensitivity is not None:
        sens = sensitivity.detach().to(device=r.device, dtype=r.dtype)
        scale = torch.maximum(scale, torch.where(sens.isfinite(), sens, torch.zeros_like(sens)))
    return tol.atol + tol.rtol * scale


def row_rms(r):
    """RMS of each reference row over finite entries: the output's scale, so that an element
    near zero is held to the row's rounding noise, not to its own tiny magnitude."""
    import torch
    if r.dim() == 0:
        return r.abs()
    f = torch.where(r.isfinite(), r, torch.zeros_like(r))
    cnt = r.isfinite().sum(-1, keepdim=True).clamp(min=1)
    return ((f * f).sum(-1, keepdim=True) / cnt).sqrt()


def _finding(name, o, r, bad, allowed, where: Where, about: dict) -> Finding:
    import torch
    err = torch.where(bad, (o - r).abs(), torch.zeros_like(o))
    err = torch.where(err.isnan() | bad & ~o.isfinite(), torch.full_like(err, float("inf")), err)
    flat = int(torch.argmax(torch.where(bad, err, torch.full_like(err, -1.0))))
    shown = original_index(unravel(flat, tuple(o.shape)), where)
    oi = o.reshape(-1)[flat].item()
    ri = r.reshape(-1)[flat].item()
    ai = allowed.reshape(-1)[flat].item()
    nonfinite = int((bad & ~o.isfinite() & r.isfinite()).sum())
    return Finding(Check.VALUES, name, pattern=describe(bad, where), mismatched=int(bad.sum()), total=bad.numel(),
                   largest=Largest(shown, oi, ri, ai), max_abs_err=abs(oi - ri) if _finite(oi) else float("inf"),
                   facts={"nonfinite": nonfinite, "sampled": bool(where.row_ids), **about})


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")
