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


def describe(bad, where: Where) -> Pattern:
    """The pattern of the True elements of `bad` (not all False)."""
    if bad.dim() == 0:
        return Pattern("single")
    if bad.all():
        return Pattern("every")
    m = bad.reshape(-1, bad.shape[-1]) if bad.dim() > 1 else bad.reshape(1, -1)
    rows_bad = m.any(1).nonzero().flatten().tolist()
    cols_bad = m.any(0).nonzero().flatten().tolist()
    n_rows, n_cols = m.shape
    rectangle = int(m.sum()) == len(rows_bad) * len(cols_bad) and _contiguous(cols_bad)
    if rectangle and (len(rows_bad) == n_rows or _contiguous(rows_bad)):
        return _block(rows_bad, cols_bad, n_rows, n_cols, bad.dim() == 1, where)
    if n_cols > 1 and bool(m[rows_bad].all()):
        many = len(rows_bad) > 5
        return Pattern("whole_rows", n_bad=len(rows_bad), n_rows=n_rows, ids=tuple(_row_ids(rows_bad[:5], where)),
                       checked=bool(where.row_ids), sample=_sample(m, rows_bad, bad, where) if many else (),
                       density=_density(m, where) if many else ())
    runs = _runs(_row_ids(rows_bad, where))
    if len(runs) <= 3 and (len(rows_bad) == 1 or any(b > a for a, b in runs)):
        n_bad, span = int(m.sum()), len(rows_bad) * n_cols
        if len(rows_bad) == n_rows:
            rows = ("every",)
        elif len(runs) == 1:
            rows = _rows(rows_bad, n_rows, where)
        else:
            rows = ("runs", tuple(runs))
        return Pattern("runs", rows=rows, n_bad=n_bad, n_total=span, most=2 * n_bad >= span,
                       sample=_sample(m, rows_bad, bad, where), density=_density(m, where))
    first = original_index(unravel(int(bad.reshape(-1).nonzero()[0]), tuple(bad.shape)), where)
    return Pattern("scattered", n_bad=int(bad.sum()), n_total=bad.numel(), first=first,
                   sample=_sample(m, rows_bad, bad, where), density=_density(m, where))


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
        per_col = m[r0:r0 + fr].sum(dim=0)
        folded = torch.zeros(w * fc, dtype=per_col.dtype, device=m.device)
        folded[:n_cols] = per_col
        rows.append(folded.reshape(w, fc).sum(dim=1).cpu())
    wrong = torch.stack(rows)
    cells = torch.outer(torch.tensor([min(fr, n_rows - r0) for r0 in range(0, n_rows, fr)]), widths)
    share = torch.where(wrong > 0, (100 * wrong + cells - 1) // cells, torch.zeros_like(wrong))
    return (fr, fc, tuple(tuple(row) for row in share.cpu().tolist()))


def _sample(m, rows_bad: list[int], bad, where: Where) -> tuple:
    """Where a pattern does not locate every wrong element (scattered, runs, whole rows past the
    five it names): the indices of at most SAMPLE of them, spread evenly over the wrong rows (at
    most SAMPLE_ROWS) and over each row's wrong columns, as indices into the whole output (the
    HTML's error map draws them). Reads at most SAMPLE_ROWS rows of the mask, never every wrong
    element's index (millions of them at a big point)."""
    step = -(-len(rows_bad) // SAMPLE_ROWS)
    rows = rows_bad[::step]
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


def _block(rows, cols, n_rows, n_cols, flat, where: Where) -> Pattern:
    last = where.symbols[-1] if where.symbols else None
    if flat:
        return Pattern("elements", cols=_span(cols, n_cols, last, where))
    span = None if len(cols) == n_cols else _span(cols, n_cols, last, where)
    return Pattern("block", cols=span, rows=("every",) if len(rows) == n_rows else _rows(rows, n_rows, where))


def _rows(rows, n_rows, where: Where) -> tuple:
    lead = len(where.symbols) - 2 if len(where.symbols) >= 2 else 0
    ids = where.row_ids.get(lead)
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
