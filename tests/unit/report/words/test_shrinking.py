"""report/words/shrinking.py: a shrunk failure and what decides it, from ShrunkFacts built here."""
from __future__ import annotations

from kladder.core.facts import EdgeFacts, PassedBelowFacts, ShrinkCauseFacts, ShrunkFacts
from kladder.report.words.shrinking import cause_text, dims_text, edge_moves_text, explore_shrunk_lines, shrunk_lines

AT = [["M", 1], ["N", 9]]


def _edge(held=True, **kw) -> EdgeFacts:
    base = dict(dim="N", fails=9, passes=8, seeds=3, fails_under=3, passes_under=3, moved_down=0)
    if not held:
        base |= dict(fails_under=1, passes_under=2, moved_down=2)
    return EdgeFacts(**{**base, **kw})


def _cause(kind, **kw) -> ShrinkCauseFacts:
    base = dict(kind=kind, values=[], milder=None, milder_at=AT, floors=False, every_shape=False, shapes=0, edges=[])
    return ShrinkCauseFacts(**{**base, **kw})


def _shrunk(**kw) -> ShrunkFacts:
    base = dict(from_={"dims": [["M", 64], ["N", 4095]]}, check="values", method="bisect", runs=17, complete=True,
                passes_at={"N": PassedBelowFacts(size=8, status="passed")}, smallest={"dims": AT}, cannot_shrink=None,
                cause=None, smallest_id="r1-M=1-N=9", rung=1, failed_id="r1-M=64-N=4095", repro="kladder repro X")
    return ShrunkFacts(**{**base, **kw})


def test_dims_text():
    assert dims_text(AT) == "M = 1, N = 9" and dims_text([]) == ""


def test_edge_moves_text_says_each_way_an_edge_moved():
    assert edge_moves_text(_edge()) == ""
    assert edge_moves_text(_edge(held=False)) == ("a smaller N failed under another seed twice; N = 9 failed under 1 "
                                                  "of 3 seeds; N = 8 passed under 2 of 3")
    assert edge_moves_text(_edge(moved_down=1, fails_under=3, passes_under=3)) == \
        "a smaller N failed under another seed once"
    assert edge_moves_text(_edge(moved_down=5)).startswith("a smaller N failed under another seed 5 times")


def test_the_values_decide_it():
    c = _cause("values", values=[["x", "huge"], ["w", "ties"]], milder="passed", every_shape=True, shapes=6)
    assert cause_text(c, AT) == ("fails for x: huge, w: ties at every shape tried (6), down to M = 1, N = 9; with normal "
                                 "values it passes at M = 1, N = 9: the values decide it, not a shape edge")
    moving = _cause("values", values=[["x", "huge"]], milder="failed", edges=[_edge(held=False), _edge()])
    assert cause_text(moving, AT) == ("fails for x: huge down to M = 1, N = 9; where it starts moves with the inputs "
                                      "(a smaller N failed under another seed twice; N = 9 failed under 1 of 3 seeds; "
                                      "N = 8 passed under 2 of 3): the values decide it, not a shape edge")


def test_the_layout_decides_it():
    c = _cause("layout", layouts=[["x", "transposed"]], contiguous="passed")
    assert cause_text(c, AT) == ("fails for x: transposed down to M = 1, N = 9; with contiguous inputs it passes at "
                                 "M = 1, N = 9: the layout decides it, not a shape edge")


def test_a_shape_edge_names_the_edge_that_held_and_what_it_needs():
    c = _cause("shape", values=[["x", "huge"]], milder="passed", layouts=[["x", "sliced"]], contiguous="passed",
               edges=[_edge(held=False, dim="M"), _edge()])
    assert cause_text(c, AT) == ("a shape edge with x: huge, x: sliced: N = 9 fails and N = 8 passes, under 3 seeds "
                                 "each; with normal values it passes at M = 1, N = 9; with contiguous inputs it passes "
                                 "at M = 1, N = 9")
    plain = _cause("shape", edges=[_edge(fails=4097, passes=4096)])
    assert cause_text(plain, AT) == "a shape edge: N = 4,097 fails and N = 4,096 passes, under 3 seeds each"


def test_inputs_floor_and_unsettled():
    assert cause_text(_cause("inputs", edges=[_edge(held=False)]), AT).startswith(
        "the values decide it, not a shape edge: where it starts moves with the inputs (a smaller N")
    assert cause_text(_cause("floor", floors=True), AT) == (
        "fails at the floor of every dim (M = 1, N = 9) with normal values: no value kind is needed, and no smaller "
        "shape can show an edge")
    assert cause_text(_cause("floor"), AT) == "fails down to M = 1, N = 9 with normal values, and no edge was found"
    assert cause_text(_cause("unsettled"), AT) == "what decides it is not settled: the shrink budget ran out first"


# ---------------------------------------------------------------------------- shrunk_lines
def test_shrunk_lines_of_a_shrunk_failure():
    s = _shrunk(cause=_cause("floor", floors=True))
    assert shrunk_lines(s) == [
        "rung 1, from r1-M=64-N=4095: fails down to M = 1, N = 9, the same check (values), after 17 runs; one below: "
        "N = 8: passed",
        "  cause: fails at the floor of every dim (M = 1, N = 9) with normal values: no value kind is needed, and no "
        "smaller shape can show an edge",
        "  repro: kladder repro X"]
    assert shrunk_lines(s, repro=False)[-1].startswith("  cause:")


def test_shrunk_lines_of_a_search_the_budget_ended():
    s = _shrunk(complete=False, passes_at={})
    assert shrunk_lines(s, repro=False) == ["rung 1, from r1-M=64-N=4095: fails down to M = 1, N = 9, the same check "
                                            "(values), after 17 runs (the shrink budget ran out first: it may shrink "
                                            "further)"]


def test_shrunk_lines_that_did_not_shrink():
    assert shrunk_lines(_shrunk(cannot_shrink="a 2^31 cliff")) == ["rung 1, from r1-M=64-N=4095: cannot shrink: a 2^31 "
                                                                   "cliff"]
    assert shrunk_lines(_shrunk(check=None)) == ["rung 1, from r1-M=64-N=4095: not shrunk (its replay did not fail)"]
    assert shrunk_lines(_shrunk(smallest=None)) == ["rung 1, from r1-M=64-N=4095: not shrunk (the shrink budget was "
                                                    "spent before it began)"]
    same = _shrunk(smallest_id="r1-M=64-N=4095")
    assert shrunk_lines(same) == ["rung 1, from r1-M=64-N=4095: no smaller point fails the same way (17 runs)"]
    assert shrunk_lines(_shrunk(smallest_id="r1-M=64-N=4095", complete=False)) == [
        "rung 1, from r1-M=64-N=4095: no smaller failing point found before the budget ran out (17 runs)"]


# ---------------------------------------------------------------------------- explore
def test_explore_shrunk_lines():
    assert explore_shrunk_lines(None, AT) == []
    assert explore_shrunk_lines(_shrunk(cannot_shrink="a mode's calls"), AT) == ["  cannot shrink: a mode's calls"]
    assert explore_shrunk_lines(_shrunk(smallest=None), AT) == []
    s = _shrunk(cause=_cause("unsettled"), complete=False)
    assert explore_shrunk_lines(s, [["M", 3], ["N", 17]]) == [
        "  Hypothesis shrank it to M = 3, N = 17",
        "  smallest failing point: M = 1, N = 9, the same check (values), after 17 runs of a plain search (the shrink "
        "budget ran out first); one below: N = 8: passed",
        "  what decides it: what decides it is not settled: the shrink budget ran out first"]
    assert explore_shrunk_lines(s, None)[0].startswith("  smallest failing point:")
