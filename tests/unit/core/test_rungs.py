"""kladder.core.rungs: the ladder's one table, and who each rung's points come from."""
import sys
import types

import pytest

from kladder.core.rungs import BUILT, BY_NUMBER, RUNGS, Rung, number, title


def test_the_table_is_the_eight_rungs_in_order_each_gap_once():
    assert [r.number for r in RUNGS] == list(range(1, 9))
    assert len({r.gap for r in RUNGS}) == 8
    assert [number(r.gap) for r in RUNGS] == list(range(1, 9))
    assert BY_NUMBER[6].gap == "multi_gpu" and title(4) == "execution modes" and title(8) == "model"


def test_built_lists_the_rungs_with_a_generator():
    assert tuple(range(1, 9)) == BUILT                       # every rung has its generator today
    assert Rung(9, "x", "x", None).built is False
    assert Rung(9, "x", "x", "m").built is True


def test_every_built_generator_is_a_module_of_gaps_named_for_its_gap():
    for r in RUNGS:
        if r.built:
            assert r.generator == f"kladder.gen.gaps.{r.gap}"


def test_an_unknown_gap_or_number_is_refused():
    with pytest.raises(StopIteration):
        number("no_such_gap")
    with pytest.raises(KeyError):
        title(9)


@pytest.fixture
def fake_generator(monkeypatch):
    calls = []
    mod = types.ModuleType("kl_fake_gen")
    mod.points = lambda spec, budget, **extra: iter(calls.append((spec, budget, extra)) or ["p1", "p2"])
    monkeypatch.setitem(sys.modules, "kl_fake_gen", mod)
    return calls


def test_points_come_from_the_generator_module_with_the_extra_keywords(fake_generator):
    spec = types.SimpleNamespace(collective=None)
    assert list(Rung(2, "values", "values", "kl_fake_gen").points(spec, "B", seed=3)) == ["p1", "p2"]
    assert fake_generator == [(spec, "B", {"seed": 3})]


def test_a_collective_gets_points_only_from_the_multi_gpu_rung(fake_generator):
    spec = types.SimpleNamespace(collective=object())
    assert list(Rung(1, "shapes", "shapes", "kl_fake_gen").points(spec, "B")) == []
    assert fake_generator == []                               # the generator is never asked
    assert list(Rung(6, "multi_gpu", "multi-GPU", "kl_fake_gen").points(spec, "B")) == ["p1", "p2"]


def test_a_spec_without_a_collective_attribute_is_not_one(fake_generator):
    assert list(Rung(1, "shapes", "shapes", "kl_fake_gen").points(object(), "B")) == ["p1", "p2"]

