"""run/modes/in_model.py: the scores with and without the kernel, from kladder's own model (its
evaluate standing in: the model itself is rung 8's climb) or a user's adapter (a small fake with
score/target/samples/wrap), and whose fault each failure is: the baseline's (the spec's) or the
model with the kernel in its slot (the kernel's)."""
import pytest
import torch

import kladder as kl
import kladder.model as km
from kladder.core.outcome import KernelError, NoteKind, SpecBroken
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import in_model
from kladder.run.modes.base import Scores


class _Slot:
    """A user's model: its score with `target` replaced by the callable (None: the original)."""
    target = "mylib.layers:rmsnorm"

    def __init__(self, scores, samples=(), wrap=None, raises=None):
        self.scores, self.samples, self.raises, self.given = scores, list(samples), raises or {}, []
        if wrap is not None:
            self.wrap = wrap

    def score(self, replacement):
        self.given.append(replacement)
        key = "baseline" if replacement is None else "kernel"
        if key in self.raises:
            raise self.raises[key]
        return self.scores[key]


def rms(x):
    return x


def test_a_users_model_is_scored_without_then_with_the_kernel_and_its_worst_samples_shown():
    samples = [("1+1", "2", 0.9), ("2+2", "5", 0.1), ("3+3", "6", 0.5), ("4+4", "8", 0.7), ("5+5", "9", 0.2), "plain"]
    slot = _Slot({"baseline": 0.93, "kernel": 0.91}, samples)
    got = in_model._user_model(slot, rms)
    assert slot.given == [None, rms]
    assert got == {"where": "adapter", "target": "mylib.layers:rmsnorm", "baseline": 0.93, "kernel": 0.91,
                   "samples": [["plain"], ["2+2", "5", "0.1"], ["5+5", "9", "0.2"], ["3+3", "6", "0.5"]]}
    assert len(got["samples"]) == in_model.SHOWN


def test_a_wrap_turns_the_kernel_into_the_replacement():
    def method(kernel):
        return lambda self, x: kernel(x)
    slot = _Slot({"baseline": 1.0, "kernel": 1.0}, wrap=method)
    in_model._user_model(slot, rms)
    assert slot.given[1] is not rms and slot.given[1](None, 3) == 3


def test_a_baseline_that_raises_is_the_specs_and_a_model_with_the_kernel_that_raises_the_kernels():
    with pytest.raises(SpecBroken) as e:
        in_model._user_model(_Slot({}, raises={"baseline": OSError("weights missing")}), rms)
    assert e.value.note.kind == NoteKind.BASELINE_FAILED and e.value.note.facts.user is True
    with pytest.raises(KernelError) as e:
        in_model._user_model(_Slot({"baseline": 1.0}, raises={"kernel": ValueError("shape")}), rms)
    assert e.value.label == "the user model with the kernel in mylib.layers:rmsnorm" and str(e.value.error) == "shape"


# ---------------------------------------------------------------------------- kladder's own model
class _Score:
    def __init__(self, score, nll):
        self.score, self.nll, self.gain, self.drift = score, nll, 0.25, 0.01
        self.samples = [("1+2", "3", "3")] * 6


def _h(slot="rmsnorm", config=(), seed=12345):
    spec = kl.Spec("rms", kernel=rms, reference=rms, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 8)}, returns=kl.Tensor("N", like="x"), model=kl.InModel(slot=slot))
    return Harness(spec, Point("rms", 8, (("N", 4),), config=config, mode="model", seed=seed), "cpu")


def test_the_own_model_is_evaluated_in_the_points_dtype_on_its_problems(monkeypatch):
    calls = []

    def evaluate(slots, n, device, dtype, seed):
        calls.append((slots, n, device, dtype, seed))
        return _Score(0.97, 0.10) if slots is None else _Score(0.95, 0.12)

    monkeypatch.setattr(km, "evaluate", evaluate)
    (scores,) = list(in_model.MODE.observe(_h(config=(("model_dtype", "bfloat16"), ("problems", 16)))))
    assert isinstance(scores, Scores)
    assert calls == [(None, 16, "cpu", "bfloat16", 345), ({"rmsnorm": rms}, 16, "cpu", "bfloat16", 345)]
    m = scores.measured
    assert (m["where"], m["slot"], m["baseline"], m["kernel"], m["nll_baseline"], m["nll_kernel"]) == (
        "slot", "rmsnorm", 0.97, 0.95, 0.10, 0.12)
    assert (m["n"], m["dtype"], len(m["samples"])) == (16, "bfloat16", in_model.SHOWN)
    assert m["samples"][0] == ["1+2", "3", "3"]


def test_the_own_models_defaults_are_64_problems_in_float32(monkeypatch):
    seen = []
    monkeypatch.setattr(km, "evaluate", lambda slots, n, device, dtype, seed: seen.append((n, dtype)) or _Score(1, 0))
    list(in_model.MODE.observe(_h()))
    assert seen == [(64, "float32")] * 2


def test_a_slot_the_model_lacks_is_the_specs_error_naming_the_slots():
    with pytest.raises(SpecBroken) as e:
        in_model._own_model(_h(), "layernorm_v9", rms, Point("rms", 8, (("N", 4),)))
    assert e.value.note.kind == NoteKind.NO_SUCH_SLOT and e.value.note.facts.slots == list(km.SLOTS)


def test_the_own_models_failures_are_the_baselines_or_the_kernels(monkeypatch):
    def baseline_fails(slots, **kw):
        raise RuntimeError("no weights")
    monkeypatch.setattr(km, "evaluate", baseline_fails)
    with pytest.raises(SpecBroken) as e:
        list(in_model.MODE.observe(_h()))
    assert e.value.note.kind == NoteKind.BASELINE_FAILED and e.value.note.facts.user is False

    def kernel_fails(slots, **kw):
        if slots:
            raise IndexError("slot output of the wrong shape")
        return _Score(1, 0)
    monkeypatch.setattr(km, "evaluate", kernel_fails)
    with pytest.raises(KernelError) as e:
        list(in_model.MODE.observe(_h()))
    assert e.value.label == "the model with the kernel in `rmsnorm`" and isinstance(e.value.error, IndexError)


def test_a_slot_given_with_its_own_callable_puts_that_callable_in(monkeypatch):
    def other(x):
        return torch.zeros_like(x)
    seen = []
    monkeypatch.setattr(km, "evaluate", lambda slots, **kw: seen.append(slots) or _Score(1, 0))
    list(in_model.MODE.observe(_h(slot=("rmsnorm", other))))
    assert seen == [None, {"rmsnorm": other}]


def test_samples_whose_last_values_do_not_compare_are_shown_not_a_crash():
    """An adapter's samples are the user's: a score of None beside numbers, or an empty tuple,
    must not crash the point (sorting them raised TypeError / IndexError)."""
    samples = [("a", "b", 0.5), ("c", "d", None), (), ("e", "f", 0.1)]
    got = in_model._user_model(_Slot({"baseline": 1.0, "kernel": 1.0}, samples), rms)
    assert got["samples"] == [["c", "d", "None"], [], ["e", "f", "0.1"], ["a", "b", "0.5"]]
