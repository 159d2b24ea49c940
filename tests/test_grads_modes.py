"""Spec.grads on rung 5's stream of calls (each call's forward and backward on its own input set
and upstream gradients, every listed gradient against that set's reference) and on rung 4's
compiled mode (the compiled forward and the backward torch.compile builds): a backward bug each
mode finds that a single eager call does not, its fixed twin and torch's layer norm passing."""
import os
import sys

import torch

from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes.calls import Plan, Stream
from kladder.run.trial import run_point
from kladder.core.spec import upstream_name

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "specs"))
import grads_modes as gm
import grads_torch as gt

SIZES = (("M", 3), ("N", 65))


def _stream(calls: int, seconds: float = 120.0) -> tuple:
    # a call count well inside the time budget: the calls, not the seconds, end the stream
    return (("calls", calls), ("seconds", seconds), ("pattern", "A"), ("fresh", True), ("declared", False))


def _outcome(spec, mode, sizes=SIZES, rung=5, **kw):
    return run_point(spec, Point(spec.name, rung, sizes, mode=mode, **kw), "cpu").outcome


def test_the_stream_runs_the_backward_and_keeps_each_call_s_gradients():
    spec = gt.layernorm
    h = Harness(spec, Point(spec.name, 5, SIZES, mode="calls", repeat=_stream(8)), "cpu")
    assert h.backward
    first = h.prepare()
    s = Stream(h, Plan.of(h.point), first)
    assert s.names == ["out", "grad of x", "grad of w", "grad of b"] and not s.stackable
    s._keep([0, 1, 2])
    up = [s.sets[k].backward.upstream["out"] for k in (0, 1, 2)]
    assert all(not torch.equal(up[0], u) for u in up[1:])       # each set its own upstream gradient
    assert s.sets[1].backward.ref_extra and s.sets[1].backward.guarded[upstream_name("out")].view is up[1]


def test_a_backward_wrong_from_its_fifth_call_is_caught_by_the_stream_one_eager_call_passes_it():
    # one eager call (every single-call test) of a fresh launcher: right
    o = _outcome(gm._spec("ring", gm.ring_layer_norm(False)), "eager", rung=1)
    assert o.status.value == "passed", o.findings
    o = _outcome(gm._spec("ring", gm.ring_layer_norm(False)), "calls", repeat=_stream(12))
    assert o.status.value == "failed"
    (f,) = o.findings
    assert f.check.value == "stream" and f.output in ("grad of w", "grad of b")
    assert f.facts.first_wrong == 5 and f.call == "call 5 of 12" and f.facts.calls == 12
    o = _outcome(gm._spec("ring_fixed", gm.ring_layer_norm(True)), "calls", repeat=_stream(12))
    assert o.status.value == "passed", o.findings
    assert o.note.kind.value == "stream_clean" and o.note.facts.calls == 12 and o.note.facts.judged == 11


def test_torch_layer_norm_backward_passes_the_stream():
    o = _outcome(gt.layernorm, "calls", sizes=(("M", 4), ("N", 129)), repeat=_stream(16))
    assert o.status.value == "passed", o.findings
    assert o.note.facts.calls == 16 and o.note.facts.wrong == 0


def test_compiled_runs_the_compiled_backward_and_judges_its_gradients():
    sizes = (("M", 37), ("N", 129))
    # torch's layer norm as a custom op: its compiled backward (Inductor's code for
    # native_layer_norm_backward) against the float64 reference's autograd
    o = _outcome(gt.layernorm_op, "compiled", sizes=sizes, rung=4)
    assert o.status.value == "passed", (o.findings, o.note)
    # the backward op's fake states dx contiguous, its kernel writes it column-major: right
    # eagerly, and the compiled backward raises on it
    assert _outcome(gm.fake_strides, "eager", sizes=sizes, rung=1).status.value == "passed"
    o = _outcome(gm.fake_strides, "compiled", sizes=sizes, rung=4)
    assert o.status.value == "failed"
    (f,) = o.findings
    assert f.check.value == "raised" and f.call == "call 1 of 2 (compiles)" and "stride" in f.facts.text
    assert _outcome(gm.fake_strides_fixed, "compiled", sizes=sizes, rung=4).status.value == "passed"
    # a wrong weight gradient in the last tile, judged and located in the compiled mode's calls
    o = _outcome(gm.dw_last7, "compiled", sizes=sizes, rung=4)
    assert o.status.value == "failed"
    assert {f.output for f in o.findings} == {"grad of w"}
    assert {f.call for f in o.findings} <= {"call 1 of 2 (compiles)", "call 2 of 2 (the compiled graph)"}
    p = o.findings[0].pattern
    assert (p.cols.first, p.cols.last) == (122, 128)
