"""Pictures for the HTML report, drawn with matplotlib (Agg, no display) to PNG and returned
as data: URIs, so that the page needs no file and no network.

An error map is drawn from a finding's `where` (outcome.Pattern as data) over the output's
shape (facts.shape): the output seen as rows x columns (every dim but the last flattened into
rows), folded to at most MAX_ROWS x MAX_COLS cells (a cell is wrong when any element in it
is), the tile grid where the pattern names the tile whose remainder the wrong columns are,
the worst element marked, and the first row past each 2^31 / 2^32 size cliff the output
crosses (facts.cliffs, dashed). Where the pattern does not locate every wrong element (rows
beyond the five ids a whole_rows pattern keeps, the elements of a runs or scattered pattern),
its `sample` (up to 256 wrong elements spread evenly over the wrong rows) is drawn, and how many
are left undrawn is said under the map: never made up."""
from __future__ import annotations

import base64
import io
import math

MAX_ROWS, MAX_COLS = 160, 320
MAX_TILE_LINES = 64
PLAIN = {**{c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f]}, ord("$"): "\\$"}   # controls as \xNN; $ is no mathtext
OK, SOME, WRONG = 0, 1, 2
LABEL = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}   # a cliff's label, legible over red


def _plain(text: str) -> str:
    """A user's string as matplotlib draws it literally: no mathtext ($...$), no control characters."""
    return text.translate(PLAIN)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)        # a fixed layout: bbox_inches="tight" draws the figure twice
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plt():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _row_ranges(rows, n_rows: int) -> list[tuple[int, int]]:
    if not rows or rows[0] == "every":
        return [(0, n_rows - 1)]
    if rows[0] == "one":
        return [(rows[1], rows[1])]
    if rows[0] in ("from", "range"):
        return [(rows[1], rows[2])]
    if rows[0] == "runs":
        return [tuple(r) for r in rows[1]]
    return []


def grid(where: dict, shape: list[int]):
    """(cells: list of rows of OK/SOME/WRONG, fold (rows, cols per cell), n_rows, n_cols, unlocated: str facts)."""
    n_cols = shape[-1] if shape else 1
    n_rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
    n_cols, n_rows = max(n_cols, 1), max(n_rows, 1)
    fr, fc = -(-n_rows // MAX_ROWS), -(-n_cols // MAX_COLS)
    h, w = -(-n_rows // fr), -(-n_cols // fc)
    cells = [[OK] * w for _ in range(h)]
    unlocated = {}

    def mark(r0, r1, c0, c1, level=WRONG):
        for r in range(max(r0, 0) // fr, min(r1, n_rows - 1) // fr + 1):
            for c in range(max(c0, 0) // fc, min(c1, n_cols - 1) // fc + 1):
                cells[r][c] = max(cells[r][c], level)

    def dot(index) -> None:                      # one wrong element, by its index into the output
        r = _flat_row(list(index), shape)
        mark(r, r, index[-1], index[-1])

    kind = where.get("kind")
    cols = where.get("cols") or {}
    c0, c1 = (cols["first"], cols["last"]) if cols else (0, n_cols - 1)
    # an even sample of the wrong elements the kind does not locate (checks/pattern._sample)
    sample = {tuple(i) for i in where.get("sample") or () if len(i) == len(shape)}
    if kind in ("every", "single"):
        mark(0, n_rows - 1, 0, n_cols - 1)
    elif kind == "elements":
        mark(0, 0, c0, c1)
    elif kind == "block":
        for a, b in _row_ranges(where.get("rows"), n_rows):
            mark(a, b, c0, c1)
    elif kind == "whole_rows":
        rows = set(where.get("ids") or ()) | {_flat_row(list(i), shape) for i in sample}
        for r in rows:
            mark(r, r, 0, n_cols - 1)
        unlocated["rows_not_located"] = max(where.get("n_bad", 0) - len(rows), 0)
    elif kind == "runs":
        for a, b in _row_ranges(where.get("rows"), n_rows):
            mark(a, b, 0, n_cols - 1, SOME)
        for i in sample:
            dot(i)
    elif kind == "scattered":
        first = tuple(where.get("first") or ())
        drawn = sample | ({first} if first else set())
        for i in drawn:
            dot(i)
        unlocated["elements_not_located"] = max(where.get("n_bad", 0) - len(drawn), 0)
        unlocated["elements_drawn"] = len(drawn)
    return cells, (fr, fc), n_rows, n_cols, unlocated


def _flat_row(index: list[int], shape: list[int]) -> int:
    """The row (every dim but the last flattened) of an index."""
    row = 0
    for i, n in zip(index[:-1], shape[:-1], strict=True):
        row = row * n + i
    return row


def _ticks(n: int) -> list[int]:
    """Element positions for an axis of n: whole numbers, at most about 8 of them."""
    step, scale = 1, 1
    while n / step > 8:                  # 1, 2, 5, 10, 20, 50, ...
        step = next(m * scale for m in (1, 2, 5, 10) if m * scale > step)
        scale *= 10 if step == 10 * scale else 1
    return list(range(0, n, step))


def cliff_marks(cliffs: list | None, n_rows: int, n_cols: int) -> list[dict]:
    """Where each size cliff the output crosses (facts.cliffs: [bits, unit, element]) is marked:
    the first row that starts at or past it (a row-major output of rows x columns), or, for an
    output of one row, the first column past it. Cliffs that share a row are marked once."""
    marks: dict[tuple, dict] = {}
    for c in cliffs or ():
        if not (isinstance(c, list) and len(c) == 3 and isinstance(c[2], int)):
            continue
        bits, unit, first = c
        label = f"2^{bits} {unit}"
        if n_rows > 1:
            row = -(-first // n_cols)
            if row < n_rows:
                marks.setdefault(("row", row), {"axis": "row", "at": row, "labels": []})["labels"].append(label)
        elif first < n_cols:
            marks.setdefault(("col", first), {"axis": "col", "at": first, "labels": []})["labels"].append(label)
    return list(marks.values())


def density(where: dict, shape: list[int]):
    """The pattern's density (checks/pattern._density) as (cells of percents, (rows, cols) a cell),
    or None where the pattern has none or it does not fit the output's shape."""
    d = where.get("density")
    if not (isinstance(d, list) and len(d) == 3 and isinstance(d[0], int) and isinstance(d[1], int) and d[2]):
        return None
    n_cols = max(shape[-1] if shape else 1, 1)
    n_rows = max(math.prod(shape[:-1]) if len(shape) > 1 else 1, 1)
    cells = d[2]
    if len(cells) != -(-n_rows // d[0]) or any(len(r) != -(-n_cols // d[1]) for r in cells):
        return None
    return cells, (d[0], d[1])


def error_map(where: dict | None, shape: list | None, worst: list | None, title: str,
              cliffs: list | None = None) -> dict | None:
    """{"png": data URI, "fold": [rows, cols], "unlocated": {...}, "cliffs": [...], "density":
    bool} or None (nothing to draw). A pattern with a density (a dense or scattered failure,
    the output checked whole) is drawn as the share of wrong elements in each cell, with its
    colour bar; any other as wrong, partly wrong and right cells."""
    if not where or not shape or not isinstance(shape, list) or not all(isinstance(n, int) for n in shape):
        return None
    cells, (fr, fc), n_rows, n_cols, unlocated = grid(where, shape)
    shares = density(where, shape)
    if shares is not None:
        cells, (fr, fc) = shares
        unlocated = {}
    plt = _plt()
    from matplotlib.colors import LinearSegmentedColormap, ListedColormap
    h, w = len(cells), len(cells[0])
    fig, ax = plt.subplots(figsize=(min(9, 4 + w / 40) + (1.2 if shares else 0), min(5, 2.2 + h / 40)))
    fig.subplots_adjust(left=0.2, right=0.86 if shares else 0.97, bottom=0.24, top=0.86)
    ax.set_xticks(_ticks(n_cols))
    ax.set_yticks(_ticks(n_rows))
    extent = (-0.5 * fc, w * fc - 0.5 * fc, h * fr - 0.5 * fr, -0.5 * fr)
    if shares is not None:
        # 1% a pale orange, 100% the red of a wholly wrong cell in the other maps
        cmap = LinearSegmentedColormap.from_list("wrong", ["#fbe3cf", "#f4b183", "#c0392b"]).with_extremes(
            under="#e8f1e4")                      # no wrong element in the cell
        image = ax.imshow(cells, cmap=cmap, vmin=0.5, vmax=100, aspect="auto", interpolation="nearest", extent=extent)
        bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02, ticks=[1, 25, 50, 75, 100])
        bar.set_label("wrong elements in a cell (%)", fontsize=8)
        bar.ax.tick_params(labelsize=7)
    else:
        ax.imshow(cells, cmap=ListedColormap(["#e8f1e4", "#f4b183", "#c0392b"]), vmin=0, vmax=2, aspect="auto",
                  interpolation="nearest", extent=extent)
    note = (where.get("cols") or {}).get("tile_note")
    if note:
        _, tile, rem = note
        edges = list(range(tile, n_cols, tile))
        if len(edges) > MAX_TILE_LINES:         # too many to see: the one where the partial last tile starts
            edges = [n_cols - rem] if rem else []
        if edges:
            ax.vlines([x - 0.5 for x in edges], -0.5, n_rows - 0.5, colors="#333", lw=0.8, linestyles=":")
    marks = cliff_marks(cliffs, n_rows, n_cols)
    for m in marks:                            # the first row (column) past each size cliff, dashed
        text = _plain(" / ".join(m["labels"]))
        if m["axis"] == "row":
            ax.axhline(m["at"] - 0.5, color="#102a43", lw=1.6, ls="--")
            ax.text(n_cols - 0.5, m["at"] - 0.5, text, color="#102a43", fontsize=7, ha="right", va="bottom", bbox=LABEL)
        else:
            ax.axvline(m["at"] - 0.5, color="#102a43", lw=1.6, ls="--")
            ax.text(m["at"] - 0.5, -0.5, text, color="#102a43", fontsize=7, ha="left", va="top", rotation=90, bbox=LABEL)
    if worst and len(worst) == len(shape):
        ax.plot([worst[-1]], [_flat_row(worst, shape)], marker="x", ms=9, mew=2, color="black")
    ax.set_xlabel(f"column (0..{n_cols - 1})" + (f", {fc} a cell" if fc > 1 else ""))
    ax.set_ylabel(f"row (0..{n_rows - 1})" + (f", {fr} a cell" if fr > 1 else ""))
    ax.set_title(_plain(title), fontsize=9)
    return {"png": _png(fig), "fold": [fr, fc], "rows": n_rows, "cols": n_cols, "unlocated": unlocated,
            "tile": note[1] if note else None, "cliffs": marks, "density": shares is not None}


def rate_curve(curve: list, title: str) -> str | None:
    """Rung 5's calls-to-see curve: P(a failure shows within N calls), with its interval."""
    pts = [c for c in curve or () if isinstance(c, list) and len(c) == 4 and all(isinstance(v, (int, float)) for v in c)]
    if not pts:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 2.8))
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.2, top=0.88)
    n = [c[0] for c in pts]
    ax.fill_between(n, [c[2] for c in pts], [c[3] for c in pts], color="#f4b183", alpha=0.6, label="interval")
    ax.plot(n, [c[1] for c in pts], color="#c0392b", label="P(seen)")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("calls")
    ax.set_ylabel("P(a wrong call among them)")
    ax.set_title(_plain(title), fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)
