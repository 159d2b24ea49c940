"""Compare a kernel's outputs with the reference's: contract first (dtype, shape, device),
then values, NaN-aware, with per-dtype tolerances scaled by the reference's magnitude.
Every mismatch is collected before anything is reported, and located: which elements,
in what pattern, how far off, and what was allowed (the habit of torch.testing)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .spec import Tolerance


@dataclass
class Finding:
    """One failed check on one output (or on the call itself)."""
    check: str                  # contract | values | guard | raised | crashed | hang | device_fault
    output: str
    message: str
    pattern: str = ""
    max_abs_err: float | None = None
    index: tuple | None = None
    allowed: float | None = None
    mismatched: int = 0
    total: int = 0
    extra: dict = field(default_factory=dict)
    call: str = ""              # which call of a mode went wrong ("replay 2 of 3", "A after B")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["index"] = list(self.index) if self.index is not None else None
        return d


@dataclass
class Where:
    """How to name positions of an output: its dim symbols, their tiles, and, when only some
    rows were checked, the original index of each checked row along an axis."""
    symbols: tuple[str, ...] = ()
    tiles: dict[str, tuple[int, ...]] = field(default_factory=dict)
    row_ids: dict[int, list[int]] = field(default_factory=dict)


def check_contract(name: str, out, expect_shape, expect_dtype, expect_device) -> Finding | None:
    import torch
    if not isinstance(out, torch.Tensor):
        return Finding("contract", name, f"`{name}` is a {type(out).__name__}, not a tensor")
    problems = []
    if tuple(out.shape) != tuple(expect_shape):
        problems.append(f"shape {tuple(out.shape)} where {tuple(expect_shape)} was expected")
    if str(out.dtype).removeprefix("torch.") != expect_dtype:
        problems.append(f"dtype {str(out.dtype).removeprefix('torch.')} where {expect_dtype} was expected")
    if out.device.type != torch.device(expect_device).type:
        problems.append(f"device {out.device} where {expect_device} was expected")
    if problems:
        return Finding("contract", name, f"`{name}` has " + " and ".join(problems))
    return None


def compare_values(name: str, out, ref, tol: Tolerance, where: Where, describe: str,
                   sensitivity=None, nonfinite: str | None = None) -> Finding | None:
    """NaN-aware: a position where one side is finite and the other not, or where both are
    infinite with different signs, fails whatever the tolerance.

    The tolerance scales with the larger of |ref|, the reference row's RMS and, when given,
    the output's sensitivity to rounding its inputs (see `sensitivity`): a dot product over
    K = 7167 terms that cancels to 0.22 carries the rounding error of terms of size ~85."""
    import torch
    # float32 arithmetic is exact enough for every tolerance below float64's (the rounding of
    # the reference to float32, 6e-8, is 20x under float32's rtol) and halves the bytes moved
    work = torch.float64 if out.dtype in (torch.float64, torch.int64) or not out.is_floating_point() else torch.float32
    o = out.detach().to(work)
    r = ref.detach().to(device=o.device, dtype=work)
    if r.shape != o.shape:
        return Finding("contract", name, f"the reference returned shape {tuple(r.shape)} for `{name}`, the kernel {tuple(o.shape)}")
    if not out.is_floating_point():
        bad = out.detach().to(torch.int64) != ref.detach().to(device=o.device, dtype=torch.int64)
        allowed = torch.zeros_like(o)
    else:
        scale = torch.maximum(r.abs(), _row_rms(r))
        if sensitivity is not None:
            sens = sensitivity.detach().to(device=o.device, dtype=work)
            scale = torch.maximum(scale, torch.where(sens.isfinite(), sens, torch.zeros_like(sens)))
        allowed = tol.atol + tol.rtol * scale
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
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None
    return _finding(name, o, r, bad, allowed, where, describe)


BIAS_P = 1e-6              # the sign test's threshold: chance would lean this way once in a million
BIAS_ULPS = 0.1            # and the mean error must be at least a tenth of the output's rounding unit


def bias_check(name: str, out, ref) -> str | None:
    """Errors inside the tolerance that lean one way: a sign test over the elements that
    differ, and the mean signed error in units of the output dtype's rounding (ulps at the
    reference's magnitude). An unbiased kernel's rounding errors cancel across layers; a
    biased one's add up (reference/000 §7.2). A warning, never a failure."""
    import torch
    from scipy.stats import binomtest
    if not (isinstance(out, torch.Tensor) and out.is_floating_point()) or out.numel() < 64:
        return None
    o = out.detach().to(torch.float64).reshape(-1)
    r = ref.detach().to(device=o.device, dtype=torch.float64).reshape(-1)
    ok = o.isfinite() & r.isfinite() & (r != 0)
    o, r = o[ok], r[ok]
    if o.numel() > 1:       # repeated (kernel, reference) pairs (identical rows) count once
        pairs = torch.unique(torch.stack([o, r]), dim=1)
        o, r = pairs[0], pairs[1]
    mag = torch.maximum(r.abs(), r.pow(2).mean().sqrt())     # near zero, the output's RMS sets the scale
    ulp = mag * torch.finfo(out.dtype).eps
    # two ways to lean: above/below (an offset) and away from/toward zero (a scale)
    for lean, diff, words in (("offset", o - r, ("above", "below")),
                              ("scale", (o - r) * r.sign(), ("away from zero from", "toward zero from"))):
        up, down = int((diff > 0).sum()), int((diff < 0).sum())
        if up + down < 64:
            return None
        p = binomtest(up, up + down, 0.5).pvalue
        mean_ulps = float((diff / ulp).mean())
        if p >= BIAS_P or abs(mean_ulps) < BIAS_ULPS:
            continue
        rel = float((diff / mag).mean())
        side = words[0] if up > down else words[1]
        return (f"`{name}` leans {side} the reference: {max(up, down):,} of {up + down:,} differing elements "
                f"(sign test p = {max(p, 1e-300):.1e}); mean error {mean_ulps:+.2f} ulps of {str(out.dtype).removeprefix('torch.')} "
                f"({rel:+.2e} relative). Inside the tolerance, but errors that lean one way compound through a "
                "model's layers")
    return None


SENSITIVITY_EPS = 2.0 ** -20


SENSITIVITY_DRAWS = 3


def bumped_reference(reference, ref_args: list, seed: int):
    """The reference re-run on every float input scaled by (1 + eps * r), r = +-1 at random,
    SENSITIVITY_DRAWS times. |bumped - ref| / eps is how much each output moves when its
    inputs are rounded: the output's condition-aware magnitude (for a dot product, about
    sqrt(sum (a_i b_i)^2) rather than its cancelled value), the scale a kernel's rounding
    errors really have. One draw can cancel to near zero by chance where the output itself
    cancels (a D = 1 attention row: 8% of draws land under a tenth of the typical size);
    the RMS over three rarely does (under 0.1%). Returns the list of bumped outputs."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    runs = []
    for _ in range(SENSITIVITY_DRAWS):
        bumped = []
        for a in ref_args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                signs = torch.randint(0, 2, a.shape, generator=gen).to(device=a.device, dtype=a.dtype) * 2 - 1
                a = a * (1 + SENSITIVITY_EPS * signs)
            bumped.append(a)
        runs.append(reference(*bumped))
    return runs


def sensitivity(ref, bumped):
    """RMS over the draws of |bumped - ref| / eps (`bumped`: one tensor per draw)."""
    import torch
    draws = bumped if isinstance(bumped, list) else [bumped]
    if not (isinstance(ref, torch.Tensor) and ref.is_floating_point()) or not all(isinstance(b, torch.Tensor) for b in draws):
        return None
    sq = sum(((b.to(ref.dtype) - ref) / SENSITIVITY_EPS) ** 2 for b in draws)
    return (sq / len(draws)).sqrt()


def _row_rms(r):
    """RMS of each reference row over finite entries: the output's scale, so that an element
    near zero is held to the row's rounding noise, not to its own tiny magnitude."""
    import torch
    if r.dim() == 0:
        return r.abs()
    f = torch.where(r.isfinite(), r, torch.zeros_like(r))
    cnt = r.isfinite().sum(-1, keepdim=True).clamp(min=1)
    return ((f * f).sum(-1, keepdim=True) / cnt).sqrt()


def _finding(name, o, r, bad, allowed, where: Where, describe: str) -> Finding:
    import torch
    err = torch.where(bad, (o - r).abs(), torch.zeros_like(o))
    err = torch.where(err.isnan() | bad & ~o.isfinite(), torch.full_like(err, float("inf")), err)
    flat = int(torch.argmax(torch.where(bad, err, torch.full_like(err, -1.0))))
    idx = _unravel(flat, tuple(o.shape))
    oi = o.reshape(-1)[flat].item()
    ri = r.reshape(-1)[flat].item()
    ai = allowed.reshape(-1)[flat].item()
    n_bad, total = int(bad.sum()), bad.numel()
    nonfinite = int((bad & ~o.isfinite() & r.isfinite()).sum())
    pattern = describe_pattern(bad, where)
    shown = _original_index(idx, where)
    checked = " checked" if where.row_ids else ""
    msg = (f"Mismatched elements: {n_bad:,} / {total:,}{checked} ({100 * n_bad / max(total, 1):.1f}%) in `{name}` ({describe}): "
           f"{pattern}. Greatest difference at index {shown}: kernel {oi!r}, reference {ri!r} (up to {ai:.3g} allowed)")
    if nonfinite:
        msg += f"; {nonfinite:,} non-finite where the reference is finite"
    return Finding("values", name, msg, pattern=pattern,
                   max_abs_err=abs(oi - ri) if _finite(oi) else float("inf"), index=shown,
                   allowed=ai, mismatched=n_bad, total=total,
                   extra={"nonfinite": nonfinite, "kernel": oi, "reference": ri, "describe": describe,
                          "sampled": bool(where.row_ids)})


def _finite(x: float) -> bool:
    return x == x and abs(x) != float("inf")


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for s in reversed(shape):
        idx.append(flat % s if s else 0)
        flat //= s if s else 1
    return tuple(reversed(idx))


def _original_index(idx: tuple[int, ...], where: Where) -> tuple[int, ...]:
    return tuple(where.row_ids[a][i] if a in where.row_ids else i for a, i in enumerate(idx))


# ---------------------------------------------------------------------------- patterns
def describe_pattern(bad, where: Where) -> str:
    """The shape of the wrong elements, in words a kernel engineer reads at a glance:
    "the last 3 columns of every row (N % 8 = 3)", "rows 0..201", "scattered, 3 of 2^20"."""
    if bad.dim() == 0:
        return "the single element"
    if bad.all():
        return "every element"
    m = bad.reshape(-1, bad.shape[-1]) if bad.dim() > 1 else bad.reshape(1, -1)
    rows_bad = m.any(1).nonzero().flatten().tolist()
    cols_bad = m.any(0).nonzero().flatten().tolist()
    n_rows, n_cols = m.shape
    rectangle = int(m.sum()) == len(rows_bad) * len(cols_bad) and _contiguous(cols_bad)
    if rectangle and (len(rows_bad) == n_rows or _contiguous(rows_bad)):
        return _block_text(rows_bad, cols_bad, n_rows, n_cols, bad.dim() == 1, where)
    if n_cols > 1 and bool(m[rows_bad].all()):
        ids = _row_ids(rows_bad[:5], where)
        more = ", ..." if len(rows_bad) > 5 else ""
        return f"{len(rows_bad):,} whole rows of {n_rows:,}{' checked' if where.row_ids else ''} (rows {', '.join(map(str, ids))}{more})"
    runs = _runs(_row_ids(rows_bad, where))
    if len(runs) <= 3 and (len(rows_bad) == 1 or any(b > a for a, b in runs)):
        n_bad, span = int(m.sum()), len(rows_bad) * n_cols
        if len(rows_bad) == n_rows:
            rows = "every row"
        elif len(runs) == 1:
            rows = _rows_text(rows_bad, n_rows, where)
        else:
            rows = "rows " + ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in runs)
        amount = "most elements" if 2 * n_bad >= span else "scattered elements"
        return f"{amount} of {rows} ({n_bad:,} of {span:,})"
    first = _original_index(_unravel(int(bad.reshape(-1).nonzero()[0]), tuple(bad.shape)), where)
    return f"scattered, {int(bad.sum()):,} of {bad.numel():,} elements (first at {first})"


def _row_ids(rows: list[int], where: Where) -> list[int]:
    """Original row numbers (rows may have been sampled from a big tensor)."""
    orig = where.row_ids.get(max(len(where.symbols) - 2, 0))
    return [orig[r] for r in rows] if orig else list(rows)


def _runs(ids: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [tuple(r) for r in runs]


def _contiguous(ix: list[int]) -> bool:
    return bool(ix) and ix[-1] - ix[0] + 1 == len(ix)


def _block_text(rows, cols, n_rows, n_cols, flat, where: Where) -> str:
    last = where.symbols[-1] if where.symbols else None
    if flat:
        return _span_text("elements", cols, n_cols, last, where)
    col_part = None if len(cols) == n_cols else _span_text("columns", cols, n_cols, last, where)
    row_part = "every row" if len(rows) == n_rows else _rows_text(rows, n_rows, where)
    if col_part is None:
        return f"{row_part} (whole rows)" if len(rows) != n_rows else "every element"
    return f"{col_part} of {row_part}"


def _rows_text(rows, n_rows, where: Where) -> str:
    lead = len(where.symbols) - 2 if len(where.symbols) >= 2 else 0
    ids = where.row_ids.get(lead)
    a, b = (ids[rows[0]], ids[rows[-1]]) if ids else (rows[0], rows[-1])
    if a == b:
        return f"row {a}"
    if rows[-1] == n_rows - 1 and rows[0] > 0 and not ids:
        return f"every row from {a} on (rows {a}..{b})"
    return f"rows {a}..{b}"


def _span_text(unit, cols, n_cols, sym, where: Where) -> str:
    k = len(cols)
    if cols[-1] == n_cols - 1:
        text = f"the last {k} {unit}" if k > 1 else f"the last {unit[:-1]}"
        notes = [f"{sym} % {t} = {n_cols % t}" for t in where.tiles.get(sym, ()) if n_cols % t == k]
        return text + (f" ({notes[0]})" if notes else "")
    if cols[0] == 0:
        return f"the first {k} {unit}" if k > 1 else f"the first {unit[:-1]}"
    return f"{unit} {cols[0]}..{cols[-1]}"


def check_guards(name: str, damaged_before: list[int], damaged_after: list[int], itemsize: int) -> Finding | None:
    """Bytes outside a tensor that changed: a store past its end (or before its start)."""
    if not damaged_before and not damaged_after:
        return None
    parts = []
    if damaged_after:
        a, b = min(damaged_after), max(damaged_after)
        parts.append(f"{len(damaged_after)} guard bytes after the end of `{name}` were overwritten "
                     f"(bytes {a}..{b} past the end: elements {a // itemsize}..{b // itemsize} past the last)")
    if damaged_before:
        a, b = min(damaged_before), max(damaged_before)
        parts.append(f"{len(damaged_before)} guard bytes before the start of `{name}` were overwritten "
                     f"(bytes {a}..{b} before it)")
    pattern = "a write past the end" if damaged_after else "a write before the start"
    return Finding("guard", name, "; ".join(parts), pattern=pattern,
                   mismatched=len(damaged_before) + len(damaged_after),
                   extra={"after": sorted(damaged_after)[:64], "before": sorted(damaged_before)[:64]})
