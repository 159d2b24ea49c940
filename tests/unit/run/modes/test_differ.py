"""run/modes/differ.py's torch path (the CPU's): per call, the elements whose bits differ from
the first call on the same input set and those beyond twice the tolerance, at the boundary, for
signed zeros, NaNs and infinities, integer outputs, and rings over several input sets. (The
fused Triton pass is held to these counts in tests/test_rung5.py.)"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kladder as kl
from kladder.core.point import Point
from kladder.run.modes.differ import FAR, Differ


def _spec(dtype="float32", tolerance=None):
    return kl.Spec("p", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", dtype=dtype), dims={"N": kl.Dim(1, 64)}, tolerance=tolerance)


POINT = Point("p", 5, (("N", 4),))


def _differ(bases, dtype="float32", tolerance=(0.0, 0.25), interpreted=False):
    return Differ(_spec(dtype, tolerance), POINT, [{"out": b} for b in bases], interpreted)


def test_the_boundary_is_twice_the_tolerance_exclusive():
    d = _differ([torch.zeros(4)])
    assert FAR == 2.0 and torch.equal(d.allowed["out"], torch.full((1, 4), 0.5))
    just_over = torch.nextafter(torch.tensor(0.5), torch.tensor(1.0))
    ring = torch.tensor([[0.0, 0.0, 0.0, 0.0], [0.5, -0.5, 0.0, 0.0], [float(just_over), 0.0, 0.0, -1.0]])
    bits, far = d.compare({"out": ring})
    assert bits["out"].tolist() == [0, 2, 2] and far["out"].tolist() == [0, 0, 2]
    assert bits["out"].dtype == far["out"].dtype == torch.int32


def test_signed_zeros_nans_and_infinities():
    inf, nan = float("inf"), float("nan")
    d = _differ([torch.tensor([0.0, nan, inf, 1.0])])
    nan_other = torch.tensor([nan]).view(torch.int32).add(1).view(torch.float32).item()   # another NaN payload
    ring = torch.tensor([
        [-0.0, nan, inf, 1.0],              # -0.0: other bits, no distance
        [0.0, nan_other, inf, 1.0],         # a NaN for a NaN: other bits, not far
        [0.0, nan, -inf, nan],              # an infinity of the other sign, a NaN for a number: far
        [0.0, 1.0, 1e30, 1.0],              # a number for a NaN, a finite for an infinity: far
    ])
    bits, far = d.compare({"out": ring})
    assert bits["out"].tolist() == [1, 1, 2, 2] and far["out"].tolist() == [0, 0, 2, 2]


def test_integer_outputs_are_far_wherever_their_bits_differ():
    d = _differ([torch.tensor([1, 2, 3, 4], dtype=torch.int32)], dtype="int32")
    assert "out" not in d.allowed
    bits, far = d.compare({"out": torch.tensor([[1, 2, 3, 4], [1, 2, 3, 5]], dtype=torch.int32)})
    assert bits["out"].tolist() == far["out"].tolist() == [0, 1]
    assert far["out"].data_ptr() != bits["out"].data_ptr()       # its own tensor: the caller keeps both


def test_each_slot_is_compared_with_the_first_call_on_its_own_input_set():
    a, b = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([10.0, 20.0, 30.0, 40.0])
    d = _differ([a, b])
    ring = torch.stack([a, b, b, a])            # slots 2 and 3 hold the other set's values
    bits, far = d.compare({"out": ring})
    assert bits["out"].tolist() == [0, 0, 4, 4] and far["out"].tolist() == [0, 0, 4, 4]


def test_a_narrow_float_is_compared_by_its_own_bits_and_in_float32():
    base = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.bfloat16)
    d = _differ([base], dtype="bfloat16", tolerance=(0.0, 0.125))
    assert d.allowed["out"].dtype == torch.float32
    ring = torch.stack([base, base + torch.tensor([0.0, 0.0, 0.0, 0.25], dtype=torch.bfloat16),
                        base + torch.tensor([0.0, 0.0, 0.0, 0.5], dtype=torch.bfloat16)])
    bits, far = d.compare({"out": ring})
    assert bits["out"].tolist() == [0, 1, 1] and far["out"].tolist() == [0, 0, 1]


def test_a_float64_output_keeps_float64_for_its_allowance():
    d = _differ([torch.zeros(4, dtype=torch.float64)], dtype="float64", tolerance=(0.0, 1e-12))
    assert d.allowed["out"].dtype == torch.float64
    bits, far = d.compare({"out": torch.tensor([[0.0, 0.0, 0.0, 1e-11]], dtype=torch.float64)})
    assert (bits["out"].tolist(), far["out"].tolist()) == ([1], [1])


def test_the_relative_part_scales_with_the_row_not_only_the_element():
    """allowed_of: atol + rtol x max(|r|, the row's RMS): an element near zero in a row of big
    values may move as far as the row's scale allows."""
    d = _differ([torch.tensor([0.0, 100.0, 100.0, 100.0])], tolerance=(0.01, 0.0))
    rms = (3 * 100.0 ** 2 / 4) ** 0.5
    ring = torch.tensor([[FAR * 0.01 * rms * 0.99, 100.0, 100.0, 100.0],
                         [FAR * 0.01 * rms * 1.01, 100.0, 100.0, 100.0]])
    bits, far = d.compare({"out": ring})
    assert bits["out"].tolist() == [1, 1] and far["out"].tolist() == [0, 1]


def test_interpreted_triton_never_takes_the_fused_pass_and_outputs_are_flattened():
    assert not _differ([torch.zeros(4)], interpreted=True).fused and _differ([torch.zeros(4)]).fused
    d = Differ(_spec(), POINT, [{"out": torch.zeros(2, 2)}])
    assert d.base["out"].shape == (1, 4)
    bits, _ = d.compare({"out": torch.zeros(3, 2, 2).index_fill_(1, torch.tensor([1]), 7.0)})
    assert bits["out"].tolist() == [2, 2, 2]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(1, 1000)), max_size=12))
def test_the_counts_are_the_changed_elements_of_each_slot(changes):
    """Ring of 6 slots over 2 input sets; each change adds to one element of one slot."""
    bases = [torch.tensor([1, 2, 3, 4], dtype=torch.int64), torch.tensor([5, 6, 7, 8], dtype=torch.int64)]
    d = _differ(bases, dtype="int64")
    ring = torch.stack([bases[k % 2] for k in range(6)]).clone()
    for slot, i, delta in changes:
        ring[slot, i] += delta
    changed = [len({i for s, i, _ in changes if s == slot}) for slot in range(6)]    # deltas > 0: never back
    bits, _ = d.compare({"out": ring})
    assert bits["out"].tolist() == changed


@pytest.mark.parametrize("k_sets", [(4, 2), (6, 3), (1, 1)])
def test_a_ring_whose_every_slot_equals_its_first_counts_nothing(k_sets):
    k, sets = k_sets
    bases = [torch.randn(4, generator=torch.Generator().manual_seed(s)) for s in range(sets)]
    d = _differ(bases)
    bits, far = d.compare({"out": torch.stack([bases[j % sets] for j in range(k)])})
    assert bits["out"].tolist() == far["out"].tolist() == [0] * k
