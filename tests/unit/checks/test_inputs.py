"""checks/inputs.py directly: which inputs a snapshot takes and how (copy, hash, values; the
copies' one budget, smallest first), and what `changed` reports for each: the elements, the bytes
between a strided view's elements, padding left out, the hashed slabs' rows, a resized value;
and a backward's upstream gradients. An untouched input is never reported."""
import json

import pytest
import torch

import kladder as kl
from kladder.checks import inputs as inputs_mod
from kladder.checks.inputs import changed, snapshot, upstream_changed
from kladder.core.outcome import Check, Finding
from kladder.core.point import Point
from kladder.gen.materialize import Inputs, guarded_strided


def _kernel(a, b, c, o):
    return o


def _ref(a, b, c):
    return a


def _spec(a=None, **kw):
    return kl.Spec("t", kernel=_kernel, reference=_ref,
                   args={"a": a or kl.Tensor("M N", dtype="float32"), "b": kl.Tensor("N", dtype="float32"),
                         "c": kl.Tensor("M N", dtype="int32"), "o": kl.Out("M N", like="a")},
                   dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)}, **kw)


def _pt(m=6, n=20):
    return Point("t", 1, (("M", m), ("N", n)))


def _inputs(spec, pt, layouts=None, plain=()):
    """The point's inputs as materialize makes them (guarded, in a layout), but `plain` ones: a
    tensor with no guards (what build= returns that is no kl.Tensor)."""
    layouts = layouts or {}
    g = torch.Generator().manual_seed(0)
    args, guarded = [], {}
    for name in spec.args:
        shape = (pt.sizes["M"], pt.sizes["N"]) if name != "b" else (pt.sizes["N"],)
        dtype = "int32" if name == "c" else "float32"
        if name in plain:
            args.append(torch.randn(shape, generator=g))
            continue
        gd = guarded_strided(name, shape, dtype, "cpu", layouts.get(name, ""))
        data = torch.randint(-100, 100, shape, generator=g) if dtype == "int32" else torch.randn(shape, generator=g)
        (gd.view[:1] if layouts.get(name) == "broadcast" else gd.view).copy_(data[:1] if layouts.get(name) == "broadcast"
                                                                              else data)
        guarded[name] = gd
        args.append(gd.view)
    return Inputs(args, guarded)


def test_an_untouched_input_is_not_reported_in_any_way_of_snapshotting(monkeypatch):
    spec, pt = _spec(), _pt()
    inp = _inputs(spec, pt, {"a": "sliced"}, plain=("b",))
    for copy_bytes in (inputs_mod.SNAPSHOT_COPY_BYTES, 0):
        monkeypatch.setattr(inputs_mod, "SNAPSHOT_COPY_BYTES", copy_bytes)
        shots = snapshot(spec, inp, pt)
        inp.args[3].fill_(7)                                  # the output is written: never an input
        assert changed(spec, inp, pt, shots) == []


def test_the_snapshot_takes_the_inputs_in_the_args_order_and_copies_the_smallest_first(monkeypatch):
    spec, pt = _spec(), _pt(m=6, n=20)
    inp = _inputs(spec, pt, plain=("b",))
    shots = snapshot(spec, inp, pt)
    assert [(s.name, s.how) for s in shots] == [("a", "copy"), ("b", "values"), ("c", "copy")]    # no Out 'o'
    monkeypatch.setattr(inputs_mod, "SNAPSHOT_COPY_BYTES", 80 + 480)         # b (80 B), then a (480 B), not c
    inp = _inputs(spec, pt)
    assert [(s.name, s.how) for s in snapshot(spec, inp, pt)] == [("a", "copy"), ("b", "copy"), ("c", "hash")]
    monkeypatch.setattr(inputs_mod, "SNAPSHOT_COPY_BYTES", 80 + 480 - 1)     # b fits, then neither
    assert [(s.name, s.how) for s in snapshot(spec, inp, pt)] == [("a", "hash"), ("b", "copy"), ("c", "hash")]
    assert [s.name for s in snapshot(spec, inp, pt, skip=("a",))] == ["b", "c"]


def test_a_declared_mutation_is_not_snapshotted():
    spec, pt = _spec(a=kl.Tensor("M N", dtype="float32", mutated=True)), _pt()
    assert [s.name for s in snapshot(spec, _inputs(spec, pt), pt)] == ["b", "c"]


def test_a_changed_element_is_counted_and_located():
    spec, pt = _spec(), _pt(m=6, n=20)
    inp = _inputs(spec, pt)
    shots = snapshot(spec, inp, pt)
    inp.args[0][2, 19] += 1.0
    inp.args[2][:, 0] += 1                                     # an int32 input, a whole column
    a, c = changed(spec, inp, pt, shots)
    assert (a.check, a.output, a.mismatched, a.total) == (Check.INPUT_CHANGED, "a", 1, 120)
    assert a.pattern.kind == "block" and a.pattern.rows == ("one", 2) and a.pattern.cols.first == 19
    assert a.facts.how == "copy" and a.facts.gap_bytes == 0
    assert (c.output, c.mismatched) == ("c", 6) and c.pattern.cols.first == c.pattern.cols.last == 0
    assert Finding.from_dict(json.loads(json.dumps(a.to_dict(), allow_nan=False))) == a


def test_a_write_of_the_same_value_is_no_change_but_a_negative_zero_is():
    spec, pt = _spec(), _pt()
    inp = _inputs(spec, pt)
    inp.args[0].zero_()
    shots = snapshot(spec, inp, pt)
    inp.args[0][1, 1] = 0.0
    assert changed(spec, inp, pt, shots) == []
    inp.args[0][1, 1] = -0.0                                   # bit for bit: -0.0 is another input
    (f,) = changed(spec, inp, pt, shots)
    assert f.mismatched == 1


def test_a_write_between_a_strided_views_elements_is_gap_bytes_only():
    spec, pt = _spec(), _pt(m=4, n=20)
    inp = _inputs(spec, pt, {"a": "sliced"})
    shots = snapshot(spec, inp, pt)
    row0 = inp.args[0][0]
    gap = row0.as_strided((1,), (1,), row0.storage_offset() + 20)     # the element after row 0's last
    gap.view(torch.int32).fill_(0x11111111)                          # every byte unlike the poison there
    (f,) = changed(spec, inp, pt, shots)
    assert f.output == "a" and f.mismatched == 0 and f.facts.gap_bytes == 4 and f.pattern is None
    gap.view(torch.uint8)[1] = 0xDD if int(gap.view(torch.uint8)[1]) != 0xDD else 0xEE
    assert changed(spec, inp, pt, snapshot(spec, inp, pt)) == []       # a new snapshot: as it is now
    shots = snapshot(spec, inp, pt)
    gap.view(torch.uint8)[2] ^= 0xFF                                   # one byte of the gap
    (f,) = changed(spec, inp, pt, shots)
    assert f.facts.gap_bytes == 1


def test_a_broadcast_input_changed_shows_at_every_row():
    spec, pt = _spec(), _pt(m=5, n=20)
    inp = _inputs(spec, pt, {"a": "broadcast"})
    shots = snapshot(spec, inp, pt)
    inp.guarded["a"].view[0, 3] += 1.0                         # its one storage row
    (f,) = changed(spec, inp, pt, shots)
    assert f.mismatched == 5 and f.pattern.rows == ("every",) and f.pattern.cols.first == 3


def test_padding_holds_no_data_and_its_writes_are_not_reported():
    spec = kl.Spec("p", kernel=_kernel, reference=_ref,
                   args={"a": kl.Tensor("M 16", dtype="float32", valid=12), "b": kl.Tensor("N", dtype="float32"),
                         "c": kl.Tensor("M N", dtype="int32"), "o": kl.Out("M N", like="b")},
                   dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256)})
    pt = _pt(m=3, n=16)
    inp = _inputs(spec, pt)
    shots = snapshot(spec, inp, pt)
    inp.args[0][:, 12:] = 0.0
    assert changed(spec, inp, pt, shots) == []
    inp.args[0][1, 11] += 1.0                                  # the last valid column is data
    (f,) = changed(spec, inp, pt, shots)
    assert f.mismatched == 1 and f.pattern.cols.first == 11


def test_a_hashed_input_names_the_rows_of_its_changed_slab(monkeypatch):
    monkeypatch.setattr(inputs_mod, "SNAPSHOT_COPY_BYTES", 0)
    monkeypatch.setattr(inputs_mod, "HASH_SLAB_BYTES", 2 * 20 * 4)          # two rows a slab
    spec, pt = _spec(), _pt(m=7, n=20)
    inp = _inputs(spec, pt)
    shots = snapshot(spec, inp, pt)
    assert shots[0].how == "hash" and shots[0].slabs == [(0, 2), (2, 4), (4, 6), (6, 7)]
    inp.args[0][5, 0] += 1.0
    inp.args[0][6, 3] += 1.0
    (f,) = changed(spec, inp, pt, shots)
    assert f.facts.how == "hash" and (f.facts.slabs, f.facts.of) == (2, 4)
    assert (f.mismatched, f.total) == (3, 7)                          # rows 4..6: the slabs (4, 6) and (6, 7)
    assert f.pattern.kind == "elements" and (f.pattern.cols.first, f.pattern.cols.last) == (4, 6)


def test_a_hash_sees_two_elements_swapped():
    # the second sum weighs each word by its position: a permutation moves it
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(inputs_mod, "SNAPSHOT_COPY_BYTES", 0)
    try:
        spec, pt = _spec(), _pt(m=2, n=20)
        inp = _inputs(spec, pt)
        shots = snapshot(spec, inp, pt)
        a = inp.args[0]
        a[0, 0], a[0, 1] = a[0, 1].clone(), a[0, 0].clone()
        (f,) = changed(spec, inp, pt, shots)
        assert f.facts.how == "hash" and f.mismatched == 2
    finally:
        monkeypatch.undo()


def test_slabs_of_a_scalar_an_empty_and_a_wide_tensor():
    assert inputs_mod._slabs(torch.zeros(())) == [(0, 1)]
    assert inputs_mod._slabs(torch.zeros(0, 4)) == []
    wide = torch.zeros(3, 1)
    wide_row = inputs_mod.HASH_SLAB_BYTES // 4 + 1                          # a row past a slab: one row each
    assert inputs_mod._slabs(wide.expand(3, wide_row)) == [(0, 1), (1, 2), (2, 3)]
    h = inputs_mod._hashes(torch.tensor(3.0), [(0, 1)])
    assert h.shape == (1, 2)
    bools = torch.tensor([True, False])
    assert inputs_mod._hash(bools).tolist() != inputs_mod._hash(~bools).tolist()
    assert inputs_mod._hashes(torch.zeros(0, 4), []).shape == (0, 2)


def test_a_value_snapshot_reports_a_resize_and_a_changed_value():
    spec, pt = _spec(), _pt()
    inp = _inputs(spec, pt, plain=("b",))
    shots = snapshot(spec, inp, pt)
    inp.args[1][4] = float("nan")
    (f,) = changed(spec, inp, pt, shots)
    assert (f.output, f.facts.how, f.mismatched, f.total) == ("b", "values", 1, 20)
    inp.args[1] = torch.zeros(21)                              # replaced by one of another shape
    (f,) = changed(spec, inp, pt, shots)
    assert f.facts.resized == [[20], [21]] and f.mismatched == 0


def test_a_backward_must_leave_its_upstream_gradient_as_passed():
    spec = _spec()
    then = {"o": torch.ones(3, 4), "p": torch.ones(2)}
    now = {"o": torch.ones(3, 4), "p": torch.ones(3)}
    assert upstream_changed(spec, now, then) == []            # unchanged, or another shape: not judged here
    now["o"][1, 2] = 2.0
    (f,) = upstream_changed(spec, now, then)
    assert f.output == "upstream o" and f.facts.upstream and f.mismatched == 1 and f.pattern.rows == ("one", 1)
    assert upstream_changed(spec, {}, then) == []


def test_a_row_past_a_slab_is_hashed_a_slab_of_words_at_a_time_to_the_same_sums(monkeypatch):
    # RoPE's q at its 2 GiB point: 16 rows of 128 MiB; each row's words widened to int64 a slab at a time
    g = torch.Generator().manual_seed(3)
    t = torch.randint(-2**31, 2**31 - 1, (3, 1000), dtype=torch.int32, generator=g)
    w = t.reshape(-1).to(torch.int64)
    whole = [int(w.sum()), int((w * torch.arange(1, w.numel() + 1)).sum())]
    big = torch.full((300,), 2 ** 62, dtype=torch.int64)                   # sums past int64: they wrap alike
    wrapped = [int(big.sum()), int((big * torch.arange(1, big.numel() + 1)).sum())]
    monkeypatch.setattr(inputs_mod, "HASH_SLAB_BYTES", 8 * 64)             # 64 words a step: 47 steps
    made, arange = [], torch.arange

    def counted(*a, **k):
        r = arange(*a, **k)
        made.append(r.numel())
        return r
    monkeypatch.setattr(torch, "arange", counted)
    assert inputs_mod._hash(t).tolist() == whole
    assert max(made) == 64 and len(made) == 47                             # positions made a step at a time
    assert inputs_mod._hash(big).tolist() == wrapped
