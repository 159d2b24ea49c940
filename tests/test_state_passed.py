"""State passed, not read from the environment (issue 20 item 5): a torch setting changed for a
block is put back whatever the block raised, and the judge's interpreter flag is the one the
worker decided, whatever TRITON_INTERPRET says at judging time."""
import pytest
import torch

import kladder as kl
from kladder.checks import Judge
from kladder.core.point import Point
from kladder.run import interpreter, trial
from kladder.run.settings import SETTINGS, torch_setting


@pytest.mark.parametrize(("name", "inside"), [("fill_uninitialized_memory", False), ("num_threads", 1)])
def test_a_torch_setting_is_restored_after_its_block_and_after_an_exception(name, inside):
    get, _ = SETTINGS[name]
    before = get()
    with torch_setting(name, inside) as was:
        assert was == before and get() == inside
    assert get() == before
    with pytest.raises(RuntimeError, match="the kernel raised"), torch_setting(name, inside):
        assert get() == inside
        raise RuntimeError("the kernel raised")
    assert get() == before


def test_a_guarded_allocation_restores_the_fill_setting():
    from kladder.run.guarded_alloc import _allocate
    det = torch.utils.deterministic
    before = det.fill_uninitialized_memory
    for fill in (True, False):
        det.fill_uninitialized_memory = fill
        try:
            t = _allocate(torch.empty(3, 5), "cpu", 64)[0]
            assert t.shape == (3, 5) and det.fill_uninitialized_memory is fill
        finally:
            det.fill_uninitialized_memory = before


def _spec():
    return kl.Spec("copy", kernel=lambda x: x.clone(), reference=lambda x: x.clone(),
                   args={"x": kl.Tensor("N", dtype="bfloat16")}, returns=kl.Tensor("N", like="x"),
                   dims={"N": kl.Dim(1, 64)})


@pytest.mark.parametrize("env", ["1", "0", None])
def test_the_judges_interpreter_flag_is_passed_not_read(env, monkeypatch):
    if env is None:
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    else:
        monkeypatch.setenv("TRITON_INTERPRET", env)
    spec = _spec()
    point = Point("copy", 1, (("N", 8),))
    # bfloat16 on the CPU: the bias check is the GPU's when Triton is interpreted, whatever the environment says now
    assert not Judge(spec, point, "cpu", interpreted=True)._bias_judged(point, "bfloat16")
    assert Judge(spec, point, "cpu", interpreted=False)._bias_judged(point, "bfloat16")
    assert Judge(spec, point, "cuda", interpreted=True)._bias_judged(point, "bfloat16")
    assert Judge(spec, point, "cpu", interpreted=True)._bias_judged(point, "float32")


@pytest.mark.parametrize("on", [True, False])
def test_the_worker_decides_the_flag_once_and_hands_it_to_the_harness_and_the_judge(on, monkeypatch):
    made = []

    def seen(real):
        def make(*a, **kw):
            made.append(real(*a, **kw))
            return made[-1]
        return make

    asked = []
    monkeypatch.setattr(interpreter, "on", lambda: asked.append(1) or on)
    monkeypatch.setattr(trial, "Judge", seen(trial.Judge))
    monkeypatch.setattr(trial, "Harness", seen(trial.Harness))
    monkeypatch.setenv("TRITON_INTERPRET", "0" if on else "1")      # the opposite: never read below the worker
    spec = _spec()
    result = trial.run_point(spec, Point("copy", 1, (("N", 8),)), "cpu")
    assert result.outcome.status == "passed"
    assert asked and len(made) == 2 and all(m.interpreted is on for m in made)


def test_the_rung5_differ_takes_the_flag():
    from kladder.run.modes.differ import Differ
    spec = _spec()
    point = Point("copy", 5, (("N", 8),))
    firsts = [{"out": torch.zeros(8, dtype=torch.bfloat16)}]
    assert not Differ(spec, point, firsts, interpreted=True).fused
    assert Differ(spec, point, firsts, interpreted=False).fused
