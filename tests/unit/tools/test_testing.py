"""kladder.tools.testing: kl.inputs's and kl.assert_close's own argument handling and tolerance
choice (the judge's words are checks/values' and report/words'; the API end to end is
tests/test_testing_api.py)."""
import pytest
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.tools import testing

SPEC = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})


def test_spec_is_a_spec_or_its_reference_nothing_else(tmp_path):
    assert testing._spec(SPEC) is SPEC
    f = tmp_path / "s.py"
    f.write_text("import kladder as kl\nspec = kl.Spec('one', kernel=lambda x: x, reference=lambda x: x, "
                 "args={'x': kl.Tensor('N', dtype='float32')}, returns=kl.Tensor('N', like='x'), dims={'N': kl.Dim(1, 2)})\n")
    assert testing._spec(f"{f}::spec").name == "one"
    with pytest.raises(TypeError, match=r"^spec: got int; give a kl.Spec or its reference 'path.py::name'.$"):
        testing._spec(3)


def test_point_is_a_point_or_its_text_and_must_be_the_specs():
    p = Point("double", 1, (("N", 2),))
    assert testing._point(p, SPEC) is p
    assert testing._point(repr(p), SPEC) == p
    with pytest.raises(ValueError, match=r"^point: cannot read a point from '\{'"):
        testing._point("{", SPEC)
    with pytest.raises(TypeError, match=r"^point: got dict; give a kl.Point or the point as a report prints it.$"):
        testing._point(p.to_dict(), SPEC)
    with pytest.raises(ValueError, match=r"^point: it belongs to spec 'softmax', not 'double'.$"):
        testing._point(Point("softmax", 1, (("N", 2),)), SPEC)
    with pytest.raises(ValueError, match="POINT dims: 'N' is 4, outside the spec's range 1..3"):
        testing._point(Point("double", 1, (("N", 4),)), SPEC)


def test_inputs_are_named_in_args_order_at_the_points_size_on_the_default_device():
    got = testing.inputs(SPEC, Point("double", 1, (("N", 3),)))
    assert list(got) == ["x"] and got["x"].shape == (3,) and got["x"].dtype == torch.float32
    assert got["x"].device.type == ("cuda" if torch.cuda.is_available() else "cpu")    # the default device
    again = testing.inputs(SPEC, '{"spec": "double", "rung": 1, "dims": [["N", 3]]}', device="cpu")
    assert torch.equal(again["x"], got["x"])               # the same point, the same seed, the same bytes


def test_assert_close_takes_tensors_only():
    with pytest.raises(TypeError, match=r"^expected: got float; give a torch.Tensor.$"):
        testing.assert_close(torch.ones(1), 1.0)


def test_a_dtype_without_a_default_tolerance_is_judged_exactly():
    testing.assert_close(torch.tensor([1, 2], dtype=torch.int32), torch.tensor([1, 2], dtype=torch.int64))
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        testing.assert_close(torch.tensor([1, 3], dtype=torch.int32), torch.tensor([1, 2], dtype=torch.int64))


def test_rtol_or_atol_alone_replaces_only_its_part():
    ref = torch.zeros(4, dtype=torch.float64)               # |expected| 0: only atol counts
    testing.assert_close(torch.full((4,), 5e-6), ref, rtol=0.0)          # float32's atol 1e-5 kept
    with pytest.raises(AssertionError):
        testing.assert_close(torch.full((4,), 2e-5), ref, rtol=0.0)
    testing.assert_close(torch.full((4,), 2e-5), ref, atol=3e-5)
    ones = torch.ones(4, dtype=torch.float64)
    testing.assert_close(ones.float() * (1 + 1e-3), ones, rtol=2e-3, atol=0)
    with pytest.raises(AssertionError):
        testing.assert_close(ones.float() * (1 + 1e-3), ones, atol=0)    # float32's rtol 1.3e-6 kept


def test_the_message_names_the_output_and_puts_msg_first():
    with pytest.raises(AssertionError) as e:
        testing.assert_close(torch.ones(2), torch.zeros(2, dtype=torch.float64), output="y", msg="at N = 2")
    assert str(e.value).startswith("at N = 2\ny is not close to expected (kladder's judge):\n")
    with pytest.raises(AssertionError) as e:
        testing.assert_close(torch.ones(2), torch.zeros(2, dtype=torch.float64))
    assert str(e.value).startswith("actual is not close to expected (kladder's judge):\n")
