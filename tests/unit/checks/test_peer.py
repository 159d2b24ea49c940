"""checks/peer.py: the honest peer's pure functions: the inputs lowered, perturbed and re-rounded,
the spread's accumulation, the budgets' units and caps, the peer's errors, and the backward's own
roundings (which results move, by how much, and which never do)."""
import math

import pytest
import torch

from kladder.checks import peer

aten = torch.ops.aten
U16, U32 = peer.UNIT_ROUNDOFF["float16"], peer.UNIT_ROUNDOFF["float32"]


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _under(gen, unit):
    """An op run as peer.backward_rounding's mode runs it (its __torch_dispatch__), called directly:
    entering the mode would import torch._dynamo (seconds) at its first op, as torch wraps the method
    in dynamo's disable (run/settings.py reaches the unwrapped function the same way)."""
    mode = peer.backward_rounding(gen, unit)
    raw = type(mode).__dict__["__torch_dispatch__"]
    raw = getattr(raw, "__wrapped__", raw)
    return lambda func, *args, **kwargs: raw(mode, func, (), args, kwargs)


def test_lowered_casts_each_upcast_copy_back_exactly_and_leaves_the_rest():
    half = torch.randn(64, generator=_gen()).to(torch.float16)
    ids = torch.arange(5)
    low = peer.lowered([half.double(), ids, 3.0, half.double()], ["float16", "int64", None, ""])
    assert low[0].dtype == torch.float16 and torch.equal(low[0], half)
    assert low[1] is ids and low[2] == 3.0
    assert low[3].dtype == torch.float64                   # no dtype given: as it was


def test_a_perturbed_draw_moves_each_element_by_a_gaussian_unit_roundoff_of_its_own_dtype():
    a = 1 + torch.rand(20000, generator=_gen(), dtype=torch.float64)
    ids = torch.arange(3)
    (moved, same) = peer.perturbed([a, ids], ["float16", "int64"], _gen(1))
    rel = (moved - a) / a / U16
    assert same is ids and moved.dtype == torch.float64
    assert abs(float(rel.mean())) < 0.05 and 0.95 < float(rel.std()) < 1.05     # N(0, 1) in units of u
    (again,) = peer.perturbed([a], ["float16"], _gen(1))
    assert torch.equal(again, moved)                                          # the generator decides the draw
    (other,) = peer.perturbed([a], ["float32"], _gen(1))
    assert 0.9 < float(((other - a) / a).std() / U32) < 1.1                   # float32's unit for a float32 input
    (untouched,) = peer.perturbed([a], ["int8"], _gen(1))
    assert untouched is a


def test_a_rerounded_input_is_a_value_of_its_dtype_held_in_the_references():
    a = torch.randn(4096, generator=_gen(), dtype=torch.float64).to(torch.bfloat16).double()
    (fresh,) = peer.rerounded([a], ["bfloat16"], _gen(2))
    assert fresh.dtype == torch.float64
    assert torch.equal(fresh.to(torch.bfloat16).double(), fresh)            # exactly representable
    changed = float((fresh != a).double().mean())
    assert changed > 0.9                                                     # RE_ROUND units of u: most move an ulp or more
    assert float(((fresh - a) / a).abs().max()) < 8 * peer.RE_ROUND * peer.UNIT_ROUNDOFF["bfloat16"]


def test_the_spread_accumulates_squared_moves_and_is_their_rms():
    ref = torch.zeros(3, dtype=torch.float64)
    acc = peer.add_draw(None, torch.tensor([1.0, 2.0, 0.0]), ref)
    assert acc.dtype == torch.float32 and acc.tolist() == [1.0, 4.0, 0.0]
    acc = peer.add_draw(acc, torch.tensor([3.0, 0.0, 0.0], dtype=torch.float64), ref)
    assert acc.tolist() == [10.0, 4.0, 0.0]
    assert peer.add_draw(acc, torch.zeros(4), ref) is acc                    # another shape: not a draw
    assert peer.add_draw(acc, torch.ones(1), ref) is acc                     # nor one that would broadcast
    assert peer.add_draw(None, torch.ones(1, 3), ref) is None
    assert peer.add_draw(acc, None, ref) is acc                              # no output: not a draw
    assert peer.spread(acc, 2).tolist() == pytest.approx([math.sqrt(5), math.sqrt(2), 0.0])
    assert peer.spread(None, 16) is None
    assert peer.spread(torch.tensor([4.0]), 0).tolist() == [2.0]             # no draws counted as one


def test_a_non_finite_draw_makes_the_spread_non_finite_and_rounding_counts_it_zero():
    ref = torch.zeros(2, dtype=torch.float64)
    acc = peer.add_draw(None, torch.tensor([float("inf"), 1.0]), ref)
    sp = peer.spread(acc, 1)
    assert math.isinf(sp[0]) and sp[1] == 1.0
    scale = torch.tensor([2.0, 0.0], dtype=torch.float64)
    s = peer.rounding(sp, scale, "float16")
    assert s.tolist() == pytest.approx([U16 * 2.0, 1.0])                    # the output's own rounding only, where inf


def test_rounding_adds_the_outputs_own_rounding_in_quadrature():
    scale = torch.tensor([1.0, 100.0], dtype=torch.float64)
    assert peer.rounding(None, scale, "float32").tolist() == pytest.approx([U32, 100 * U32])
    s = peer.rounding(torch.tensor([3 * U32, 0.0]), scale, "float32")
    assert s.tolist() == pytest.approx([math.sqrt(10) * U32, 100 * U32])
    assert peer.rounding(None, scale, "int32").tolist() == [0.0, 0.0]      # no rounding unit: none added


def test_unit_of_is_the_largest_unit_roundoff_of_the_floating_inputs():
    assert peer.unit_of(["float32", "bfloat16", "int64"]) == peer.UNIT_ROUNDOFF["bfloat16"]
    assert peer.unit_of(["float64"]) == 2.0 ** -53
    assert peer.unit_of(["int32", None]) == 0.0 and peer.unit_of([]) == 0.0


def test_peer_errors_count_only_finite_elements_with_a_spread():
    ref = torch.tensor([1.0, 1.0, 1.0, 1.0, float("nan")], dtype=torch.float64)
    p = torch.tensor([1.5, 0.0, float("inf"), 3.0, 1.0], dtype=torch.float32)
    s = torch.tensor([0.5, 0.25, 1.0, 0.0, 1.0], dtype=torch.float64)
    largest, sq, n = peer.peer_errors(p, ref, s)
    assert (largest, sq, n) == (4.0, 1.0 + 16.0, 2)                         # 1/0.25 = 4; inf peer, s = 0, NaN ref skipped
    assert peer.peer_errors(torch.zeros(0), torch.zeros(0, dtype=torch.float64), torch.zeros(0)) == (0.0, 0.0, 0)


def test_the_tail_factor_is_the_rms_at_the_largest_of_n_gaussians():
    assert peer.tail_factor(1.0, 4.0, 4, 1000) == pytest.approx(math.sqrt(2 * math.log(2000)))
    assert peer.tail_factor(9.0, 4.0, 4, 1000) == 9.0
    assert peer.tail_factor(1.0, 4.0, 4, 0) == pytest.approx(math.sqrt(2 * math.log(2)))    # at least one element
    assert peer.tail_factor(0.5, 1.0, 1, 10) < peer.tail_factor(0.5, 1.0, 1, 10 ** 6)     # more elements, further tail


def test_the_peer_cap_is_eight_times_the_rest_or_half_the_digits():
    rest = torch.tensor([1e-6, 1e-1], dtype=torch.float64)
    scale = torch.tensor([1.0, 1.0], dtype=torch.float64)
    cap = peer.peer_cap(rest, scale, "float32")
    assert cap.tolist() == pytest.approx([math.sqrt(U32), 0.8])
    assert peer.peer_cap(rest, scale, "int8").tolist() == pytest.approx([8e-6, 0.8])     # no digits: 8 x the rest


def test_the_backwards_accumulation_unit_is_float32s_or_finer():
    assert peer.acc_unit(U16) == peer.ACC_UNIT
    assert peer.acc_unit(2.0 ** -53) == 2.0 ** -53
    assert peer.acc_unit(0.0) == peer.ACC_UNIT


def test_the_backward_rounding_moves_an_ops_result_by_its_unit_of_itself():
    x = 1 + torch.rand(20000, generator=_gen(), dtype=torch.float64)
    unit = 1e-3
    y = _under(_gen(3), unit)(aten.mul.Tensor, x, 2.0)
    rel = (y - 2 * x) / (2 * x) / unit
    assert 0.95 < float(rel.std()) < 1.05 and abs(float(rel.mean())) < 0.05


def test_copies_views_and_sign_changes_are_not_roundings():
    x = torch.randn(100, generator=_gen(), dtype=torch.float64)
    op = _under(_gen(3), 1e-3)
    c, v, n = op(aten.clone.default, x), op(aten.view.default, x, [10, 10]), op(aten.neg.default, x)
    w, z = op(aten.where.self, x > 0, x, torch.zeros(())), op(aten.zeros_like.default, x)
    a = op(aten.abs.default, x)
    x2 = x.clone()
    op(aten.mul_.Tensor, x2, 1.0)                          # an in-place op is rounded in place (mul_ is not a copy)
    assert not torch.equal(x2, x)
    assert torch.equal(c, x) and torch.equal(v.reshape(-1), x) and torch.equal(n, -x)
    assert torch.equal(w, torch.where(x > 0, x, 0.0)) and not z.any() and torch.equal(a, x.abs())


def test_a_non_finite_result_is_not_moved_and_an_integer_one_never():
    x = torch.tensor([float("inf"), float("nan"), 1.0], dtype=torch.float64)
    i = torch.arange(4)
    op = _under(_gen(3), 1e-3)
    y, j = op(aten.mul.Tensor, x, 2.0), op(aten.mul.Tensor, i, 2)
    assert y[0] == float("inf") and y[1].isnan() and y[2] != 2.0
    assert j.tolist() == [0, 2, 4, 6]


def test_a_reduction_moves_by_the_sum_of_its_terms_magnitudes_whatever_they_cancel_to():
    # rows of [1, -1, 1, -1]: each sums to 0 from terms of total size 4; any order of the sum may
    # round by up to unit x sqrt(n - 1) x 4
    t = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64).repeat(4000, 1)
    unit = 1e-3
    op = _under(_gen(4), unit)
    s, m = op(aten.sum.dim_IntList, t, [1]), op(aten.mean.dim, t, [1])
    assert 0.9 < float(s.std()) / (unit * 4 * math.sqrt(3)) < 1.1
    assert 0.9 < float(m.std()) / (unit * math.sqrt(3)) < 1.1              # a mean: the terms' mean magnitude
    a = torch.ones(2000, 8, dtype=torch.float64)
    b = torch.tensor([[1.0], [-1.0]] * 4, dtype=torch.float64)
    mm = _under(_gen(5), unit)(aten.mm.default, a, b)                    # 8 terms of size 1 cancelling to 0
    assert 0.9 < float(mm.std()) / (unit * 8 * math.sqrt(7)) < 1.1


def test_reduced_reads_the_terms_of_sum_mean_and_matrix_products_only():
    t = torch.tensor([[1.0, -2.0], [3.0, -4.0]], dtype=torch.float64)
    n, mag = peer._reduced(aten.sum.dim_IntList, (t, [1]), {}, torch.zeros(2))
    assert n == 2 and mag.tolist() == [3.0, 7.0]
    n, mag = peer._reduced(aten.sum.default, (t,), {}, torch.zeros(()))
    assert n == 4 and float(mag) == 10.0
    n, mag = peer._reduced(aten.mean.dim, (t, [0], True), {}, torch.zeros(1, 2))
    assert n == 2 and mag.tolist() == [[2.0, 3.0]]
    b = torch.ones(2, 3, dtype=torch.float64)
    n, mag = peer._reduced(aten.addmm.default, (torch.zeros(2, 3), t, b), {}, torch.zeros(2, 3))
    assert n == 2 and mag[0].tolist() == [3.0, 3.0, 3.0]
    assert peer._reduced(aten.mul.Tensor, (t, t), {}, t) is None
