"""Where the wrong elements are: the shape of a boolean mask, as a typed Pattern that
report/words/ says in the words a kernel engineer reads at a glance ("the last 3 columns
(N % 8 = 3) of every row", "rows 0..201 (whole rows)", "scattered, 3 of 2^20")."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..core.outcome import Pattern, Span


@dataclass
class Where:
    """How to name positions of an output: its dim symbols, their tiles, and, when only some
    rows were checked, the original index of each checked row along an axis."""
    symbols: tuple[str, ...] = ()
    tiles: dict[str, tuple[int, ...]] = field(default_factory=dict)
    row_ids: dict[int, list[int]] = field(default_factory=dict)


def where_of(spec, name: str, row_ids: dict | None = None) -> Where:
    """The Where of output (or input) `name` of `spec`."""
    symbols = spec.all_tensors[name].symbols
    return Where(symbols, {d: spec.dims[d].tiles for d in symbols if d in spec.dims}, row_ids or {})


def count(mask) -> int:
    """The True elements of a boolean mask (count_nonzero: on the CPU a 2^30-element mask's
    `.sum()` took 9 s, widening every element to int64; this, 0.16 s)."""
    import torch
    return int(torch.count_nonzero(mask))


class _Ix:
    """Sorted indices (a 1-D tensor, on the mask's device) as the pattern's helpers read them: their
    count, and the first and the last (never every index as a Python int: a big point's mask has
    millions of wrong rows)."""

    def __init__(self, t):
        self.t = t

    def __len__(self) -> int:
        return self.t.numel()

    def __getitem__(self, i: int) -> int:
        return int(self.t[i])

    def head(self, n: int) -> list[int]:
        return self.t[:n].tolist()


def describe(bad, where: Where) -> Pattern:
    """The pattern of the True elements of `bad` (not all False), on `bad`'s device: a few whole
    passes over the mask and reads of a bounded size, so that a 2 GiB output's mask costs what
    its passes cost (on the CPU, a 2^30-element mask took 18 s when each wrong row became a
    Python int; on a GPU the mask was copied to the host for it first)."""
    if bad.dim() == 0:
        return Pattern("single")
    if bad.all():
        return Pattern("every")
    m = bad.reshape(-1, bad.shape[-1]) if bad.dim() > 1 else bad.reshape(1, -1)
    row_any = m.any(1)
    rows_bad, cols_bad = _Ix(row_any.nonzero().flatten()), _Ix(m.any(0).nonzero().flatten())
    n_rows, n_cols = m.shape
    n_bad = count(m)
    rectangle = n_bad == len(rows_bad) * len(cols_bad) and _contiguous(cols_bad)
    if rectangle and (len(rows_bad) == n_rows or _contiguous(rows_bad)):
        return _block(rows_bad, cols_bad, n_rows, n_cols, bad.dim() == 1, where)
    if n_cols > 1 and bool((m.all(1) | ~row_any).all()):          # every wrong row wrong whole
        many = len(rows_bad) > 5
        return Pattern("whole_rows", n_bad=len(rows_bad), n_rows=n_rows, ids=tuple(_row_ids(rows_bad.head(5), where)),
                       checked=bool(where.row_ids), sample=_sample(m, rows_bad, bad, where) if many else (),
                       density=_density(m, where) if many else ())
    runs = _runs_of(rows_bad, where)
    if runs is not None and (len(rows_bad) == 1 or any(b > a for a, b in runs)):
        span = len(rows_bad) * n_cols
        if len(rows_bad) == n_rows:
            rows = ("every",)
        elif len(runs) == 1:
            rows = _rows(rows_bad, n_rows, where)
        else:
            rows = ("runs", tuple(runs))
        return Pattern("runs", rows=rows, n_bad=n_bad, n_total=span, most=2 * n_bad >= span,
                       sample=_sample(m, rows_bad, bad, where), density=_density(m, where))
    r0 = rows_bad[0]
    c0 = int(m[r0].nonzero()[0])                 # the first wrong element: in the first wrong row
    first = original_index(unravel(r0 * n_cols + c0, tuple(bad.shape)), where)
    return Pattern("scattered", n_bad=n_bad, n_total=bad.numel(), first=first,
                   sample=_sample(m, rows_bad, bad, where), density=_density(m, where))


MAX_RUNS = 3


def _runs_of(rows: _Ix, where: Where) -> list[tuple[int, int]] | None:
    """The runs of consecutive original row numbers among the wrong rows, where there are at most
    MAX_RUNS of them; None past that (found on the device: where consecutive ids break)."""
    import torch
    ids = rows.t
    orig = _lead_ids(where)
    if orig:
        ids = torch.as_tensor(orig, dtype=torch.int64, device=ids.device)[ids]
    breaks = ((ids[1:] - ids[:-1]) != 1).nonzero().flatten()
    if breaks.numel() + 1 > MAX_RUNS:
        return None
    cut = breaks.tolist()
    starts, ends = [0, *(b + 1 for b in cut)], [*cut, ids.numel() - 1]
    return [(int(ids[a]), int(ids[b])) for a, b in zip(starts, ends, strict=True)]


SAMPLE_ROWS, SAMPLE = 64, 256
DENSITY_ROWS, DENSITY_COLS = 32, 64


def _density(m, where: Where) -> tuple:
    """The share of wrong elements in each cell of the mask `m` (rows x columns) folded to at most
    DENSITY_ROWS x DENSITY_COLS cells: (rows a cell, columns a cell, per cell a percent, at least 1
    where any element is wrong), counted on the device in one pass. Empty where only some rows
    were checked (a big point): the cells would not be the output's."""
    if where.row_ids:
        return ()
    import torch
    n_rows, n_cols = m.shape
    fr, fc = -(-n_rows // DENSITY_ROWS), -(-n_cols // DENSITY_COLS)
    w = -(-n_cols // fc)
    widths = torch.full((w,), fc, dtype=torch.int64)
    widths[-1] = n_cols - (w - 1) * fc
    rows = []
    for r0 in range(0, n_rows, fr):              # a slab of rows at a time: a column count, never a copy of the mask
        per_col = m[r0:r0 + fr].sum(dim=0, dtype=torch.int32)     # bool's own sum widens to int64: 4x slower
        folded = torch.zeros(w * fc, dtype=per_col.dtype, device=m.device)
        folded[:n_cols] = per_col
        rows.append(folded.reshape(w, fc).sum(dim=1).cpu())
    wrong = torch.stack(rows).to(torch.int64)
    cells = torch.outer(torch.tensor([min(fr, n_rows - r0) for r0 in range(0, n_rows, fr)]), widths)
    share = torch.where(wrong > 0, (100 * wrong + cells - 1) // cells, torch.zeros_like(wrong))
    return (fr, fc, tuple(tuple(row) for row in share.cpu().tolist()))


def _sample(m, rows_bad: _Ix, bad, where: Where) -> tuple:
    """Where a pattern does not locate every wrong element (scattered, runs, whole rows past the
    five it names): the indices of at most SAMPLE of them, spread evenly over the wrong rows (at
    most SAMPLE_ROWS) and over each row's wrong columns, as indices into the whole output (the
    HTML's error map draws them). Reads at most SAMPLE_ROWS rows of the mask, never every wrong
    element's index (millions of them at a big point)."""
    step = -(-len(rows_bad) // SAMPLE_ROWS)
    rows = rows_bad.t[::step].tolist()
    per, n_cols, out = max(1, SAMPLE // len(rows)), m.shape[1], []
    for r in rows:
        cols = m[r].nonzero().flatten()
        for c in cols[::-(-len(cols) // per)].tolist():
            out.append(original_index(unravel(r * n_cols + c, tuple(bad.shape)), where))
    return tuple(out[:SAMPLE])


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for s in reversed(shape):
        idx.append(flat % s if s else 0)
        flat //= s if s else 1
    return tuple(reversed(idx))


def original_index(idx: tuple[int, ...], where: Where) -> tuple[int, ...]:
    """An index into the checked rows as an index into the whole tensor."""
    return tuple(where.row_ids[a][i] if a in where.row_ids else i for a, i in enumerate(idx))


def _lead_ids(where: Where) -> list[int] | None:
    """The original numbers of the checked rows along the rows' axis (the one before the last), where
    only some were checked (a big point's sampled rows); None where every row was."""
    return where.row_ids.get(max(len(where.symbols) - 2, 0))


def _row_ids(rows: list[int], where: Where) -> list[int]:
    """Original row numbers (rows may have been sampled from a big tensor)."""
    orig = _lead_ids(where)
    return [orig[r] for r in rows] if orig else list(rows)


def _contiguous(ix: _Ix) -> bool:
    return bool(ix) and ix[-1] - ix[0] + 1 == len(ix)


def _block(rows, cols, n_rows, n_cols, flat, where: Where) -> Pattern:
    last = where.symbols[-1] if where.symbols else None
    if flat:
        return Pattern("elements", cols=_span(cols, n_cols, last, where))
    span = None if len(cols) == n_cols else _span(cols, n_cols, last, where)
    return Pattern("block", cols=span, rows=("every",) if len(rows) == n_rows else _rows(rows, n_rows, where))


def _rows(rows, n_rows, where: Where) -> tuple:
    ids = _lead_ids(where)
    a, b = (ids[rows[0]], ids[rows[-1]]) if ids else (rows[0], rows[-1])
    if a == b:
        return ("one", a)
    if rows[-1] == n_rows - 1 and rows[0] > 0 and not ids:
        return ("from", a, b)
    return ("range", a, b)


def _span(cols, n_cols, sym, where: Where) -> Span:
    """A run of columns; at the end of the row, the tile whose remainder it is, if any."""
    note = None
    if cols[-1] == n_cols - 1:
        notes = [(sym, t, n_cols % t) for t in where.tiles.get(sym, ()) if n_cols % t == len(cols)]
        note = notes[0] if notes else None
    return Span(cols[0], cols[-1], n_cols, note)
