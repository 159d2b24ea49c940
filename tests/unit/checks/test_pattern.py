"""checks/pattern.py: the typed Pattern of a mask (each kind and its boundaries), the tile a tail
of columns is the remainder of, indices back into a sampled output, and the sample and density
the HTML map draws (every sampled index a wrong element, every cell's share exact)."""
import json
import types

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from kladder.checks import pattern as pattern_mod
from kladder.checks.pattern import Where, describe, original_index, unravel, where_of
from kladder.core.outcome import Pattern, Span

MN = Where(("M", "N"))


def _mask(shape, *at):
    m = torch.zeros(shape, dtype=torch.bool)
    for i in at:
        m[i] = True
    return m


def test_a_scalar_and_an_all_wrong_mask():
    assert describe(torch.tensor(True), Where()) == Pattern("single")
    assert describe(torch.ones(3, 4, dtype=torch.bool), MN) == Pattern("every")
    assert describe(torch.ones(5, dtype=torch.bool), Where(("N",))) == Pattern("every")


def test_a_run_of_a_vector_is_elements_with_its_tile_remainder():
    p = describe(_mask((100,), slice(96, 100)), Where(("N",), {"N": (32, 16)}))
    assert p == Pattern("elements", cols=Span(96, 99, 100, ("N", 32, 4)))      # 100 % 32 = 4; 100 % 16 = 4 too: the first tile
    p = describe(_mask((100,), slice(10, 14)), Where(("N",), {"N": (32,)}))
    assert p == Pattern("elements", cols=Span(10, 13, 100, None))              # not at the end: no tile
    p = describe(_mask((100,), slice(97, 100)), Where(("N",), {"N": (32,)}))
    assert p.cols.tile_note is None                                            # 3 columns, but 100 % 32 = 4


def test_blocks_of_rows_name_every_one_from_and_range():
    m = torch.zeros(10, 8, dtype=torch.bool)
    m[:, 5:] = True
    assert describe(m, MN) == Pattern("block", cols=Span(5, 7, 8, None), rows=("every",))
    m = _mask((10, 8), 4)
    assert describe(m, MN) == Pattern("block", cols=None, rows=("one", 4))           # one whole row
    m = torch.zeros(10, 8, dtype=torch.bool)
    m[6:] = True
    assert describe(m, MN) == Pattern("block", cols=None, rows=("from", 6, 9))       # to the last row
    m = torch.zeros(10, 8, dtype=torch.bool)
    m[0:3, 2:4] = True
    assert describe(m, MN) == Pattern("block", cols=Span(2, 3, 8, None), rows=("range", 0, 2))
    m = torch.zeros(10, 8, dtype=torch.bool)
    m[0:10:9, 2:4] = True                                # rows 0 and 9: not contiguous, not every row: not a block
    assert describe(m, MN).kind != "block"


def test_a_three_dimensional_mask_folds_its_leading_dims_into_rows():
    m = torch.zeros(2, 3, 8, dtype=torch.bool)
    m[1, 2, 6:] = True                                   # flat row 5 of 6
    assert describe(m, Where(("B", "M", "N"))) == Pattern("block", cols=Span(6, 7, 8, None), rows=("one", 5))


def test_whole_rows_not_contiguous_keep_five_ids_and_sample_past_five():
    m = _mask((50, 4), 1, 3, 7)
    p = describe(m, MN)
    assert (p.kind, p.n_bad, p.n_rows, p.ids, p.checked) == ("whole_rows", 3, 50, (1, 3, 7), False)
    assert p.sample == () and p.density == ()                # three rows name every wrong element
    m = _mask((50, 4), 1, 3, 7, 9, 11, 13, 40)
    p = describe(m, MN)
    assert p.n_bad == 7 and p.ids == (1, 3, 7, 9, 11)
    assert p.sample and all(bool(m[i]) for i in p.sample) and p.density


def test_runs_of_rows_say_most_or_some_and_which_rows():
    m = torch.zeros(20, 10, dtype=torch.bool)
    m[4:7, ::2] = True                                   # half of rows 4..6
    p = describe(m, MN)
    assert (p.kind, p.rows, p.n_bad, p.n_total, p.most) == ("runs", ("range", 4, 6), 15, 30, True)
    m = torch.zeros(20, 10, dtype=torch.bool)
    m[4:7, ::3] = True                                   # 4 of 10 a row: not most
    assert describe(m, MN).most is False
    m = torch.zeros(20, 10, dtype=torch.bool)
    m[[1, 2, 8, 9, 15, 16], 0:10:2] = True               # three runs of rows
    assert describe(m, MN).rows == ("runs", ((1, 2), (8, 9), (15, 16)))
    m = torch.zeros(4, 10, dtype=torch.bool)
    m[:, ::2] = True
    assert describe(m, MN).rows == ("every",)


def test_four_runs_or_scattered_single_rows_are_scattered_with_the_first_index():
    m = torch.zeros(20, 10, dtype=torch.bool)
    m[[1, 2, 5, 6, 9, 10, 14, 15], 3] = True             # four runs: past three
    p = describe(m, MN)
    assert (p.kind, p.n_bad, p.n_total, p.first) == ("scattered", 8, 200, (1, 3))
    m = _mask((20, 10), (2, 1), (7, 4))                  # two single rows, no run of two
    p = describe(m, MN)
    assert (p.kind, p.first) == ("scattered", (2, 1))
    m = _mask((20, 10), (7, 4))                          # one element: one row, a run
    assert describe(m, MN) == Pattern("block", cols=Span(4, 4, 10, None), rows=("one", 7))


def test_sampled_rows_are_named_by_their_original_numbers():
    ids = {0: [0, 1, 500, 501, 900]}
    m = torch.zeros(5, 8, dtype=torch.bool)
    m[2:4] = True
    p = describe(m, Where(("M", "N"), {}, ids))
    assert p.rows == ("range", 500, 501)
    m = torch.zeros(5, 8, dtype=torch.bool)
    m[3:] = True                                         # to the last checked row: still a range, never "from"
    assert describe(m, Where(("M", "N"), {}, {0: [0, 1, 2, 998, 999]})).rows == ("range", 998, 999)
    assert describe(m, MN).rows == ("from", 3, 4)        # every row checked: from row 3 on
    m = _mask((5, 8), 0, 4)
    p = describe(m, Where(("M", "N"), {}, ids))
    assert p.kind == "whole_rows" and p.ids == (0, 900) and p.checked
    m = _mask((5, 8), (1, 3), (4, 0), (4, 5))
    p = describe(m, Where(("M", "N"), {}, ids))
    assert p.first == (1, 3) and p.density == ()         # the density of a sample is not the output's
    m = _mask((5, 8), (1, 3), (3, 2))
    assert describe(m, Where(("M", "N"), {}, ids)).first == (1, 3)


def test_unravel_and_original_index():
    assert unravel(0, (3, 4)) == (0, 0)
    assert unravel(11, (3, 4)) == (2, 3)
    assert unravel(13, (2, 3, 4)) == (1, 0, 1)
    assert unravel(5, ()) == ()
    assert unravel(0, (0, 4)) == (0, 0)                  # a zero-size dim: no division by zero
    assert original_index((1, 3), Where(row_ids={0: [10, 20]})) == (20, 3)
    assert original_index((1, 3), Where(row_ids={1: [0, 0, 0, 7]})) == (1, 7)
    assert original_index((1, 3), Where()) == (1, 3)


def test_the_density_is_the_share_of_each_cell_rounded_up():
    m = torch.zeros(64, 128, dtype=torch.bool)
    m[0, 0] = True                                       # 1 of a 2 x 2 cell's 4: 25%
    m[2:4, 2:4] = True                                   # a whole cell: 100%
    m[10:13, 100] = True
    m[40:41, 50:52] = True
    p = describe(m, MN)
    fr, fc, share = p.density
    assert (fr, fc) == (2, 2) and len(share) == 32 and len(share[0]) == 64
    assert share[0][0] == 25 and share[1][1] == 100 and share[0][1] == 0
    assert share[5][50] == 50 and share[6][50] == 25       # rows 10,11 of cell 5 and row 12 of cell 6
    assert share[20][25] == 50


def test_the_density_of_an_uneven_fold_divides_by_each_cells_own_size():
    m = torch.zeros(33, 65, dtype=torch.bool)            # 2 rows and 2 columns a cell; the last cells are 1 wide
    m[32, 64] = True                                     # alone in a 1 x 1 cell
    m[0, 1] = m[1, 2] = True
    fr, fc, share = describe(m, MN).density
    assert (fr, fc) == (2, 2) and len(share) == 17 and len(share[0]) == 33
    assert share[16][32] == 100 and share[0][0] == 25 and share[0][1] == 25
    m = torch.zeros(3, 5, dtype=torch.bool)
    m[0, 0] = m[2, 4] = True
    assert describe(m, MN).density[2][0][0] == 100       # 1 x 1 cells: a wrong element is 100%


def test_the_sample_is_bounded_and_spread_over_the_wrong_rows(monkeypatch):
    g = torch.Generator().manual_seed(0)
    m = torch.rand(130, 100, generator=g) < 0.3
    p = describe(m, MN)
    assert p.kind == "runs" and all(bool(m[i]) for i in p.sample)
    rows = sorted({i[0] for i in p.sample})
    assert rows == list(range(0, 130, 3))                # every 3rd wrong row: at most SAMPLE_ROWS (64) of 130
    assert len(p.sample) == 44 * 5                       # 256 // 44 = 5 wrong columns of each, spread over the row
    monkeypatch.setattr(pattern_mod, "SAMPLE", 10)
    assert len(describe(m, MN).sample) == 10             # never more than SAMPLE


def test_where_of_reads_the_symbols_and_tiles_of_a_spec():
    spec = types.SimpleNamespace(all_tensors={"y": types.SimpleNamespace(symbols=("M", "N"))},
                                 dims={"N": types.SimpleNamespace(tiles=(64, 16)), "K": types.SimpleNamespace(tiles=(8,))})
    w = where_of(spec, "y", {0: [3, 4]})
    assert w == Where(("M", "N"), {"N": (64, 16)}, {0: [3, 4]})
    assert where_of(spec, "y").row_ids == {}


def test_every_pattern_round_trips_to_strict_json():
    m = torch.zeros(40, 30, dtype=torch.bool)
    m[[1, 5, 9, 13, 17, 21, 25], :] = True
    for mask in (m, _mask((40, 30), (3, 4), (30, 7)), torch.ones(2, 2, dtype=torch.bool), _mask((30,), slice(20, 30))):
        p = describe(mask, Where(("M", "N"), {"N": (8,)}))
        assert Pattern.from_dict(json.loads(json.dumps(p.to_dict(), allow_nan=False))) == p


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 70), st.sampled_from([0.02, 0.3, 0.9]), st.integers(0, 2 ** 16))
def test_any_mask_gets_a_pattern_whose_located_indices_are_wrong_elements(rows, cols, share, seed):
    m = torch.rand(rows, cols, generator=torch.Generator().manual_seed(seed)) < share
    if not m.any():
        return
    p = describe(m, MN)
    assert all(bool(m[i]) for i in p.sample)
    if p.first:
        assert bool(m[p.first]) and p.first == tuple(int(x) for x in m.nonzero()[0])
    if p.n_bad and p.kind in ("whole_rows",):
        assert p.n_bad == int(m.all(1).sum())
    if p.kind in ("scattered", "runs"):
        assert p.n_bad == int(m.sum())
    if p.density:
        fr, fc, share = p.density
        share = torch.tensor(share)
        nr, nc = share.shape
        padded = torch.zeros(nr * fr, nc * fc, dtype=torch.bool)
        padded[:rows, :cols] = m
        any_wrong = padded.reshape(nr, fr, nc, fc).any(3).any(1)
        assert torch.equal(share > 0, any_wrong) and int(share.max()) <= 100     # a cell is marked iff it holds a wrong element


def test_a_big_masks_pattern_reads_a_bounded_number_of_indices(monkeypatch):
    """Each wrong row is never a Python int: a 2 GiB output's mask has millions of them (18 s on the
    CPU for a 2^30-element mask, and a copy to the host first on a GPU). Whatever the pattern, what
    describe reads to the host is bounded by the sample and the density's cells."""
    read = []
    real = torch.Tensor.tolist
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: (read.append(self.numel()), real(self))[1])
    g = torch.Generator().manual_seed(0)
    masks = {"runs": torch.rand(8192, 64, generator=g) > 0.01,                    # most elements of every row
             "whole_rows": torch.zeros(8192, 64, dtype=torch.bool),
             "scattered": torch.rand(8192, 64, generator=g) > 0.999}
    masks["whole_rows"][1::2] = True
    for kind, m in masks.items():
        read.clear()
        p = describe(m, MN)
        assert p.kind == kind
        assert max(read) <= max(pattern_mod.DENSITY_ROWS * pattern_mod.DENSITY_COLS, pattern_mod.SAMPLE)
        assert p.n_bad == (int(m.sum()) if kind != "whole_rows" else 4096)


def test_count_is_the_number_of_true_elements():
    m = torch.rand(37, 5, generator=torch.Generator().manual_seed(1)) > 0.5
    assert pattern_mod.count(m) == int(m.sum()) and pattern_mod.count(torch.zeros(3, dtype=torch.bool)) == 0
