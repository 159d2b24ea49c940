"""Values and layouts: what a point's inputs hold, and how they sit in memory.

`fill_kind` writes one of the rung-2 value kinds into a contiguous tensor; `layout_plan`
says how a tensor of a logical shape sits in its storage for one of the rung-3 layouts
(size, stride, storage offset, the storage's length). Both are seeded by the point's
generator; neither runs a kernel. materialize.py puts the two together inside guarded
buffers.
"""
from __future__ import annotations

import math

from ..core.notation import Padding, ValueKind, Values
from ..core.sizes import as_rows
from ..core.spec import FLOAT_DTYPES, representable_range

INT_BITS = {8: "int64", 4: "int32", 2: "int16", 1: "int8"}
SLICE_PAD = 16          # elements between the rows of a sliced view
OFFSET = 64             # the storage offset of the "offset" layout


def _torch():
    import torch
    return torch


PUBLIC_KINDS = tuple(v for v in Values if v not in (Values.SPARSE, Values.SCALED))


def filled(target, kind: ValueKind | str = "normal", *, dtype=None, generator=None, range: tuple | None = None,
           device=None, ignore: int | None = None):
    """kl.filled: a tensor holding one of rung 2's value kinds, for a spec's `build=` (the public
    face of what kladder writes into the inputs it makes). `target`: a shape (a tuple of ints or
    a torch.Size) for a new tensor, or a tensor to fill in place. `kind`: a value kind's name
    ("normal", "peaked/10", "ties", "identical", "distinct", "tiny", "huge", "ones", "ids/same",
    ...), or a point's own: point.kinds.get("x", "normal"). `dtype`: a name or a torch dtype (a
    new tensor's; default float32). `generator`: the torch.Generator build= is given (the values
    are then the point's, seed for seed). `range`: (lo, hi), inclusive, as kl.Tensor(range=).
    `ignore`: the sentinel id of `ids/ignored`, as kl.Tensor(ignore=)."""
    torch = _torch()
    kind = _public_kind(kind)
    if isinstance(target, torch.Tensor):
        t = target
        name = str(t.dtype).removeprefix("torch.")
    else:
        if not (isinstance(target, (tuple, list, torch.Size)) and all(isinstance(n, int) and n >= 0 for n in target)):
            raise ValueError(f"kl.filled: target {target!r}: give a shape (a tuple of ints >= 0) or a tensor to fill.")
        name = str(dtype).removeprefix("torch.") if dtype is not None else "float32"
        if not hasattr(torch, name) or not isinstance(getattr(torch, name), torch.dtype):
            raise ValueError(f"kl.filled: dtype {dtype!r}: give a dtype name such as 'float32' or a torch dtype.")
        where = device if device is not None else (generator.device if generator is not None else "cpu")
        t = torch.empty(tuple(target), dtype=getattr(torch, name), device=where)
    _check_range(range, name)
    gen = generator if generator is not None else torch.Generator(device=t.device).manual_seed(0)
    dense = t if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device)
    fill_kind(dense, kind, name, gen, tuple(range) if range is not None else None, ignore=ignore)
    if dense is not t:
        t.copy_(dense)
    return t


def _check_range(rng, dtype: str) -> None:
    """kl.filled's `range`, as kl.Tensor(range=) is checked when a spec loads: two numbers, low
    first, and whole numbers for an integer dtype (a fractional bound was truncated: (0.5, 3.7)
    drew 0s)."""
    if rng is None:
        return
    try:
        lo, hi = rng
        ok = all(isinstance(b, (int, float)) and not isinstance(b, bool) and not math.isnan(b) for b in (lo, hi))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"kl.filled: range {rng!r}: give (lo, hi), two numbers, inclusive.")
    if lo > hi:
        raise ValueError(f"kl.filled: range {rng!r}: the low bound is above the high one; give (lo, hi).")
    if dtype not in FLOAT_DTYPES and dtype != "bool" and not all(math.isinf(b) or float(b).is_integer() for b in (lo, hi)):
        raise ValueError(f"kl.filled: range {rng!r} for {dtype}: an integer tensor's bounds are whole numbers, "
                         f"inclusive: ({math.ceil(lo)}, {math.floor(hi)}).")


def _public_kind(kind) -> ValueKind:
    if isinstance(kind, ValueKind):
        return kind
    try:
        parsed = ValueKind.parse(kind)
    except ValueError as e:
        raise ValueError(f"kl.filled: {e}") from None
    if parsed.kind not in PUBLIC_KINDS:
        raise ValueError(f"kl.filled: value kind {kind!r} is not one of {', '.join(PUBLIC_KINDS)} "
                         "(an argument after a slash: 'peaked/10', 'ids/same').")
    return parsed


def fill_kind(t, kind: ValueKind | str, dtype: str, gen, rng: tuple | None = None, chunks=(), ignore: int | None = None) -> None:
    """Write value kind `kind` (ValueKind("peaked", "10"), or its text "peaked/10") into the
    contiguous tensor `t`; `ignore`: an id input's sentinel (kl.Tensor(ignore=)), for `ids/ignored`."""
    torch = _torch()
    kind = ValueKind.parse(kind) if isinstance(kind, str) else kind
    base, arg = kind.kind, kind.arg
    is_float = dtype in FLOAT_DTYPES
    if is_float and rng is not None and base not in ("lengths", "masked", "nonfinite"):
        _fill_in_range(t, kind, dtype, gen, rng)
        return
    if base == Values.IDS and not is_float:
        from .idfill import fill_ids
        fill_ids(t, kind.format(), gen, rng, ignore)
        return
    if base == "normal" or (not is_float and base not in ("lengths", "masked", "ones")):
        fill_normal(t, dtype, gen, rng)
        return
    if base == "ones":
        t.fill_(1)
        return
    if base == "lengths":
        _lengths(t, gen, rng, chunks)
        return
    fill_normal(t, dtype, gen, None if base in ("peaked", "ties", "distinct") else rng)
    if t.numel() == 0:
        return
    rows = as_rows(t)
    if base == "peaked":
        t.mul_(float(arg or 10))
    elif base == "ties":
        b = torch.randn(rows.shape[0], 1, generator=gen, device=t.device).to(t.dtype)
        b = torch.where(b == 0, torch.ones_like(b), b)
        rows.copy_(b.expand_as(rows))
        k = torch.randint(0, 4, rows.shape, generator=gen, device=t.device)
        bits = rows.view(getattr(torch, INT_BITS[t.element_size()]))
        bits.add_(k.to(bits.dtype))               # b, b+1ulp, b+2ulp, b+3ulp (away from zero for b < 0)
    elif base == "identical":
        rows.copy_(rows[:1].expand_as(rows))
    elif base == "distinct":
        rows.copy_(_distinct(rows.shape[1], t.device).to(t.dtype).expand_as(rows))
    elif base == "tiny":
        _scatter_quarter(t, tiny_values(dtype), gen)
    elif base == "huge":
        big = huge_value(dtype, t.shape[-1] if t.dim() else 1, None)
        _scatter_quarter(t, [big, -big, big * 0.75, -big * 0.625], gen)
    elif base == "nonfinite":
        vals = (math.nan, math.inf, -math.inf)
        for i in range(0, rows.shape[0], 4):       # one in every fourth row
            col = int(torch.randint(0, rows.shape[1], (1,), generator=gen, device=t.device))
            rows[i, col] = vals[(i // 4) % 3]
    elif base == "masked":
        for i in range(0, rows.shape[0], 4):
            rows[i].fill_(-math.inf if is_float else 0)
    else:
        raise ValueError(f"unknown value kind {kind.format()!r}")


def _distinct(n: int, device):
    """Magnitudes 1..4 rising along the row, signs alternating: every column its own value."""
    torch = _torch()
    j = torch.arange(n, device=device, dtype=torch.float64)
    return (1 + 3 * j / max(n - 1, 1)) * torch.where(j % 2 == 0, 1.0, -1.0)


def tiny_values(dtype: str) -> list[float]:
    """Subnormal, smallest-normal and signed-zero values of a float dtype."""
    fi = _torch().finfo(getattr(_torch(), dtype))
    sub = fi.tiny * fi.eps                          # the smallest subnormal
    return [sub, -sub, 37 * sub, fi.tiny, -fi.tiny, 0.0, -0.0]


# ---------------------------------------------------------------------------- a declared range
def range_problem(kind: ValueKind | str, dtype: str, rng: tuple | None) -> str | None:
    """Why value kind `kind` cannot be drawn inside the declared range of a float input (None: it
    can, or nothing constrains it): a range with no value of the dtype in it holds nothing; tiny
    needs a subnormal, smallest-normal or zero value inside the range; `ones` needs 1."""
    if rng is None or dtype not in FLOAT_DTYPES:
        return None
    kind = ValueKind.parse(kind) if isinstance(kind, str) else kind
    if kind.kind in (Values.NONFINITE, Values.MASKED, Values.LENGTHS):
        return None                                 # not values of the range: the NaN policy's, or lengths
    span = representable_range(dtype, rng)
    if span is None:
        return "no_value"
    lo, hi = span
    if kind.kind == Values.TINY and not any(lo <= v <= hi for v in tiny_values(dtype)):
        return "no_tiny"
    if kind.kind == Values.ONES and not lo <= 1.0 <= hi:
        return "no_one"
    return None


def _fill_in_range(t, kind: ValueKind, dtype: str, gen, rng: tuple) -> None:
    """Value kind `kind` drawn inside [lo, hi]: every element a value of the dtype in the range,
    the kind's character kept - peaked: most values near lo and a few near hi (u ** T over the
    range); ties: a few ulps apart, mirrored below where they would pass hi; distinct: 1..4 with
    alternating signs mapped onto the range; tiny: the subnormal/smallest-normal/zero values inside
    it; huge: the range's ends (capped so that a row's squares still sum inside float32)."""
    torch = _torch()
    span = representable_range(dtype, rng)
    if span is None:
        raise ValueError(f"no {dtype} value lies in the range {rng!r}")
    lo, hi = span
    base, arg = kind.kind, kind.arg
    if t.numel() == 0:
        return
    rows = as_rows(t)
    w = torch.empty(rows.shape, dtype=torch.float64, device=t.device)
    if base == "peaked":
        w.uniform_(0, 1, generator=gen)
        w = lo + (hi - lo) * w.pow(float(arg or 10))
    elif base == "ties":
        b = torch.empty(rows.shape[0], 1, dtype=torch.float64, device=t.device).uniform_(lo, hi, generator=gen)
        b = b.to(t.dtype)
        k = torch.randint(0, 4, rows.shape, generator=gen, device=t.device)
        ints = getattr(torch, INT_BITS[t.element_size()])
        base_bits = b.expand(rows.shape).contiguous().view(ints)
        up = (base_bits + k.to(ints)).view(t.dtype).double()
        down = (base_bits - k.to(ints)).view(t.dtype).double()
        bd = b.double().expand(rows.shape)
        w = torch.where((up >= lo) & (up <= hi), up, torch.where((down >= lo) & (down <= hi), down, bd))
    elif base == "identical":
        w.uniform_(lo, hi, generator=gen)
        w = w[:1].expand_as(w)
    elif base == "distinct":
        w = lo + (hi - lo) * (_distinct(rows.shape[1], t.device) + 4) / 8
        w = w.expand(rows.shape)
    elif base in ("tiny", "huge"):
        w.uniform_(lo, hi, generator=gen)
        if base == "tiny":
            choices = [v for v in tiny_values(dtype) if lo <= v <= hi]
        else:
            cap = huge_value(dtype, t.shape[-1] if t.dim() else 1, None) * 2
            choices = [v for v in (hi, lo, 0.75 * hi + 0.25 * lo, 0.625 * lo + 0.375 * hi)
                       if abs(v) <= cap] or [max(min(hi, cap), lo)]
        flat = w.reshape(-1)
        mask = torch.rand(flat.shape, generator=gen, device=t.device) < 0.25
        pick = torch.randint(0, len(choices), flat.shape, generator=gen, device=t.device)
        vals = torch.tensor(choices, dtype=torch.float64, device=t.device)[pick]
        w = torch.where(mask, vals, flat).reshape(rows.shape)
    elif base == "ones":
        w.fill_(1.0)
    else:                                           # normal and any other kind: uniform in the range
        w.uniform_(lo, hi, generator=gen)
    w = w.to(t.dtype).double().clamp(lo, hi)        # rounding to the dtype never leaves the range
    rows.copy_(w.to(t.dtype))


def huge_value(dtype: str, row_len: int, rng: tuple | None) -> float:
    """The largest magnitude whose squares summed over a row still fit float32 (a kernel
    accumulating in float32 must carry it), within the dtype and the declared range."""
    torch = _torch()
    big = min(torch.finfo(getattr(torch, dtype)).max, math.sqrt(torch.finfo(torch.float32).max / max(row_len, 1)))
    if rng is not None:
        big = min(big, max(abs(float(rng[0])), abs(float(rng[1]))))
    return big / 2


def _scatter_quarter(t, choices, gen) -> None:
    torch = _torch()
    choices = torch.tensor(list(choices), dtype=torch.float64)
    flat = t.view(-1)
    mask = torch.rand(flat.shape, generator=gen, device=t.device) < 0.25
    pick = torch.randint(0, len(choices), flat.shape, generator=gen, device=t.device)
    vals = choices.to(t.device)[pick].to(t.dtype)
    flat.copy_(torch.where(mask, vals, flat))


def fill_normal(t, dtype: str, gen, rng: tuple | None = None) -> None:
    """Seeded values: normal for floats (uniform within a declared range), small signed ints
    (or uniform within the range), bits for bool."""
    if rng is not None and dtype != "bool":
        lo, hi = rng
        if dtype in FLOAT_DTYPES:
            span = representable_range(dtype, rng)
            if span is None:
                raise ValueError(f"no {dtype} value lies in the range {tuple(rng)!r}")
            t.uniform_(*span, generator=gen)
            t.copy_(t.double().clamp_(*span))          # rounding to the dtype never leaves the range
        else:
            t.random_(int(lo), int(hi) + 1, generator=gen)
        return
    if dtype in FLOAT_DTYPES:
        t.normal_(generator=gen)
    elif dtype == "bool":
        t.random_(0, 2, generator=gen)
    elif dtype == "uint8":
        t.random_(0, 256, generator=gen)
    else:
        t.random_(-64, 64, generator=gen)


def _lengths(t, gen, rng, chunks) -> None:
    """Lengths at the edges of the range and on both sides of every chunk, each at least once."""
    torch = _torch()
    lo, hi = (int(rng[0]), int(rng[1])) if rng else (1, 64)
    edges = [lo, hi, lo + 1, hi - 1]
    for c in chunks:
        edges += [c - 1, c, c + 1]
    edges = sorted({e for e in edges if lo <= e <= hi}) or [lo]
    flat = t.view(-1)
    pick = torch.randint(0, len(edges), flat.shape, generator=gen, device=t.device)
    vals = torch.tensor(edges, device=t.device)[pick]
    vals[:min(len(edges), flat.numel())] = torch.tensor(edges[:flat.numel()], device=t.device)
    flat.copy_(vals.to(t.dtype))


# ---------------------------------------------------------------------------- layouts
def contiguous_strides(shape) -> list[int]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return strides[::-1]


def layout_plan(shape: tuple[int, ...], layout: str) -> tuple[tuple, tuple, int, int]:
    """(size, stride, storage offset, storage length in elements) of `layout`."""
    shape = tuple(shape)
    offset = 0
    if layout in ("", "contiguous"):
        stride = contiguous_strides(shape)
    elif layout == "sliced":
        stride = contiguous_strides(shape[:-1] + (shape[-1] + SLICE_PAD,))
    elif layout == "every_other":
        stride = [2 * s for s in contiguous_strides(shape)]
    elif layout == "transposed":
        st = contiguous_strides(shape[:-2] + (shape[-1], shape[-2]))
        stride = st[:-2] + [st[-1], st[-2]]
    elif layout in ("offset", "shifted"):
        stride = contiguous_strides(shape)
        offset = OFFSET if layout == "offset" else 1
    elif layout == "broadcast":
        stride = [0] + contiguous_strides(shape[1:])
    elif layout == "channels_last":
        n, c, h, w = shape
        stride = [h * w * c, 1, w * c, c]
    else:
        raise ValueError(f"unknown layout {layout!r}")
    if any(s == 0 for s in shape):
        length = offset
    else:
        length = offset + sum((s - 1) * st for s, st in zip(shape, stride, strict=False)) + 1
    return shape, tuple(stride), offset, length


def pad_bytes(nbytes: int, fill: Padding, gen, device):
    """The bytes of a padding fill: 0x00, 0xFF, 0x7F, 0x80, a per-byte pattern, random."""
    torch = _torch()
    if fill.byte == "bytes":
        return (torch.arange(nbytes, device=device) % 251).to(torch.uint8)
    if fill.byte == "random":
        return torch.randint(0, 256, (nbytes,), generator=gen, device=device, dtype=torch.uint8)
    return torch.full((nbytes,), fill.value, dtype=torch.uint8, device=device)
