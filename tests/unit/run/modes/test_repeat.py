"""run/modes/repeat.py on the CPU: the plan a point carries, the batch size for either launch,
the ring (out-arguments handed a slot, returned tensors that fit), the worst call kept, the
budget, the mode's refusals, and one eager repetition observed directly (call numbering, first
calls, the worst call and its first). The graph runner needs CUDA (tests/test_rung5.py fakes it)."""
from types import SimpleNamespace

import pytest
import torch

import kladder as kl
from kladder.core.budgets import call_budget
from kladder.core.notation import Inputs, Launch
from kladder.core.outcome import NoteKind, Skip
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import repeat as rep
from kladder.run.modes.base import Call, Repeats


def _spec(kernel, out=False, **kw):
    args = {"x": kl.Tensor("N", dtype="float32", **kw)}
    if out:
        args["out"] = kl.Out("N", like="x")
    return kl.Spec("twice", kernel=kernel, reference=lambda x: 2 * x, args=args, dims={"N": kl.Dim(1, 1 << 24)},
                   returns=None if out else kl.Tensor("N", like="x"))


def _point(n=5, **plan):
    return Point("twice", 5, (("N", n),), kind="repeat", mode="repeat", repeat=tuple(plan.items()))


def _twice(x):
    return 2 * x


# ---------------------------------------------------------------------------- the plan
def test_a_plan_without_values_is_the_devices_budget_same_inputs_graphed_and_alone():
    plan = rep.Plan.of(_point(), "cpu")
    budget = call_budget("cpu")
    assert (plan.calls, plan.seconds) == (budget.calls, budget.seconds)
    assert (plan.inputs, plan.launch, plan.load) == (Inputs.SAME, Launch.GRAPH, False)


def test_a_plan_reads_every_value_the_point_carries():
    plan = rep.Plan.of(_point(calls=12, seconds=1.5, inputs="fresh", launch="eager", load=True), "cuda")
    assert plan == rep.Plan(12, 1.5, Inputs.FRESH, Launch.EAGER, True)


# ---------------------------------------------------------------------------- calls a batch
def _h(n, device, out=False):
    spec = _spec(_twice, out=out)
    return SimpleNamespace(spec=spec, point=_point(n), device=device, backward=False)


@pytest.mark.parametrize("n, device, launch, sets, k", [
    (5, "cpu", Launch.EAGER, 1, 8),               # the CPU: always 8
    (5, "cpu", Launch.EAGER, 3, 6),               # a multiple of the input sets
    (5, "cpu", Launch.EAGER, 9, 9),               # never fewer than the input sets
    (5, "cuda", Launch.GRAPH, 1, 256),            # small outputs: the most a graph holds
    (5, "cuda", Launch.EAGER, 1, 64),
    (5, "cuda", Launch.GRAPH, 8, 256),
    ((1 << 30) // 4 // 100, "cuda", Launch.GRAPH, 8, 96),   # 100 calls fit in RING_BYTES: 96, a multiple of 8
    (1 << 24, "cuda", Launch.GRAPH, 1, 16),       # 64 MiB a call: 16 fit
    (1 << 24, "cuda", Launch.GRAPH, 3, 15),
])
def test_the_calls_a_batch_fit_the_ring_within_the_bounds_and_a_multiple_of_the_sets(n, device, launch, sets, k):
    assert rep._slots(_h(n, device), sets, launch) == k


def test_a_huge_output_still_gets_the_fewest_calls_a_batch():
    h = _h(1 << 24, "cuda")
    h.spec = kl.Spec("twice", kernel=_twice, reference=_twice, args={"x": kl.Tensor("N", dtype="float64")},
                     dims={"N": kl.Dim(1, 1 << 28)}, returns=kl.Tensor("N", like="x"))
    h.point = _point(1 << 28)                      # 2 GiB a call: more than the ring holds
    assert rep._slots(h, 1, Launch.GRAPH) == rep.SLOTS[Launch.GRAPH][0]


# ---------------------------------------------------------------------------- the ring
def test_an_out_argument_is_handed_its_slot_and_a_returned_tensor_must_fit_its_own():
    h = Harness(_spec(lambda x, out: out.copy_(2 * x), out=True), _point(), "cpu")
    ring = rep.Ring(h, 4)
    assert ring.slots["out"].shape == (4, 5) and ring.out_at == {1: "out"} and ring.returned_names == []
    prep = h.prepare()
    args = ring.args(prep, 2)
    assert args[0] is prep.inputs.args[0] and args[1].data_ptr() == ring.slots["out"][2].data_ptr()
    assert ring.returned(prep, None) == {}                          # an out-argument is written, not copied

    h = Harness(_spec(_twice), _point(), "cpu")
    ring = rep.Ring(h, 2)
    prep = h.prepare()
    assert ring.returned_names == ["out"]
    assert set(ring.returned(prep, torch.zeros(5))) == {"out"}
    assert ring.returned(prep, torch.zeros(6)) == {}                # the wrong shape: the first call's finding
    assert ring.returned(prep, torch.zeros(5, dtype=torch.float64)) == {}
    assert not ring.fits("out", [0.0] * 5)


def test_poisoning_the_ring_overwrites_every_slot():
    h = Harness(_spec(_twice), _point(), "cpu")
    ring = rep.Ring(h, 3)
    ring.slots["out"].zero_()
    ring.poison()
    assert ring.slots["out"].isnan().all()


def test_the_returned_outputs_are_put_back_as_the_kernel_returns_them():
    one = SimpleNamespace(spec=SimpleNamespace(returned=["y"]))
    two = SimpleNamespace(spec=SimpleNamespace(returned=["y", "lse"]))
    none = SimpleNamespace(spec=SimpleNamespace(returned=[]))
    assert rep._returned_value(one, {"y": 1}) == 1
    assert rep._returned_value(two, {"y": 1}) == (1, None)
    assert rep._returned_value(none, {"y": 1}) is None


# ---------------------------------------------------------------------------- the worst call
def _worst(k=4):
    ring = SimpleNamespace(slots={"out": torch.arange(k * 2, dtype=torch.float32).view(k, 2)})
    return rep.Worst(ring, ["out"]), ring


def test_the_worst_call_is_the_most_far_then_the_most_bits_the_first_of_equals():
    worst, ring = _worst()
    i32 = torch.int32
    worst.update({"out": torch.tensor([0, 9, 1, 1], dtype=i32)}, {"out": torch.tensor([0, 0, 1, 1], dtype=i32)}, 10)
    call, kept = worst.result()
    assert call == 10 + 1 + 2 and torch.equal(kept["out"], ring.slots["out"][2])    # far beats bits; first of equals
    ring.slots["out"] += 100                                                          # the next batch's outputs
    worst.update({"out": torch.tensor([1, 0, 0, 0], dtype=i32)}, {"out": torch.tensor([1, 0, 0, 0], dtype=i32)}, 14)
    call, kept = worst.result()
    assert call == 13 and kept["out"].tolist() == [4.0, 5.0]                         # as bad, not worse: kept
    worst.update({"out": torch.tensor([0, 0, 0, 5], dtype=i32)}, {"out": torch.tensor([0, 0, 0, 2], dtype=i32)}, 18)
    call, kept = worst.result()
    assert call == 22 and torch.equal(kept["out"], ring.slots["out"][3])


def test_no_worst_call_where_no_call_differed_or_nothing_is_compared():
    worst, _ = _worst()
    zeros = {"out": torch.zeros(4, dtype=torch.int32)}
    assert worst.result() is None
    worst.update(zeros, zeros, 0)
    assert worst.result() is None
    empty = rep.Worst(SimpleNamespace(slots={}), [])
    empty.update({}, {}, 0)
    assert empty.result() is None


def test_the_worst_call_across_outputs_adds_their_counts():
    ring = SimpleNamespace(slots={"a": torch.zeros(2, 1), "b": torch.ones(2, 1)})
    worst = rep.Worst(ring, ["a", "b"])
    i32 = torch.int32
    worst.update({"a": torch.tensor([3, 0], dtype=i32), "b": torch.tensor([0, 2], dtype=i32)},
                 {"a": torch.tensor([0, 1], dtype=i32), "b": torch.tensor([1, 1], dtype=i32)}, 0)
    assert worst.result()[0] == 2                                  # far 1+1 against far 0+1


# ---------------------------------------------------------------------------- the budget
@pytest.mark.parametrize("calls, seconds, made, elapsed, stopped", [
    (16, 30.0, 15, 1.0, ""), (16, 30.0, 16, 1.0, "calls"), (16, 30.0, 8, 30.0, "seconds"),
    (0, 30.0, 10**9, 29.9, ""),                 # no bound on calls: the seconds alone
    (16, 30.0, 16, 31.0, "calls"),              # both spent: the calls said first
])
def test_the_loop_stops_at_the_first_budget_spent(calls, seconds, made, elapsed, stopped):
    loop = SimpleNamespace(plan=rep.Plan(calls, seconds, Inputs.SAME, Launch.EAGER, False), made=made)
    assert rep.Loop.stop(loop, elapsed) == stopped


# ---------------------------------------------------------------------------- the mode
def test_an_input_the_kernel_writes_by_design_is_refused_naming_it():
    spec = _spec(lambda x: x.mul_(2), mutated=True)
    with pytest.raises(Skip) as e:
        list(rep.MODE.observe(Harness(spec, _point(calls=8, launch="eager"), "cpu")))
    assert e.value.note.kind == NoteKind.INPUTS_MUTATED and e.value.note.facts.args == ["x"]


def test_load_needs_a_second_stream_of_work_on_a_gpu():
    with pytest.raises(Skip) as e:
        list(rep.MODE.observe(Harness(_spec(_twice), _point(calls=8, load=True), "cpu")))
    assert e.value.note.kind == NoteKind.MODE_NEEDS_CUDA


class _WrongAt:
    """2x, one ulp up on the calls numbered in `wrong` (1-based, counting every call)."""

    def __init__(self, wrong):
        self.n, self.wrong = 0, set(wrong)

    def __call__(self, x):
        self.n += 1
        y = 2 * x
        return torch.nextafter(y, torch.full_like(y, float("inf"))) if self.n in self.wrong else y


def test_an_eager_repetition_numbers_its_calls_and_keeps_the_worst_with_its_first():
    kernel = _WrongAt({7, 12})
    observed = list(rep.MODE.observe(Harness(_spec(kernel), _point(calls=20, launch="graph"), "cpu")))
    *calls, r = observed
    assert [type(c) for c in calls] == [Call] and calls[0].label == "call 1 (the first on input set 1 of 1, eager)"
    assert isinstance(r, Repeats)
    # 1 first call, then batches of 8 until 20 calls are made: 25 (on the CPU a graph plan runs eagerly)
    assert (r.calls, r.firsts, r.looped, r.launch, r.inputs, r.stopped, r.fallback) == (
        25, 1, 24, Launch.EAGER, Inputs.SAME, "calls", None)
    assert r.bits["out"].dtype == torch.int64 and r.bits["out"].shape == (24,)
    assert (r.bits["out"] > 0).nonzero().flatten().add(2).tolist() == [7, 12]   # compared calls are 2..25
    assert r.bits["out"][7 - 2] == 5                                           # every element of call 7
    assert r.far["out"].sum() == 0                                # one ulp: within the tolerance
    assert r.worst_call == 7 and r.worst_prep is calls[0].prep
    assert torch.equal(r.worst_first["out"], calls[0].returned)
    assert not torch.equal(r.worst["out"], calls[0].returned)


def test_fresh_inputs_cycle_a_pool_and_each_call_is_compared_with_its_own_sets_first():
    kernel = _WrongAt({6})
    *calls, r = list(rep.MODE.observe(Harness(_spec(kernel), _point(calls=8, inputs="fresh", launch="eager"), "cpu")))
    assert len(calls) == rep.POOL["cpu"] == r.firsts
    assert len({c.prep.point.seed for c in calls}) == rep.POOL["cpu"]
    assert r.calls == 12 and r.bits["out"].tolist() == [0, 5, 0, 0, 0, 0, 0, 0]
    assert r.worst_call == 6 and r.worst_prep is calls[1].prep        # call 6 ran on input set (6-1) % 4 + 1 = 2
    assert torch.equal(r.worst_first["out"], calls[1].returned)


def test_an_out_argument_call_that_skips_its_writes_leaves_the_poison_and_is_far():
    """Every slot is poisoned before its batch: a call that writes nothing (call 5 here) is seen
    as far from its first call, not as the value an earlier call left in the slot."""
    made = {"n": 0}

    def lazy(x, out):
        made["n"] += 1
        if made["n"] != 5:
            torch.mul(x, 2, out=out)

    *calls, r = list(rep.MODE.observe(Harness(_spec(lazy, out=True), _point(calls=9, launch="eager"), "cpu")))
    assert r.calls == 9 and r.bits["out"].tolist() == [0, 0, 0, 5, 0, 0, 0, 0]
    assert r.far["out"].tolist() == [0, 0, 0, 5, 0, 0, 0, 0] and r.worst_call == 5
    assert r.worst["out"].isnan().all()
