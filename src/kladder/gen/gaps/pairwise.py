"""All-pairs (pairwise) covering, greedy and deterministic, under a feasibility constraint.

Why pairwise: a shape bug lives in one dim's tail, sometimes in two interacting
(an N tail under one config, a K tail at M = 1), rarely in three. All-pairs covers every
two-way interaction in about v^2 rows instead of the v^d of the full product. Why greedy by
hand: the factor lists are short (tens of values, a handful of factors), the constraint
(a point must fit the device's budget) is specific to kladder, and a 40-line greedy keeps
the order of the rows stable, so a point's id never moves between runs.
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Callable, Sequence

Row = dict  # factor name -> value


def all_pairs(factors: Sequence[tuple[str, Sequence[Any]]],
              feasible: Callable[[Row], bool]) -> tuple[list[Row], list[tuple]]:
    """Rows covering every feasible pair of values of two factors.

    `feasible(partial_row)` must be monotone: if it rejects a partial row, it rejects every
    completion (the caller judges unassigned factors at their cheapest value). Returns the
    rows and the pairs no feasible row can hold, so the caller can say why they are absent.
    """
    names = [n for n, _ in factors]
    values = dict(factors)
    if len(names) == 1:
        rows = [{names[0]: v} for v in values[names[0]] if feasible({names[0]: v})]
        dropped = [((names[0], v),) for v in values[names[0]] if not feasible({names[0]: v})]
        return rows, dropped
    uncovered = [((a, va), (b, vb)) for a, b in combinations(names, 2)
                 for va in values[a] for vb in values[b]]
    rows, dropped = [], []
    left = set(uncovered)
    for pair in uncovered:
        if pair not in left:
            continue
        row = dict(pair)
        if not feasible(row):
            dropped.append(pair)
            left.discard(pair)
            continue
        for name in names:
            if name not in row:
                row[name] = _best_value(name, values[name], row, left, feasible)
        rows.append(row)
        left -= _pairs_of(row, names)
    return rows, dropped


def _best_value(name, choices, row, left, feasible):
    best, best_gain = None, -1
    for v in choices:
        trial = {**row, name: v}
        if not feasible(trial):
            continue
        gain = sum(((a, row[a]), (name, v)) in left or ((name, v), (a, row[a])) in left for a in row)
        if gain > best_gain:
            best, best_gain = v, gain
    return best if best is not None else choices[0]


def _pairs_of(row: Row, names: list[str]) -> set:
    present = [n for n in names if n in row]
    return {((a, row[a]), (b, row[b])) for a, b in combinations(present, 2)}
