"""run/worker.py's loop in this process: `serve` reads Run messages from lines and writes each
point's StageBegan messages and its Answer to a buffer (the protocol pipe), with the point's own
processes' CPU seconds and its stages' peak memory; kladder's own error is a BROKEN answer and
the end of the process (exit 3, os._exit replaced here by an exception); `setup_torch` as every
point runs under it. `main` is the process's entry (its descriptors, its lifeline): test_protocol
and test_forkserver start it."""
import io
import json
import os

import pytest
import torch

import kladder as kl
from kladder.core.outcome import Stage, Status
from kladder.core.point import Point
from kladder.run import stages, trial, worker
from kladder.run.faults import Result
from kladder.run.protocol import Answer, Run, StageBegan, from_wire, to_wire

SPEC = kl.Spec("scale", kernel=lambda x: x * 2, reference=lambda x: x * 2, args={"x": kl.Tensor("N", dtype="float32")},
               returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})
PT = Point("scale", 1, (("N", 8),))


class Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch):
    """os._exit and the reaping of descendants, recorded instead of done."""
    seen = []
    monkeypatch.setattr(stages.CLOCK, "sink", None)          # serve sets it: put back after
    monkeypatch.setattr(worker, "end_descendants", lambda pid: seen.append(("reaped", pid)))

    def _exit(code):
        seen.append(("exit", code))
        raise Exited(code)
    monkeypatch.setattr(worker.os, "_exit", _exit)
    return seen


def _messages(proto: io.StringIO) -> list:
    return [from_wire(line, StageBegan, Answer) for line in proto.getvalue().splitlines()]


def test_each_point_sends_its_stages_as_they_begin_then_its_answer(exits):
    proto = io.StringIO()
    worker.serve(SPEC, "cpu", [to_wire(Run(PT, None)), to_wire(Run(PT, "/sock"))], proto, "spec.py")
    msgs = _messages(proto)
    answers = [m for m in msgs if isinstance(m, Answer)]
    assert len(answers) == 2 and all(a.outcome.status == Status.PASSED and not a.fatal for a in answers)
    first = msgs[:msgs.index(answers[0])]
    sent = [m.stage for m in first]
    assert all(isinstance(m, StageBegan) for m in first)
    assert set(sent) == {Stage.INPUTS, Stage.KERNEL, Stage.REFERENCE, Stage.CHECKS}
    assert all(a != b for a, b in zip(sent, sent[1:], strict=False))     # sent only when the stage changes
    assert set(answers[0].peak) == {str(m.stage) for m in first}       # a peak for every stage that ran
    assert exits == []


def test_the_points_children_get_the_specs_ref_and_the_requests_server(exits, monkeypatch):
    handed = []

    def run_point(spec, point, device, children=None):
        handed.append((children.ref, children.forkserver))
        children.cpu_s += 1.5
        return trial.Result(trial.Outcome(point, Status.PASSED))
    monkeypatch.setattr(trial, "run_point", run_point)
    proto = io.StringIO()
    worker.serve(SPEC, "cpu", [to_wire(Run(PT, "/sock"))], proto, "spec.py")
    assert handed == [("spec.py", "/sock")] and _messages(proto)[-1].children_cpu_s == 1.5


def test_kladders_own_error_is_a_broken_answer_then_the_worker_ends_with_3(exits, monkeypatch):
    def run_point(*a, **k):
        raise RuntimeError("kladder's bug")
    monkeypatch.setattr(trial, "run_point", run_point)
    proto = io.StringIO()
    with pytest.raises(Exited):
        worker.serve(SPEC, "cpu", [to_wire(Run(PT, None)), to_wire(Run(PT, None))], proto)
    answer = _messages(proto)[-1]
    assert answer.fatal and answer.outcome.status == Status.BROKEN and "kladder's bug" in answer.outcome.note.facts.text
    assert exits == [("reaped", os.getpid()), ("exit", 3)]          # the second point is never run


def test_a_fatal_point_is_answered_before_the_worker_ends(exits, monkeypatch):
    monkeypatch.setattr(trial, "run_point", lambda spec, point, device, children=None:
                        Result(trial.Outcome(point, Status.FAILED), fatal=True))
    proto = io.StringIO()
    with pytest.raises(Exited):
        worker.serve(SPEC, "cpu", [to_wire(Run(PT, None))], proto)
    assert _messages(proto)[-1].fatal and exits[-1] == ("exit", 3)


def test_no_lines_no_answers(exits):
    proto = io.StringIO()
    worker.serve(SPEC, "cpu", [], proto)
    assert proto.getvalue() == "" and exits == []


def test_setup_torch_on_the_cpu_fills_fresh_memory_runs_deterministic_on_one_thread():
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           torch.utils.deterministic.fill_uninitialized_memory, torch.get_num_threads())
    try:
        assert worker.setup_torch("cpu") == {"device_name": "cpu"}
        assert torch.are_deterministic_algorithms_enabled() and torch.get_num_threads() == 1
        assert torch.utils.deterministic.fill_uninitialized_memory is True
        assert torch.isnan(torch.empty(4)).all()                   # what a kernel never wrote shows
    finally:
        torch._C._set_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = was[2]
        torch.set_num_threads(was[3])


class _FakeCuda:
    """torch.cuda's allocator as release_cached reads it: `reserved` and `allocated` bytes."""

    def __init__(self, reserved: int, allocated: int, initialized: bool = True):
        self.reserved, self.allocated, self.initialized, self.emptied = reserved, allocated, initialized, 0

    def is_initialized(self):
        return self.initialized

    def memory_reserved(self):
        return self.reserved

    def memory_allocated(self):
        return self.allocated

    def empty_cache(self):
        self.emptied += 1
        self.reserved = self.allocated


@pytest.mark.parametrize("device, reserved, allocated, initialized, emptied", [
    ("cuda", 16 << 30, 1 << 20, True, 1),                        # a big point's 16 GiB freed, still cached: released
    ("cuda", worker.KEEP_CACHED_BYTES + (1 << 20), 1 << 20, True, 0),   # within what a worker may keep
    ("cuda", 16 << 30, 16 << 30, True, 0),                       # in use (the kernel's own): not the cache's
    ("cuda", 16 << 30, 0, False, 0),                             # no CUDA in this worker yet
    ("cpu", 16 << 30, 0, True, 0),                               # the CPU: nothing of the device's
])
def test_a_worker_gives_back_the_device_memory_its_last_point_left_cached(monkeypatch, device, reserved, allocated,
                                                                          initialized, emptied):
    fake = _FakeCuda(reserved, allocated, initialized)
    monkeypatch.setattr(torch, "cuda", fake)
    worker.release_cached(device)
    assert fake.emptied == emptied


def test_the_cache_is_released_before_the_answer_is_sent(exits, monkeypatch):
    """The parent may start another lane's big point, alone, the moment it has the answer: the
    memory must be back on the device by then."""
    order = []
    proto = io.StringIO()
    real_write = proto.write
    monkeypatch.setattr(worker, "release_cached", lambda device: order.append(("released", device)))
    monkeypatch.setattr(proto, "write", lambda text: (order.append(("wrote", json.loads(text)["kind"] == Answer.kind)),
                                                       real_write(text))[1])
    worker.serve(SPEC, "cpu", [to_wire(Run(PT, None))], proto, "spec.py")
    released = order.index(("released", "cpu"))
    assert all(not (kind == "wrote" and is_answer) for kind, is_answer in order[:released])
    assert any(kind == "wrote" and is_answer for kind, is_answer in order[released:])
