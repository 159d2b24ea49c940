"""core/spec/parts.py, directly: kl.Expect (dtype keys normalised, refuses), a `when`'s values
(is_dtype_key, is_predicate, when_holds: a bool is no int), predicate_edges beyond what
tests/test_knows.py asks (nothing holds, everything holds, an unhashable predicate, one that
raises, the scan's limit, and as a property: both sides of every edge), when_sizes, when_text,
kl.Flag (its defaults for a variable, before, key), kl.Calls (letters, config_of), kl.Collective
and kl.Toolchain normalisation, and the tables the parts are read by."""
from __future__ import annotations

import functools
import itertools

import pytest
import torch
from hypothesis import given, settings, strategies as st

import kladder as kl
from kladder.core.notation import EnvSet, Needs
from kladder.core.spec import parts as p


# ---------------------------------------------------------------------------- Expect
def test_expect_normalises_torch_dtypes_under_dtype_keys_only():
    e = kl.Expect("*", when={"dtype": torch.bfloat16, "dtype:w": [torch.float32, "float16"], "N": torch.float16})
    assert e.when == {"dtype": "bfloat16", "dtype:w": ["float32", "float16"], "N": torch.float16}
    assert kl.Expect("*", when={"N": 1}).when == {"N": 1}


@pytest.mark.parametrize("expect,error,refuses", [
    (kl.Expect("*", runs=False), ValueError("x"), True),
    (kl.Expect("*", runs=False), KeyboardInterrupt(), False),              # not an Exception
    (kl.Expect("*", runs=False, raises=ValueError), KeyError("x"), False),
    (kl.Expect("*", runs=False, raises=(KeyError, ValueError)), KeyError("x"), True),
    (kl.Expect("*", runs=False, raises=LookupError), KeyError("x"), True),  # a subclass
    (kl.Expect("*"), ValueError("x"), False),                               # runs=True never refuses
])
def test_expect_refuses(expect, error, refuses):
    assert expect.refuses(error) is refuses


# ---------------------------------------------------------------------------- a when's values
@pytest.mark.parametrize("key,yes", [("dtype", True), ("dtype:w", True), ("dtype:", True), ("dtypes", False),
                                     ("Dtype", False), (None, False), (3, False)])
def test_is_dtype_key(key, yes):
    assert p.is_dtype_key(key) is yes


@pytest.mark.parametrize("v,yes", [(range(3), True), (lambda n: True, True), (len, True), (int, False), (3, False),
                                   ([1, 2], False), ("abc", False)])
def test_is_predicate(v, yes):
    assert p.is_predicate(v) is yes


@pytest.mark.parametrize("want,have,holds", [
    (1, 1, True), (1, True, False), (True, 1, False), (True, True, True), (False, 0, False),
    ([8, 16], 16, True), ((8, 16), 12, False), ([True], True, True),
    ("1", "1", True), (None, None, True), ("1", 1, False),
    (range(1, 257), 256, True), (range(1, 257), 257, False), (range(1, 257), True, False), (range(0, 9), 2.0, False),
    (lambda n: n % 2 == 0, 4, True), (lambda n: 0, 4, False),
])
def test_when_holds(want, have, holds):
    assert p.when_holds(want, have) is holds


# ---------------------------------------------------------------------------- predicate_edges
def test_a_predicate_that_holds_nowhere_has_no_edges_and_one_that_holds_everywhere_its_ends():
    assert p.predicate_edges(kl.Dim(1, 100), lambda n: False) == ()
    assert p.predicate_edges(kl.Dim(1, 100), lambda n: True) == (1, 100)
    assert p.predicate_edges(kl.Dim(5, 5), lambda n: True) == (5,)
    assert p.predicate_edges(kl.Dim(sizes=[8, 16]), range(9, 16)) == ()


def test_an_unhashable_predicate_is_asked_without_the_cache():
    class Gate:
        __hash__ = None

        def __call__(self, n):
            return n >= 10
    assert p.predicate_edges(kl.Dim(1, 20), Gate()) == (9, 10, 20)


def test_a_predicate_that_raises_says_at_which_size():
    with pytest.raises(p.PredicateError) as e:
        p.predicate_edges(kl.Dim(1, 10), lambda n: 1 // (n - 4) > 0)
    size, err = e.value.args
    assert size == 4 and isinstance(err, ZeroDivisionError)


def test_the_scan_asks_every_size_up_to_its_limit_and_samples_past_it():
    asked = []

    def gate(n):
        asked.append(n)
        return n > 5
    p.predicate_edges(kl.Dim(1, p.EDGE_SCAN + 1), gate)                   # max - min == EDGE_SCAN: every size
    assert len(asked) == p.EDGE_SCAN + 1
    asked.clear()
    assert p.predicate_edges(kl.Dim(1, p.EDGE_SCAN + 2), functools.partial(gate)) == (5, 6, p.EDGE_SCAN + 2)
    assert len(asked) < p.EDGE_SCAN + 2 + 64 * 3 and max(asked) == p.EDGE_SCAN + 2


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(0, 60), st.frozensets(st.integers(0, 100), max_size=12))
def test_both_sides_of_every_edge_are_asked(lo, width, holds_at):
    dim = kl.Dim(lo, lo + width)
    sizes = list(range(dim.min, dim.max + 1))
    pred = holds_at.__contains__
    edges = p.predicate_edges(dim, pred)
    assert all(dim.allows(s) for s in edges) and list(edges) == sorted(set(edges))
    if not any(map(pred, sizes)):
        assert edges == ()
        return
    changes = [(a, b) for a, b in itertools.pairwise(sizes) if pred(a) != pred(b)]
    if len(changes) <= 2 * p.EDGES_KEPT - 2:           # not cut to the first and last EDGES_KEPT edges
        assert {s for c in changes for s in c} <= set(edges)
    first = next(s for s in sizes if pred(s))
    last = next(s for s in reversed(sizes) if pred(s))
    assert first in edges and last in edges


def test_when_sizes_and_when_text():
    dim = kl.Dim(1, 300)
    assert p.when_sizes(dim, range(1, 257)) == [1, 256, 257] and p.when_sizes(dim, (8, 16)) == [8, 16]
    assert p.when_sizes(dim, 8) == [8]
    assert p.when_text(range(1, 257)) == "range(1, 257)" and p.when_text((1, 2)) == [1, 2] and p.when_text("1") == "1"

    def small(n):
        return n < 4
    assert p.when_text(small) == f"a predicate ({small.__qualname__})"
    assert p.when_text(functools.partial(small)) == "a predicate (partial)"


# ---------------------------------------------------------------------------- Flag, Calls, Collective, Toolchain
def test_a_flag_on_a_variable_defaults_to_strings_and_its_key_is_dollar_name():
    f = kl.Flag(env="FAST")
    assert f.values == ("0", "1") and f.key == "$FAST" and f.set is EnvSet.AT_START
    assert kl.Flag("USE_TMA").values == (False, True) and kl.Flag("USE_TMA").key == "USE_TMA"
    assert kl.Flag(env="FAST", values=[None, "1"]).values == (None, "1")
    assert kl.Flag(env="FAST", set="after_import").set is EnvSet.AFTER_IMPORT


def test_a_flags_before_is_the_first_other_value():
    f = kl.Flag(env="FAST", values=(None, "0", "1"))
    assert (f.before(None), f.before("0"), f.before("1")) == ("0", None, None)


def test_calls_letters_and_config_of():
    c = kl.Calls(pattern="BAAB C", configs={"A": {"BLOCK": 64}})
    assert c.letters == "BA C"
    assert c.config_of("A") == (("BLOCK", 64),) and c.config_of("B") == ()
    assert kl.Calls().config_of("A") == () and kl.Calls().letters == "A"


def test_collective_normalises_world_and_needs():
    c = kl.Collective(world=4, switches=[1, 2], needs="cuda")
    assert c.world == (4,) and c.worlds == (4,) and c.switches == (1, 2) and c.needs is Needs.CUDA
    assert kl.Collective(world=[2, 8]).world == (2, 8) and kl.Collective(needs="tpu").needs == "tpu"


def test_toolchain_makes_globs_expectations_and_lists_tuples():
    t = kl.Toolchain(expect=["*a*", kl.Expect("b", label="B")], flags=[kl.Flag("X")], imports=["m:f"])
    assert t.expect == (kl.Expect("*a*"), kl.Expect("b", label="B")) and t.flags == (kl.Flag("X"),) and t.imports == ("m:f",)
    assert kl.Toolchain(expect="*a*").expect == "*a*"                  # not a list: left for the validator


def test_every_part_class_has_its_table_and_every_moved_field_names_a_real_part_field():
    from kladder.core.spec.validation import PARTS
    assert set(p.PART_CLASSES) == set(PARTS)
    for field, (part, label, name, _example) in p.MOVED.items():
        cls = p.PART_CLASSES[part]
        assert label == f"kl.{cls.__name__}" and name in cls.__dataclass_fields__, field
