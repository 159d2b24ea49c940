"""run/modes/base.py: a mode's default traits and methods, the two ways to call, what a spec
declares the kernel writes at a point (forward, gradient, backward, overwritten upstream
gradients), PostGraph's texts, and how a collective's end (Ended, RankPlace) travels as strict
JSON between a rank's record and the worker."""
import json
from types import SimpleNamespace

import pytest
import torch

import kladder as kl
from kladder.core.outcome import Note, NoteKind
from kladder.core.point import Point
from kladder.run.modes import base
from kladder.run.modes.base import Ended, PostGraph, RankPlace


def test_a_mode_declares_nothing_unless_it_says_so_and_must_observe():
    class Bare(base.Mode):
        pass
    pt = Point("s", 4, (("N", 1),))
    assert (Bare.children(pt, "cuda"), Bare.starts_fresh(pt)) == (0, False)
    assert (Bare.needs_cuda, Bare.backward, Bare.judges_mutations, Bare.start_order, Bare.rungs) == (False, False, False, 2, ())

    class Own(base.Mode):
        child_processes, fresh_process = 2, True
    assert (Own.children(pt, "cpu"), Own.starts_fresh(pt)) == (2, True)
    with pytest.raises(NotImplementedError):
        next(Bare().observe(None))


def test_both_ways_to_call_pass_the_arguments_and_return_what_the_kernel_returns():
    x = torch.tensor([1.0, 2.0])
    assert torch.equal(base.call_once(torch.add, [x, x], {"alpha": 3}), torch.tensor([4.0, 8.0]))
    assert torch.equal(base.call_raw(torch.add, [x], {"other": x, "alpha": 2}), torch.tensor([3.0, 6.0]))
    with pytest.raises(ZeroDivisionError):
        base.call_once(lambda: 1 / 0, [], {})                       # the kernel's own error, unwrapped here


# ---------------------------------------------------------------------------- declared writes
def _spec(mutated=None, overwritten=None, grads=None):
    def given(**kw):
        return {k: v for k, v in kw.items() if v is not None}
    return kl.Spec("s", kernel=lambda x: x * 3, reference=lambda x: x * 3, **given(grads=grads),
                   args={"x": kl.Tensor("N", dtype="float32", **given(mutated=mutated))}, dims={"N": kl.Dim(1, 8)},
                   returns=kl.Tensor("N", like="x", **given(grad_overwritten=overwritten)))


def _writes(spec, backward, config=()):
    return base.declared_writes(SimpleNamespace(spec=spec, point=Point("s", 4, (("N", 3),), config=config),
                                                backward=backward))


@pytest.mark.parametrize("mutated, overwritten, grads, backward, writes", [
    (None, None, None, False, []),
    (True, None, None, False, ["x"]),
    ("gradient", None, ["x"], False, ["x"]),                       # the forward alone may leave anything there
    ("gradient", None, ["x"], True, ["x"]),                        # with the backward: its gradient, once
    ("backward", None, ["x"], False, []),                          # the forward alone writes nothing
    ("backward", None, ["x"], True, ["x"]),
    (None, True, ["x"], True, ["upstream out"]),
])
def test_what_the_kernel_writes_at_a_point_with_and_without_its_backward(mutated, overwritten, grads, backward, writes):
    assert _writes(_spec(mutated, overwritten, grads), backward) == writes


def test_a_write_declared_under_a_config_is_declared_only_there():
    spec = kl.Spec("s", kernel=lambda x, in_place=False: x * 3, reference=lambda x: x * 3,
                   configs=[{"in_place": False}, {"in_place": True}],
                   args={"x": kl.Tensor("N", dtype="float32", mutated={"in_place": True})}, dims={"N": kl.Dim(1, 8)},
                   returns=kl.Tensor("N", like="x"))
    assert _writes(spec, False, (("in_place", True),)) == ["x"]
    assert _writes(spec, False, (("in_place", False),)) == []


# ---------------------------------------------------------------------------- PostGraph
@pytest.mark.parametrize("pg, text", [
    (PostGraph(), ""), (PostGraph(tried=True), "captured"), (PostGraph.failed("RuntimeError: sync"), "RuntimeError: sync"),
])
def test_post_graph_text_round_trips(pg, text):
    assert pg.format() == text and PostGraph.parse(text) == pg
    assert pg.captured is (text == "captured")


# ---------------------------------------------------------------------------- a collective's end as JSON
def _round_trip(ended: Ended) -> Ended:
    return Ended.from_dict(json.loads(json.dumps(ended.to_dict(), allow_nan=False)))


def test_a_hang_with_every_ranks_place_round_trips():
    ended = Ended(how="hung", watchdog_s=20.0, waited_s=20.4,
                  ranks=[RankPlace(0, "calls", 5, 4, size=2047), RankPlace(1, "sync", 5, 5)])
    back = _round_trip(ended)
    assert back == ended and isinstance(back.ranks[0], RankPlace) and back.ranks[1].size is None


def test_a_raise_with_its_time_and_a_broken_rank_with_the_specs_note_round_trip():
    raised = Ended(how="raised", rank=1, phase="calls", call=3, kind="device_fault", error="RuntimeError",
                   text="illegal memory access", at=1765000000.25)
    assert _round_trip(raised) == raised
    broken = Ended(how="broken", rank=0, phase="setup", note=Note.of(NoteKind.PROCESS_FAILED, label="rank 0", text="no"))
    back = _round_trip(broken)
    assert back.note.kind == NoteKind.PROCESS_FAILED and back.note.facts.text == "no"


def test_an_ended_read_from_an_older_record_takes_the_defaults_for_what_it_lacks():
    back = Ended.from_dict({"how": "done", "unknown": 1})
    assert back == Ended(how="done") and back.call == -1 and back.ranks == []
