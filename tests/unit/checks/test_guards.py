"""checks/guards.py: the guard finding's facts, which output an allocation was returned as, and
when an allocation was resized (not judged)."""
import json
import weakref
from dataclasses import dataclass

import torch

from kladder.checks.guards import guards, resized, returned_by
from kladder.core.outcome import Check, Finding


def test_untouched_guards_are_no_finding():
    assert guards("y", [], [], 4) is None


def test_a_store_past_the_end_counts_and_bounds_the_bytes():
    f = guards("y", [], [9, 3, 4], 2)
    assert f.check == Check.GUARD and f.output == "y" and f.mismatched == 3
    assert f.facts.after == [3, 4, 9] and (f.facts.after_lo, f.facts.after_hi) == (3, 9)
    assert f.facts.n_after == 3 and f.facts.n_before == 0 and f.facts.before == []
    assert f.facts.before_lo is None and f.facts.before_hi is None and f.facts.itemsize == 2
    assert f.facts.allocated is None


def test_a_store_before_the_start_and_past_the_end_both_count():
    f = guards("y", [5, 1], [0], 4)
    assert f.mismatched == 3 and f.facts.before == [1, 5] and (f.facts.before_lo, f.facts.before_hi) == (1, 5)
    assert (f.facts.after_lo, f.facts.after_hi) == (0, 0)


def test_only_the_first_64_offsets_are_kept_but_all_are_counted():
    after = list(range(200, 0, -1))                     # 200 bytes, given in reverse
    f = guards("y", [], after, 1)
    assert f.facts.after == list(range(1, 65)) and f.facts.n_after == 200 and f.mismatched == 200
    assert (f.facts.after_lo, f.facts.after_hi) == (1, 200)


def test_an_allocation_of_the_kernels_own_is_named_in_the_facts_and_round_trips_to_strict_json():
    alloc = {"op": "aten.empty.memory_format", "shape": [4, 8], "dtype": "float32", "returned": False}
    f = guards("", [], [0, 1], 4, allocated=alloc)
    assert f.output == "" and f.facts.allocated.op == "aten.empty.memory_format" and not f.facts.allocated.returned
    back = Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False)))
    assert back == f


@dataclass
class _G:
    buf: torch.Tensor


@dataclass
class _Alloc:                       # the fields of run/guarded_alloc.Allocation that guards.py reads
    ptr: int
    g: _G
    shape: tuple = ()
    freed: bool = False
    tensor: object = None
    nbytes: int = 0


def _alloc(t, buf=None, **kw):
    buf = t if buf is None else buf
    return _Alloc(ptr=t.untyped_storage().data_ptr(), g=_G(buf), shape=tuple(t.shape), tensor=weakref.ref(t),
                  nbytes=buf.untyped_storage().nbytes(), **kw)


def test_the_output_returned_in_an_allocation_is_named_and_a_scratch_one_is_not():
    mine, other = torch.zeros(8), torch.zeros(8)
    a = _alloc(mine)
    assert returned_by(a, {"x": other, "y": mine[2:]}) == "y"            # a view of it: the same storage
    assert returned_by(a, {"x": other}) == ""
    assert returned_by(a, {"s": 3.0, "y": mine}) == "y"                  # a non-tensor output is skipped
    a.freed = True
    assert returned_by(a, {"y": mine}) == ""                            # freed: returned nothing


def test_an_allocation_handed_out_as_it_was_is_not_resized():
    t = torch.zeros(4, 8)
    assert not resized(_alloc(t))


def test_a_resize_a_repoint_or_a_grown_storage_is_resized():
    t = torch.zeros(4, 8)
    a = _alloc(t)
    t.resize_(2, 8)                                                      # shape changed (storage kept)
    assert resized(a)
    t = torch.zeros(4, 8)
    a = _alloc(t)
    t.set_(torch.zeros(4, 8))                                            # same shape, other storage
    assert resized(a)
    t = torch.zeros(4, 8)
    a = _alloc(t)
    a.g.buf.untyped_storage().resize_(a.nbytes + 64)                     # the guarded buffer grew
    assert resized(a)


def test_a_freed_allocation_is_never_resized_and_a_dead_weak_reference_reads_the_buffer():
    t = torch.zeros(4, 8)
    a = _alloc(t, freed=True)
    t.resize_(1)
    assert not resized(a)
    t = torch.zeros(4, 8)
    a = _alloc(t)
    a.tensor = None                                                      # no handle kept: only the buffer's size
    assert not resized(a)
    a.tensor = lambda: None                                              # the tensor died: only the buffer's size
    assert not resized(a)
    a.g.buf.untyped_storage().resize_(a.nbytes - 4)
    assert resized(a)
