"""run/harness.py on tiny CPU tensors with plain torch kernels: outputs read by name (an Out
arg, one returned tensor, a dict, a tuple of the right or the wrong length), the reference's
outputs split by name, a mutated input's copy, preparing and calling (the kernel's exception
wrapped as its own, a spec's failure to build inputs as BROKEN), the reference differentiated by
autograd for Spec(grads=), and the small helpers (detaching, the reference's device, a broadcast
upstream gradient copied into guarded storage)."""
import pytest
import torch

import kladder as kl
from kladder.core.outcome import KernelError, NoteKind, SpecBroken
from kladder.core.point import Point
from kladder.run import harness
from kladder.run.harness import Harness

X = {"x": kl.Tensor("N", dtype="float32")}
DIMS = {"N": kl.Dim(1, 64)}
PT = Point("s", 1, (("N", 6),))


def _spec(**kw):
    base = {"kernel": lambda x: x * 2, "reference": lambda x: x * 2, "args": X, "returns": kl.Tensor("N", like="x"),
            "dims": DIMS}
    return kl.Spec("s", **{**base, **kw})


def test_one_returned_tensor_is_out_whatever_it_is():
    h = Harness(_spec(), PT, "cpu")
    prep = h.prepare()
    assert h.outputs(prep, "anything") == {"out": "anything"}


def test_named_returns_are_read_from_a_dict_or_a_tuple_of_their_length_else_missing():
    two = {"a": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x")}
    spec = _spec(kernel=lambda x: (x, x), reference=lambda x: (x, x), returns=two)
    h = Harness(spec, PT, "cpu")
    prep = h.prepare()
    assert h.outputs(prep, (1, 2)) == {"a": 1, "b": 2}
    assert h.outputs(prep, [1, 2]) == {"a": 1, "b": 2}
    assert h.outputs(prep, {"b": 5}) == {"a": None, "b": 5}
    assert h.outputs(prep, (1, 2, 3)) == {}                  # arity wrong: nothing read (checks.contract says why)
    assert h.outputs(prep, None) == {}


def test_an_out_arg_is_read_from_its_buffer_or_from_the_calls_own_args():
    def kernel(x, o):
        o.copy_(x * 2)
    spec = kl.Spec("s", kernel=kernel, reference=lambda x: x * 2, dims=DIMS,
                   args={**X, "o": kl.Out("N", like="x")})
    h = Harness(spec, PT, "cpu")
    prep = h.prepare()
    h.call(prep)
    out = h.outputs(prep, None)
    assert list(out) == ["o"] and torch.equal(out["o"], prep.inputs.args[0] * 2)
    ring = [prep.inputs.args[0], torch.full((6,), 7.0)]
    assert torch.equal(h.outputs(prep, None, ring)["o"], torch.full((6,), 7.0))


def test_the_references_outputs_are_split_by_name():
    h = Harness(_spec(), PT, "cpu")
    assert h._split(3) == {"out": 3}
    two = {"a": kl.Tensor("N", like="x"), "b": kl.Tensor("N", like="x")}
    h2 = Harness(_spec(returns=two, kernel=lambda x: (x, x), reference=lambda x: (x, x)), PT, "cpu")
    assert h2._split((1, 2)) == {"a": 1, "b": 2} and h2._split({"b": 1}) == {"b": 1}
    assert h2._split((1,)) == {"a": 1}                      # short: what there is


def test_expected_runs_the_reference_in_float64_on_the_inputs_as_passed():
    h = Harness(_spec(), PT, "cpu")
    prep = h.prepare()
    exp = h.expected(prep)
    assert exp.refs["out"].dtype == torch.float64
    assert torch.equal(exp.refs["out"], prep.inputs.args[0].double() * 2) and exp.refs_lo == {}      # rounded copies: a GPU's only


def test_a_mutated_input_gets_a_fresh_copy_for_the_reference_and_is_judged_as_it_left_it():
    def inplace(x):
        x.mul_(2)
        return x.clone()
    spec = kl.Spec("s", kernel=inplace, reference=inplace, dims=DIMS, returns=kl.Tensor("N", like="x"),
                   args={"x": kl.Tensor("N", dtype="float32", mutated=True)})
    h = Harness(spec, PT, "cpu")
    prep = h.prepare()
    before = prep.ref_args[0].clone()
    exp = h.expected(prep)
    assert torch.equal(prep.ref_args[0], before)            # the peers still see the inputs as passed
    assert torch.equal(exp.refs["x"], before * 2)


def test_the_references_exception_is_the_specs_and_oom_stays_oom():
    def bad(x):
        raise IndexError("ref")
    h = Harness(_spec(reference=bad), PT, "cpu")
    with pytest.raises(SpecBroken) as e:
        h.expected(h.prepare())
    assert e.value.note.kind == NoteKind.REFERENCE_RAISED

    def oom(x):
        raise MemoryError("cannot allocate memory")
    h = Harness(_spec(reference=oom), PT, "cpu")
    with pytest.raises(MemoryError):
        h.expected(h.prepare())


def test_a_call_wraps_the_kernels_exception_with_its_label_sys_exit_included():
    def leaves(x):
        raise SystemExit(4)
    h = Harness(_spec(kernel=leaves), PT, "cpu")
    prep = h.prepare()
    with pytest.raises(KernelError) as e:
        h.call(prep, "replay 2")
    assert e.value.label == "replay 2" and isinstance(e.value.error, SystemExit) and h.calling is prep


def test_call_with_calls_on_the_args_given_and_wraps_as_call_does():
    h = Harness(_spec(kernel=lambda x, k=1: x * k), PT, "cpu")
    assert torch.equal(h.call_with([torch.ones(2)], {"k": 3}, "ring 0"), torch.full((2,), 3.0))
    with pytest.raises(KernelError) as e:
        h.call_with([torch.ones(2)], {"nope": 1}, "ring 1")
    assert e.value.label == "ring 1" and isinstance(e.value.error, TypeError)


def test_inputs_that_cannot_be_built_are_the_specs_with_the_whole_message(monkeypatch):
    def broken(*a, **k):
        raise ValueError("line one\nline two")
    monkeypatch.setattr(harness, "materialize", broken)
    with pytest.raises(SpecBroken) as e:
        Harness(_spec(), PT, "cpu").prepare()
    assert e.value.note.kind == NoteKind.INPUTS_FAILED and e.value.note.facts.text == "line one\nline two"


def test_a_prepared_seed_replaces_the_points():
    h = Harness(_spec(), PT, "cpu")
    a, b, c = h.prepare(seed=11), h.prepare(seed=11), h.prepare(seed=12)
    assert a.point.seed == 11 and torch.equal(a.inputs.args[0], b.inputs.args[0])
    assert not torch.equal(a.inputs.args[0], c.inputs.args[0])


def test_the_honest_peer_is_the_reference_in_the_outputs_dtype_with_a_spread_when_values_need_it():
    h = Harness(_spec(kernel=lambda x: x.sum().reshape(1) * 0 + x, reference=lambda x: x.cumsum(0)), PT, "cpu")
    prep = h.prepare()
    refs = h.expected(prep).refs
    peers = h.peers(prep, {"out": "values"}, refs)
    peer = peers["out"]
    assert peer.kernel.dtype == torch.float32 and peer.facts == {"dtype": "float32"} and callable(peer.more)
    assert peer.spread is not None and peer.unit > 0
    assert h.peers(prep, {"out": "bias"}, refs)["out"].spread is None        # bias: no spread drawn


def test_a_peer_the_reference_cannot_give_says_why():
    h = Harness(_spec(reference=lambda x: 3.0), PT, "cpu")
    prep = h.prepare()
    peer = h.peers(prep, {"out": "bias"}, {"out": torch.zeros(6, dtype=torch.float64)})["out"]
    assert peer.kernel is None and peer.facts == {"error": "no tensor", "text": "the reference returned float"}


# ---------------------------------------------------------------------------- gradients
def test_the_reference_is_differentiated_held_gradients_added_at_an_accumulation_point():
    spec = kl.Spec("g", kernel=lambda x, w: x * w, reference=lambda x, w: x * w, dims=DIMS, grads=["w"],
                   args={"x": kl.Tensor("N", dtype="float32"), "w": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"))
    x, w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([4.0, 5.0, 6.0], dtype=torch.float64)
    up = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)
    got = harness.reference_grads(spec, Point("g", 1, (("N", 3),)), [x, w, up], lambda r: {"out": r})
    assert torch.equal(got["out"], x * w) and not got["out"].requires_grad
    assert torch.equal(got["grad of w"], up * x)
    held = torch.full((3,), 0.5, dtype=torch.float64)
    acc = harness.reference_grads(spec, Point("g", 4, (("N", 3),), mode="accumulate"), [x, w, up, held],
                                  lambda r: {"out": r})
    assert torch.equal(acc["grad of w"], held + harness.ACCUMULATE_TIMES * up * x)


def test_an_input_the_reference_does_not_use_gets_a_zero_gradient():
    spec = kl.Spec("g", kernel=lambda x, w: x * 2, reference=lambda x, w: x * 2, dims=DIMS, grads=["w"],
                   args={"x": kl.Tensor("N", dtype="float32"), "w": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"))
    x, w, up = (torch.ones(3, dtype=torch.float64) for _ in range(3))
    got = harness.reference_grads(spec, Point("g", 1, (("N", 3),)), [x, w, up], lambda r: {"out": r})
    assert torch.equal(got["grad of w"], torch.zeros(3, dtype=torch.float64))


# ---------------------------------------------------------------------------- helpers
def test_detached_strips_the_graph_through_tuples_lists_and_dicts_keeping_their_types():
    leaf = torch.ones(2, requires_grad=True)
    y = leaf * 2
    out = harness._detached({"a": (y, [y]), "b": 3})
    assert not out["a"][0].requires_grad and not out["a"][1][0].requires_grad
    assert isinstance(out["a"], tuple) and isinstance(out["a"][1], list) and out["b"] == 3


def test_the_reference_runs_where_its_args_are_or_the_fallback():
    assert str(harness._device_of([3, torch.ones(1)], "cuda")) == "cpu"
    assert harness._device_of([3], "") == "cpu" and harness._device_of([], "cuda") == "cuda"


def test_off_cuda_or_for_a_model_point_the_reference_stays_on_the_points_device():
    spec = _spec()
    assert harness.reference_device(spec, PT, "cpu", {}) == "cpu"
    assert harness.reference_device(spec, Point("s", 8, (("N", 6),), mode="model", kind="model"), "cuda", {}) == "cuda"


def test_a_broadcast_upstream_gradient_is_stored_once_and_expanded_again():
    t = torch.arange(3.0).expand(4, 3)
    g = harness._guarded_copy("upstream y", t, "cpu", 64)
    assert g.view.shape == (4, 3) and g.view.stride() == (0, 1) and torch.equal(g.view, t)
    plain = harness._guarded_copy("upstream y", torch.arange(6.0).view(2, 3), "cpu", 64)
    assert plain.view.stride() == (3, 1) and torch.equal(plain.view, torch.arange(6.0).view(2, 3))


def test_more_runs_for_a_near_miss_are_another_thread_split_then_fresh_roundings_each_with_its_reference():
    from kladder.checks import peer as peer_math
    h = Harness(_spec(kernel=lambda x: x.cumsum(0), reference=lambda x: x.cumsum(0)), PT, "cpu")
    prep = h.prepare()
    refs = h.expected(prep).refs
    threads = torch.get_num_threads()
    runs = h.peers(prep, {"out": "bias"}, refs)["out"].more()
    assert torch.get_num_threads() == threads                       # put back after the one-thread run
    assert len(runs) == 1 + peer_math.PEER_RUNS
    assert all(got.dtype == torch.float32 and ref.dtype == torch.float64 for got, ref in runs)
    assert runs[0][1] is refs["out"]                                # the first against the point's own reference
    assert not any(torch.equal(runs[1][1], r) for _, r in runs[2:])  # each fresh rounding its own reference
