"""run/modes/aba.py: A's run-to-run variation (which outputs it leaves out of the bitwise
comparison after B, and how it says so with and without Spec determinism), the snapshot kept
before B, and the A-A-B-A sequence observed directly on the CPU with torch ops as the kernel."""
from types import SimpleNamespace

import pytest
import torch

import kladder as kl
from kladder.core.outcome import Cause, NoteKind
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import aba
from kladder.run.modes.base import Call, Measured, Same


def _drive(gen):
    """(what a generator yielded, what it returned)."""
    out = []
    while True:
        try:
            out.append(next(gen))
        except StopIteration as stop:
            return out, stop.value


def _h(deterministic=False):
    return SimpleNamespace(spec=SimpleNamespace(repetition=kl.Repetition(deterministic=deterministic)))


A = {"y": torch.tensor([1.0, 2.0, 3.0]), "lse": torch.tensor([0.5])}


def test_equal_bits_keep_every_output_and_say_nothing():
    seen, (kept, varied) = _drive(aba.run_to_run(_h(), A, {n: t.clone() for n, t in A.items()}, "aba"))
    assert seen == [] and set(kept) == {"y", "lse"} and varied is False


def test_a_varying_output_is_left_out_and_noted_when_the_spec_allows_it():
    again = {"y": torch.tensor([1.0, 2.0, 3.0000002]), "lse": A["lse"].clone()}
    seen, (kept, varied) = _drive(aba.run_to_run(_h(), A, again, "jitcache", files=7))
    assert set(kept) == {"lse"} and varied is True
    (m,) = seen
    assert isinstance(m, Measured) and m.note.kind == NoteKind.RUN_TO_RUN
    assert m.note.facts.to_dict() == {"outputs": ["y"], "differ": 1, "total": 3, "mode": "jitcache", "files": 7}


def test_signed_zeros_and_nan_payloads_are_bits_that_differ():
    first = {"y": torch.tensor([0.0, float("nan")])}
    other = torch.tensor([float("nan")]).view(torch.int32).add(1).view(torch.float32)
    second = {"y": torch.cat([torch.tensor([-0.0]), other])}
    seen, (kept, _) = _drive(aba.run_to_run(_h(), first, second, "aba"))
    assert kept == {} and seen[0].note.facts.differ == 2


@pytest.mark.parametrize("mode, label", [("aba", aba.REPEAT_LABEL), ("jitcache", "A twice on the warm cache")])
def test_a_deterministic_spec_fails_the_variation_itself(mode, label):
    again = {"y": torch.tensor([1.0, 2.0, 4.0]), "lse": A["lse"].clone()}
    seen, (kept, varied) = _drive(aba.run_to_run(_h(deterministic=True), A, again, mode))
    (same,) = seen
    assert isinstance(same, Same) and same.cause == Cause.RUN_TO_RUN and same.call == label
    assert list(same.before) == ["y"] and same.after is again
    assert set(kept) == {"lse"} and varied is True


def test_an_output_missing_or_of_another_shape_or_dtype_is_not_variation():
    again = {"y": torch.tensor([1.0, 2.0]), "lse": A["lse"].double()}
    seen, (kept, varied) = _drive(aba.run_to_run(_h(deterministic=True), A, again, "aba"))
    assert seen == [] and set(kept) == {"y", "lse"} and varied is False
    seen, (kept, _) = _drive(aba.run_to_run(_h(deterministic=True), A, {}, "aba"))
    assert seen == [] and set(kept) == {"y", "lse"}


def test_the_snapshot_is_a_copy_of_the_tensors_only():
    y = torch.ones(2)
    snap = aba._snapshot({"y": y, "n": 3, "none": None})
    y.add_(1)                                    # B overwrites what A returned
    assert list(snap) == ["y"] and snap["y"].tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------- the sequence
class _Memo:
    """torch.mul by 2, but the second shape it sees gets the first shape's scale cached wrong:
    state left by one call for the next."""

    def __init__(self, leak):
        self.leak, self.last = leak, None

    def __call__(self, x):
        scale = 2.0
        if self.leak and self.last is not None and self.last != x.shape:
            scale = 2.0 + 1.0 / x.shape[-1]                 # a stale plan, visible after B
        self.last = x.shape
        return torch.mul(x, scale)


def _spec(kernel):
    return kl.Spec("twice", kernel=kernel, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 64)}, returns=kl.Tensor("N", like="x"))


def _point():
    return Point("twice", 4, (("N", 5),), mode="aba", seed=3, partner=(("dims", (("N", 9),)),))


def test_a_then_a_then_b_then_a_each_labelled_and_the_last_a_held_to_the_first():
    seen = list(aba.MODE.observe(Harness(_spec(_Memo(leak=False)), _point(), "cpu")))
    assert [type(o) for o in seen] == [Call, Call, Call, Call, Same]
    assert [o.label for o in seen[:4]] == ["call 1 of 3 (A)", aba.REPEAT_LABEL, "call 2 of 3 (B)",
                                           "call 3 of 3 (A again, after B)"]
    assert [o.prep.point.sizes["N"] for o in seen[:4]] == [5, 5, 9, 5]
    assert seen[2].prep.point.partner == () and seen[2].prep.point.seed != 3         # B is its own point
    assert torch.equal(seen[0].prep.inputs.args[0], seen[3].prep.inputs.args[0])    # A's inputs, again
    same = seen[4]
    assert same.cause == Cause.ABA and same.call == "call 3 of 3 (A again, after B)"
    assert torch.equal(same.before["out"], seen[0].returned) and torch.equal(same.after["out"], seen[3].returned)


def test_state_left_by_b_shows_as_a_difference_after_b():
    seen = list(aba.MODE.observe(Harness(_spec(_Memo(leak=True)), _point(), "cpu")))
    same = seen[-1]
    assert not torch.equal(same.before["out"], same.after["out"])
