"""gen/gaps/pairwise.py: greedy all-pairs covering under a monotone feasibility constraint."""
from itertools import combinations, product

from hypothesis import given, settings, strategies as st

from kladder.gen.gaps.pairwise import all_pairs


def always(row):
    return True


def test_one_factor_is_each_value_once_and_the_infeasible_dropped_as_singletons():
    rows, dropped = all_pairs([("M", [1, 2, 3])], lambda r: r["M"] != 2)
    assert rows == [{"M": 1}, {"M": 3}]
    assert dropped == [(("M", 2),)]


def test_two_factors_are_their_full_product_in_order():
    rows, dropped = all_pairs([("a", [1, 2]), ("b", ["x", "y", "z"])], always)
    assert rows == [dict(a=a, b=b) for a, b in product([1, 2], "xyz")] and dropped == []


def test_three_binary_factors_need_four_rows_not_eight():
    rows, _ = all_pairs([("a", [0, 1]), ("b", [0, 1]), ("c", [0, 1])], always)
    assert len(rows) == 4
    for x, y in combinations("abc", 2):
        assert {(r[x], r[y]) for r in rows} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_a_pair_nothing_can_hold_is_dropped_once_and_in_no_row():
    def cheap(r):                      # "a" and "b" both big does not fit
        return not (r.get("a") == 9 and r.get("b") == 9)
    rows, dropped = all_pairs([("a", [1, 9]), ("b", [1, 9]), ("c", [0])], cheap)
    assert dropped == [(("a", 9), ("b", 9))]
    assert all(cheap(r) for r in rows)


def test_the_rows_are_the_same_on_every_call():
    factors = [("a", [1, 2, 3]), ("b", [4, 5]), ("c", [6, 7, 8]), ("d", [0, 1])]
    assert all_pairs(factors, always) == all_pairs(factors, always)


@settings(max_examples=50, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=2, max_size=5), bound=st.integers(0, 20))
def test_every_feasible_pair_is_covered_every_row_is_feasible_and_whole(sizes, bound):
    factors = [(f"f{i}", list(range(n))) for i, n in enumerate(sizes)]
    feasible = lambda r: sum(r.values()) <= bound          # monotone: unassigned factors cost 0 at their cheapest
    rows, dropped = all_pairs(factors, feasible)
    names = [n for n, _ in factors]
    assert all(list(r) == names or set(r) == set(names) for r in rows)
    assert all(feasible(r) for r in rows)
    for (a, va), (b, vb) in combinations(factors, 2):
        for x in va:
            for y in vb:
                pair = ((a, x), (b, y))
                covered = any(r[a] == x and r[b] == y for r in rows)
                assert covered != (pair in dropped)
                assert covered == (x + y <= bound)
    assert len(rows) <= max(1, len([p for p in product(*(v for _, v in factors)) if sum(p) <= bound]))
