import ast
import json

import pytest

from kladder import Point


def sample(**over):
    base = dict(spec="rmsnorm", rung=1, dims=(("M", 1), ("N", 2881)), dtypes=(("x", "bfloat16"),),
                why="N = 2881: next to the model width 2880 and the tile (64) does not divide it",
                config=(("BLOCK", 256),))
    base.update(over)
    return Point(**base)


def test_point_is_frozen_and_hashable():
    p = sample()
    with pytest.raises(AttributeError):
        p.rung = 2
    assert len({p, sample()}) == 1
    assert hash(p) == hash(sample())


def test_json_round_trip():
    p = sample()
    assert Point.parse(p.to_json()) == p
    assert json.loads(p.to_json())["dims"] == [["M", 1], ["N", 2881]]


def test_repr_is_a_python_literal_that_parses_back():
    p = sample()
    assert isinstance(ast.literal_eval(repr(p)), dict)
    assert Point.parse(repr(p)) == p


def test_seed_is_derived_from_the_point_and_stable():
    assert sample().seed == sample().seed != 0
    assert sample(dims=(("M", 2), ("N", 2881))).seed != sample().seed


def test_id_is_readable():
    assert sample().id == "r1-M=1-N=2881-bfloat16-BLOCK=256"


def test_lists_are_frozen_to_tuples():
    p = sample(dims=[["M", 1], ["N", 2881]])
    assert p.dims == (("M", 1), ("N", 2881))
    hash(p)


@pytest.mark.parametrize("text", ["not a point", "[1, 2]", '{"spec": "x"}', '{"spec": "x", "rung": 1, "dims": [], "bogus": 1}'])
def test_bad_point_text_is_a_clear_error(text):
    with pytest.raises(ValueError) as e:
        Point.parse(text)
    assert "point" in str(e.value).lower()


def test_a_seed_shift_moves_the_seed_and_only_the_seed():
    from kladder.climbing.ladder import rung_points
    from kladder.core.sizes import CPU_BUDGET
    import kladder as kl
    s = kl.Spec("t", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64, tile=8)})
    plain, moved = list(rung_points(s, 1, CPU_BUDGET)), list(rung_points(s, 1, CPU_BUDGET, seed=3))
    assert [p.id for p in plain] == [p.id for p in moved]
    assert all(a.seed != b.seed and b.seed for a, b in zip(plain, moved, strict=False))
    assert [p.seed for p in rung_points(s, 1, CPU_BUDGET, seed=3)] == [p.seed for p in moved]   # deterministic
    assert Point.parse(moved[0].to_json()) == moved[0]                    # the repro carries the shifted seed
    assert plain[0].shifted(0) is plain[0]
