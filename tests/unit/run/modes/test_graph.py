"""run/modes/graph.py's decisions, with torch.cuda's stream and graph calls replaced by a CPU
stand-in whose replay re-runs the captured calls into the memory the capture returned (as a real
replay does): fresh inputs copied into the static buffers before each replay, every output
poisoned (floats and integers) and said in the label, and what a failed capture becomes under
each kl.Modes(graphs=) claim. A real capture needs CUDA (tests/test_declarations.py, test_grads.py)."""

import pytest
import torch

import kladder as kl
from kladder.core.outcome import KernelError
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import graph
from kladder.run.modes.base import Call, Uncaptured

from conftest import FakeCudaGraph as _Graph
from conftest import fake_cuda_graphs


@pytest.fixture
def cpu_graphs(monkeypatch):
    state = {"healed": 0, "fail_on_exit": False}

    def after_capture():
        if state["fail_on_exit"]:
            raise RuntimeError("operation not permitted when stream is capturing")

    fake_cuda_graphs(monkeypatch, after_capture)
    monkeypatch.setattr(graph, "call_raw", lambda kernel, args, kwargs: _Graph.record(kernel, args, kwargs,
                                                                                       kernel(*args, **kwargs)))
    monkeypatch.setattr(graph, "heal_failed_capture", lambda: state.__setitem__("healed", state["healed"] + 1))
    return state


def _spec(kernel, graphs=None, dtype="float32"):
    return kl.Spec("g", kernel=kernel, reference=lambda x: x * 2, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", dtype=dtype), modes=kl.Modes(graphs=graphs))


def _h(kernel, **kw):
    return Harness(_spec(kernel, **kw), Point("g", 4, (("N", 6),), mode="graph", seed=21), "cpu")


def test_each_replay_runs_on_fresh_inputs_copied_into_the_captured_buffers(cpu_graphs):
    h = _h(lambda x: torch.mul(x, 2))
    gen = graph.MODE.observe(h)
    inputs_seen, outputs_seen = [], []
    for r in range(1, graph.REPLAYS + 1):
        call = next(gen)
        assert isinstance(call, Call)
        assert call.label == f"replay {r} of 3 (outputs poisoned before it: out = a signalling NaN (0x7FA00000))"
        assert call.prep.point.seed == 21                           # the static inputs' point
        x = call.prep.inputs.args[0]
        assert torch.equal(call.returned, 2 * x)                    # the replay's result for the new inputs
        assert torch.equal(call.prep.ref_args[0].to(x.dtype), x)    # the reference gets them too
        inputs_seen.append(x.clone())
        outputs_seen.append(call.returned.data_ptr())
    with pytest.raises(StopIteration):
        next(gen)
    assert not torch.equal(inputs_seen[0], inputs_seen[1]) and not torch.equal(inputs_seen[1], inputs_seen[2])
    assert len(set(outputs_seen)) == 1                              # one static output, replayed into
    assert cpu_graphs["healed"] == 0


class _FrozenCount:
    """Writes as many elements as the first call saw (a count the host read, frozen at capture),
    into memory the capture allocated, as a graph's pool hands it to every replay."""

    def __init__(self, dtype):
        self.n, self.dtype, self.pool = None, dtype, None

    def __call__(self, x):
        if self.n is None:
            self.n = 3
        if _Graph.recording is not None:
            self.pool = torch.empty(x.shape, dtype=self.dtype)
        out = self.pool if self.pool is not None else torch.empty(x.shape, dtype=self.dtype)
        out[: self.n] = (x[: self.n] * 2).to(self.dtype)
        return out


@pytest.mark.parametrize("dtype, poison, word", [
    (torch.float32, None, "a signalling NaN (0x7FA00000)"),
    (torch.int32, -1515870811, "0xA5A5A5A5 (-1515870811)"),
])
def test_an_element_a_replay_leaves_unwritten_holds_the_poison_named_in_the_label(cpu_graphs, dtype, poison, word):
    calls = list(graph.MODE.observe(_h(_FrozenCount(dtype), dtype=str(dtype).removeprefix("torch."))))
    assert len(calls) == graph.REPLAYS and calls[-1].label.endswith(f"out = {word})")
    written, tail = calls[-1].returned[:3], calls[-1].returned[3:]
    assert torch.equal(written, (calls[-1].prep.inputs.args[0][:3] * 2).to(dtype))
    if poison is None:
        assert tail.isnan().all()
    else:
        assert tail.tolist() == [poison] * 3


def test_a_failed_capture_not_claimed_warns_and_judges_the_eager_call_before_it(cpu_graphs):
    def syncs(x):
        if _Graph.recording is not None:
            raise RuntimeError("cannot synchronize while capturing")
        return torch.mul(x, 2)

    out = list(graph.MODE.observe(_h(syncs)))
    assert [type(o) for o in out] == [Uncaptured, Call]
    assert out[0].skip is False and out[0].facts.error == "RuntimeError" and "synchronize" in out[0].facts.text
    assert out[1].label == "the eager call before the failed capture"
    assert torch.equal(out[1].returned, 2 * out[1].prep.inputs.args[0])
    assert cpu_graphs["healed"] == 1


def test_a_failed_capture_production_never_graphs_is_a_skip(cpu_graphs):
    def syncs(x):
        if _Graph.recording is not None:
            raise RuntimeError("cannot synchronize while capturing")
        return torch.mul(x, 2)

    out = list(graph.MODE.observe(_h(syncs, graphs=False)))
    assert len(out) == 1 and out[0].skip is True


def test_a_failed_capture_production_graphs_is_the_kernels_failure(cpu_graphs):
    def syncs(x):
        if _Graph.recording is not None:
            raise RuntimeError("cannot synchronize while capturing")
        return torch.mul(x, 2)

    with pytest.raises(KernelError) as e:
        list(graph.MODE.observe(_h(syncs, graphs=True)))
    assert e.value.label == "capture" and "synchronize" in str(e.value.error)
    assert cpu_graphs["healed"] == 1


def test_a_capture_that_fails_on_leaving_the_context_is_the_kernels_when_claimed(cpu_graphs):
    cpu_graphs["fail_on_exit"] = True
    with pytest.raises(KernelError) as e:
        list(graph.MODE.observe(_h(lambda x: torch.mul(x, 2), graphs=True)))
    assert e.value.label == "capture" and "capturing" in str(e.value.error)
    out = list(graph.MODE.observe(_h(lambda x: torch.mul(x, 2))))
    assert isinstance(out[0], Uncaptured) and out[0].facts.text == "operation not permitted when stream is capturing"


def test_a_label_without_outputs_to_poison_names_the_replay_alone():
    assert graph.replay_label(3, {}) == "replay 3 of 3"
    assert graph.replay_label(1, {"out": "w1", "lse": "w2"}) == "replay 1 of 3 (outputs poisoned before it: out = w1, lse = w2)"


def test_fresh_upstream_gradients_bring_their_snapshot_and_the_references_copies():
    from kladder.run.harness import Backward
    static = Backward({"out": torch.zeros(3)}, ref_extra=["old"], snapshot={"out": "old"})
    fresh = Backward({"out": torch.ones(3)}, ref_extra=["new"], snapshot={"out": "new"})
    graph._new_upstream(static, fresh)
    assert static.upstream["out"].tolist() == [1.0] * 3 and static.snapshot == {"out": "new"} and static.ref_extra == ["new"]
