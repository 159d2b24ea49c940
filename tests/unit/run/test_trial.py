"""run/trial.py: one point run in this process on tiny CPU tensors with plain torch kernels (no
Triton, no worker): what each observation becomes (a pass with its output hashes and its stages
timed, a wrong element, the kernel's exception, the reference's fault as the spec's, a mode that
needs CUDA, an observation no check takes, an error outside the call), and the debugging watch."""
import types

import pytest
import torch

import kladder as kl
from kladder.core.outcome import Check, NoteKind, Skip, Stage, Status
from kladder.core.point import Point
from kladder.run import trial
from kladder.run.modes.base import Call

PT = Point("scale", 1, (("N", 8),))


def _spec(kernel=lambda x: x * 2, reference=lambda x: x * 2):
    return kl.Spec("scale", kernel=kernel, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})


def test_a_right_kernel_passes_with_its_outputs_hash_and_every_stage_timed():
    r = trial.run_point(_spec(), PT, "cpu")
    o = r.outcome
    assert o.status == Status.PASSED and not r.fatal and not o.findings
    assert set(o.stages) == {Stage.INPUTS, Stage.KERNEL, Stage.REFERENCE, Stage.CHECKS}
    assert all(s >= 0 for s in o.stages.values()) and o.seconds >= sum(o.stages.values()) * 0.5
    assert list(o.hashes) == ["out"] and len(o.hashes["out"]) == 32


def test_the_hash_is_the_outputs_same_inputs_same_hash_another_kernel_another():
    a = trial.run_point(_spec(), PT, "cpu").outcome.hashes
    b = trial.run_point(_spec(), PT, "cpu").outcome.hashes
    c = trial.run_point(_spec(lambda x: x * 3, lambda x: x * 3), PT, "cpu").outcome.hashes
    assert a == b and a != c


def test_a_wrong_element_fails_on_values_and_the_worker_lives():
    wrong = _spec(kernel=lambda x: torch.where(torch.arange(x.numel()) == 3, x, x * 2))
    r = trial.run_point(wrong, PT, "cpu")
    assert r.outcome.status == Status.FAILED and r.outcome.headline.check == Check.VALUES and not r.fatal


def test_the_kernels_exception_is_raised_its_oom_is_oom():
    def raising(x):
        raise ValueError("N must be a multiple of 16")
    r = trial.run_point(_spec(kernel=raising), PT, "cpu")
    assert r.outcome.headline.check == Check.RAISED and r.outcome.headline.facts.text == "N must be a multiple of 16"
    assert r.outcome.headline.facts.trace is not None                # folded to the kernel's frames

    def oom(x):
        raise MemoryError("cannot allocate memory")
    assert trial.run_point(_spec(kernel=oom), PT, "cpu").outcome.status == Status.OOM


def test_the_references_fault_is_the_specs_never_the_kernels():
    def bad(x):
        raise KeyError("reference bug")
    r = trial.run_point(_spec(reference=bad), PT, "cpu")
    assert r.outcome.status == Status.BROKEN and r.outcome.note.kind == NoteKind.REFERENCE_RAISED


def test_a_mode_that_needs_cuda_is_skipped_on_the_cpu_before_any_call():
    calls = []
    r = trial.run_point(_spec(kernel=lambda x: calls.append(1) or x * 2), Point("scale", 4, (("N", 8),), mode="graph"),
                        "cpu")
    assert r.outcome.status == Status.SKIPPED and r.outcome.note.kind == NoteKind.MODE_NEEDS_CUDA and calls == []


class FakeMode:
    """A mode whose observations are given: trial judges each by its type."""
    needs_cuda, judges_mutations = False, False

    def __init__(self, observe):
        self.observe = observe


def _with_mode(monkeypatch, observe):
    monkeypatch.setattr(trial.modes, "get", lambda name: FakeMode(observe))


def test_an_observation_no_check_takes_is_kladders_bug_never_dropped(monkeypatch):
    _with_mode(monkeypatch, lambda h: iter([object()]))
    with pytest.raises(TypeError, match="yielded a object: no check takes it"):
        trial.run_point(_spec(), PT, "cpu")


def test_a_skip_inside_the_mode_is_skipped_with_its_note(monkeypatch):
    def observe(h):
        raise Skip(NoteKind.MODE_NEEDS_CUDA, mode="eager")
        yield
    _with_mode(monkeypatch, observe)
    assert trial.run_point(_spec(), PT, "cpu").outcome.note.kind == NoteKind.MODE_NEEDS_CUDA


def test_out_of_memory_outside_the_call_is_the_inputs_and_any_other_error_goes_up(monkeypatch):
    def observe(h):
        raise MemoryError("cannot allocate memory")
        yield
    _with_mode(monkeypatch, observe)
    r = trial.run_point(_spec(), PT, "cpu")
    assert r.outcome.status == Status.OOM and r.outcome.note.kind == NoteKind.INPUTS_OOM

    def buggy(h):
        raise AttributeError("kladder's own")
        yield
    _with_mode(monkeypatch, buggy)
    with pytest.raises(AttributeError):
        trial.run_point(_spec(), PT, "cpu")


def test_every_call_a_mode_makes_is_judged_and_a_failure_names_its_call(monkeypatch):
    def observe(h):
        for k in range(3):
            prep = h.prepare(seed=k + 1)
            yield Call(prep, h.call(prep, f"call {k}"), f"call {k}")
    _with_mode(monkeypatch, observe)
    wrong = iter([False, True, False])
    spec = _spec(kernel=lambda x: x * 2 + (1.0 if next(wrong) else 0.0))
    o = trial.run_point(spec, PT, "cpu").outcome
    assert o.status == Status.FAILED and {f.call for f in o.findings} == {"call 1"}


def test_the_watch_hears_each_judged_call_and_the_kernels_exception():
    heard = []
    watch = types.SimpleNamespace(judged=lambda seen, outputs, expected, found, masks: heard.append(("judged", found)),
                                  raised=lambda h, k: heard.append(("raised", k.label)))
    trial.run_point(_spec(), PT, "cpu", watch=watch)
    assert heard == [("judged", [])]

    def raising(x):
        raise ValueError("x")
    heard.clear()
    trial.run_point(_spec(kernel=raising), PT, "cpu", watch=watch)
    assert [h[0] for h in heard] == ["raised"]
