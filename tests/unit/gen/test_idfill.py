"""gen/idfill.py: rung 2's id kinds, each inside the declared range, each its own shape."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from kladder.gen import idfill
from kladder.gen.idfill import fill_ids, labels, why


def ids(label, n=64, rng=(0, 7), ignore=None, seed=0, dtype=torch.int64):
    t = torch.empty(n, dtype=dtype)
    fill_ids(t, label, torch.Generator().manual_seed(seed), rng, ignore)
    return t


def test_labels_add_ignored_only_with_a_sentinel():
    assert labels() == ("ids/same", "ids/distinct", "ids/ends", "ids/unused", "ids/sorted", "ids/reversed")
    assert labels(-100) == labels() + ("ids/ignored",)


def test_why_says_the_sentinel():
    assert "-100" in why("ids/ignored", -100)
    assert why("ids/same") == idfill.WHY["same"]


def test_same_is_one_id_everywhere():
    t = ids("ids/same")
    assert t.unique().numel() == 1 and 0 <= int(t[0]) <= 7


def test_distinct_is_a_permutation_cycled_past_the_range():
    t = ids("ids/distinct", n=8, rng=(3, 10))
    assert sorted(t.tolist()) == list(range(3, 11))
    long = ids("ids/distinct", n=20, rng=(0, 7))
    assert long[:8].tolist() == long[8:16].tolist() and sorted(long[:8].tolist()) == list(range(8))


def test_ends_are_only_lo_and_hi_with_lo_first_and_hi_last():
    t = ids("ids/ends", rng=(2, 9))
    assert set(t.tolist()) == {2, 9} and int(t[0]) == 2 and int(t[-1]) == 9


def test_unused_never_reaches_hi():
    t = ids("ids/unused", n=512, rng=(0, 3))
    assert set(t.tolist()) == {0, 1, 2}


def test_unused_of_a_range_of_one_id_is_that_id():
    assert set(ids("ids/unused", n=4, rng=(5, 5)).tolist()) == {5}


def test_sorted_and_reversed_are_monotone():
    s, r = ids("ids/sorted"), ids("ids/reversed")
    assert s.tolist() == sorted(s.tolist()) and r.tolist() == sorted(r.tolist(), reverse=True)
    assert s.unique().numel() > 1


def test_bare_ids_are_uniform_in_the_range_and_the_default_range_is_0_to_63():
    t = ids("ids", n=4096, rng=None)
    assert int(t.min()) == 0 and int(t.max()) == 63


def test_ignored_puts_the_sentinel_last_never_first_and_about_a_quarter():
    t = ids("ids/ignored", n=400, ignore=-100)
    hit = t == -100
    assert bool(hit[-1]) and not bool(hit[0])
    assert 0.15 < hit.float().mean() < 0.35
    assert set(t[~hit].tolist()) <= set(range(8))


def test_ignored_on_one_element_is_the_sentinel():
    assert ids("ids/ignored", n=1, ignore=-1).tolist() == [-1]


def test_ignored_without_a_sentinel_says_how_to_declare_one():
    with pytest.raises(ValueError, match=r"needs the input's sentinel: kl.Tensor\(..., ignore=-100\)"):
        ids("ids/ignored")


def test_an_unknown_id_kind_is_refused():
    with pytest.raises(ValueError, match="unknown id kind 'ids/shuffled'"):
        ids("ids/shuffled")


def test_an_empty_tensor_is_left_alone():
    t = torch.empty(0, dtype=torch.int32)
    fill_ids(t, "ids/ends", torch.Generator(), (0, 3))
    assert t.numel() == 0


def test_a_reversed_range_is_read_as_its_lower_end():
    assert set(ids("ids/same", rng=(5, 2)).tolist()) == {5}


def test_the_ids_fill_a_2d_tensor_flattened_and_in_its_dtype():
    t = torch.empty(4, 4, dtype=torch.int32)
    fill_ids(t, "ids/sorted", torch.Generator().manual_seed(0), (0, 15))
    assert t.dtype == torch.int32 and t.flatten().tolist() == sorted(t.flatten().tolist())


@settings(max_examples=50, deadline=None)
@given(lo=st.integers(-50, 50), span=st.integers(1, 40), n=st.integers(1, 70),
       label=st.sampled_from(list(labels())), seed=st.integers(0, 2 ** 16))
def test_every_id_kind_stays_inside_the_range_and_is_seeded(lo, span, n, label, seed):
    hi = lo + span - 1
    a = ids(label, n=n, rng=(lo, hi), seed=seed)
    assert int(a.min()) >= lo and int(a.max()) <= hi
    assert torch.equal(a, ids(label, n=n, rng=(lo, hi), seed=seed))
