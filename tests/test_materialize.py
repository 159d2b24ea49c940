"""Guards, poison and seeded inputs."""
import torch

import kladder as kl
from kladder.gen.materialize import GUARD_BYTES, SNAN_BITS, guarded_empty, materialize, poison, reference_args
from kladder.core.point import Point


def test_guards_see_a_write_one_past_the_end_and_one_before():
    g = guarded_empty("y", (10,), "float32", "cpu")
    assert g.damaged() == ([], [])
    g.buf[GUARD_BYTES + 40] = 0                    # the first byte after the tensor
    g.buf[GUARD_BYTES - 1] = 0                     # the last byte before it
    before, after = g.damaged()
    assert after == [0] and before == [1]


def test_guarded_view_is_aligned_and_shaped():
    g = guarded_empty("y", (3, 5), "bfloat16", "cpu")
    assert g.view.shape == (3, 5) and g.view.dtype == torch.bfloat16
    assert g.view.data_ptr() % 16 == 0 or (g.view.data_ptr() - g.buf.data_ptr()) % 16 == 0


def test_poison_is_a_signalling_nan_and_int_pattern():
    for dtype, torch_dtype, ibits in (("float32", torch.float32, torch.int32), ("bfloat16", torch.bfloat16, torch.int16),
                                       ("float16", torch.float16, torch.int16), ("float64", torch.float64, torch.int64)):
        t = torch.zeros(4, dtype=torch_dtype)
        poison(t, dtype)
        assert t.isnan().all()
        assert (t.view(ibits).to(torch.int64) & ((1 << (8 * t.element_size())) - 1) == SNAN_BITS[dtype]).all()
    t = torch.zeros(4, dtype=torch.int32)
    poison(t, "int32")
    assert (t.view(torch.uint8) == 0xA5).all()


def _spec():
    return kl.Spec("axpy", kernel=lambda x, y, a, out: None, reference=lambda x, y, a: a * x + y,
                   args={"x": kl.Tensor("N", dtype="float32"), "y": kl.Tensor("N", like="x"), "a": 2.0,
                         "out": kl.Out("N", like="x")},
                   dims={"N": kl.Dim(1, 64)})


def test_materialize_is_seeded_and_poisons_out_args():
    s = _spec()
    p = Point("axpy", 1, (("N", 7),))
    a, b = materialize(s, p, "cpu"), materialize(s, p, "cpu")
    assert torch.equal(a.args[0], b.args[0]) and not torch.equal(a.args[0], a.args[1])
    assert a.args[2] == 2.0
    assert a.outs["out"].isnan().all()
    refs = reference_args(s, a)
    assert [r.dtype for r in refs[:2]] == [torch.float64, torch.float64] and refs[2] == 2.0
    assert refs[0].data_ptr() != a.args[0].data_ptr()


def test_reference_args_can_take_selected_rows_only():
    s = _spec()
    inputs = materialize(s, Point("axpy", 1, (("N", 9),)), "cpu")
    rows = torch.tensor([0, 8])
    refs = reference_args(s, inputs, {0: (0, rows)})
    assert refs[0].shape == (2,) and refs[1].shape == (9,)


def test_one_fused_compare_sees_a_hit_on_any_guard_of_a_point():
    from kladder.gen.materialize import any_damaged
    gs = [guarded_empty(n, (7, 3), "float16", "cpu") for n in "abc"]
    assert not any_damaged(gs)
    gs[1].buf[GUARD_BYTES + 7 * 3 * 2 + 5] ^= 0xFF        # a byte past the end of the second
    assert any_damaged(gs) and gs[1].damaged() == ([], [5])
    gs[1].buf[GUARD_BYTES + 7 * 3 * 2 + 5] ^= 0xFF
    gs[2].buf[GUARD_BYTES - 1] ^= 0x01                      # the byte just before the third
    assert any_damaged(gs) and gs[2].damaged() == ([1], [])


def test_a_contiguous_input_is_filled_in_place_with_the_same_values():
    import kladder as kl
    from kladder.core.point import Point
    spec = kl.Spec("t", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 8), "N": kl.Dim(1, 8)})
    p = Point("t", 2, (("M", 4), ("N", 6)), values=(("x", "ties"),))
    plain = materialize(spec, p, "cpu").args[0]
    moved = materialize(spec, Point("t", 3, (("M", 4), ("N", 6)), layouts=(("x", "offset"),), seed=p.seed), "cpu").args[0]
    g = torch.Generator().manual_seed(p.seed)
    want = torch.empty(4, 6)
    from kladder.gen.fill import fill_kind
    fill_kind(want, "ties", "float32", g)
    assert torch.equal(plain, want)
    assert moved.storage_offset() > 0 and torch.equal(moved, materialize(spec, Point("t", 3, (("M", 4), ("N", 6)), seed=p.seed), "cpu").args[0])


def test_the_reference_leaves_the_device_only_when_short_or_at_a_big_point_that_would_crowd_it(monkeypatch):
    from kladder.gen.rows import plan_rows
    from kladder.run import harness
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (140 << 30, 141 << 30))
    gemm = kl.Spec("g", kernel=torch.matmul, reference=torch.matmul,
                   args={"a": kl.Tensor("M K", dtype="bfloat16"), "b": kl.Tensor("K N", like="a")},
                   returns=kl.Tensor("M N", like="a"), dims={"M": kl.Dim(1, 1 << 20), "N": kl.Dim(1, 1 << 16), "K": kl.Dim(1, 64)})
    big = Point("g", 1, (("M", 65536), ("N", 32768), ("K", 64)))       # a 4 GiB output, no rows to sample
    small = Point("g", 1, (("M", 4096), ("N", 4096), ("K", 64)))      # its float64 copies are 4 x its bytes, and fit
    # its copies and a draw (32 GiB) are 8 x its bytes but under a quarter of 140 GiB free: the device
    assert harness.reference_device(gemm, big, "cuda", {}) == "cuda"
    assert harness.reference_device(gemm, small, "cuda", {}) == "cuda"
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (100 << 30, 141 << 30))  # over a quarter of 100 GiB
    assert harness.reference_device(gemm, big, "cuda", {}) == "cpu"
    assert harness.reference_device(gemm, small, "cuda", {}) == "cuda"
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (1 << 28, 141 << 30))   # 256 MiB free
    assert harness.reference_device(gemm, small, "cuda", {}) == "cpu"
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (140 << 30, 141 << 30))
    rows = kl.Spec("r", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="bfloat16")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 1 << 22), "N": kl.Dim(1, 16384)}, rows="M")
    sampled = Point("r", 1, (("M", 131073), ("N", 16384)))
    select, _, checked = plan_rows(rows, sampled, "cpu")
    assert checked is not None and harness.reference_device(rows, sampled, "cuda", select) == "cuda"
    assert harness.reference_device(gemm, big, "cpu", {}) == "cpu"
