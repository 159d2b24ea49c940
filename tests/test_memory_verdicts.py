"""Resources are nobody's verdict (issue 38, item 1): a point whose run, first or alone, ends in
device or host memory exhaustion (CUDA's OOM, a CUDA library's allocation failure, SIGKILL by the
out-of-memory killer) while others hold the device or the host is NOT JUDGED, naming what was
full and who held it; the run alone waits (bounded) for the memory to free, a run alone that
cannot start is never FAILED, and only a failure reproduced with the memory available is the
kernel's. A reference that runs out of memory is not BROKEN."""
import os

import pytest

from kladder.run.devicestart import DeviceStartError
from kladder.gen.gaps import contracts
from kladder.climbing.ladder import Runner
from kladder.gen.load import load_spec
from kladder.core.outcome import Check, Finding, Load, Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import ClimbReport, RungReport
from kladder.report.terminal import render_text
from kladder.report.words import note_text
from kladder.run import faults, isolation
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "specs", "memory_kill.py")
GIB = 1 << 30


def _point(n: int) -> Point:
    return Point("memory_kill", 1, (("N", n),), (), f"N = {n}")


# ------------------------------------------------------------------ what out of memory is
@pytest.mark.parametrize("text", ["CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
                                  "cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "cuFFT error: CUFFT_ALLOC_FAILED",
                                  "CURAND_STATUS_ALLOCATION_FAILED", "CUDA error: out of memory",
                                  "cudaErrorMemoryAllocation"])
def test_every_allocation_failure_is_out_of_memory(text):
    assert faults.is_oom(RuntimeError(text))
    assert not faults.is_oom(RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm`"))


def test_a_kernel_out_of_memory_and_a_reference_out_of_memory_are_oom_never_broken():
    spec = load_spec(SPEC)
    o = run_point(spec, _point(2), "cpu").outcome
    assert o.status == Status.OOM and o.note.kind == NoteKind.KERNEL_OOM
    o = run_point(spec, _point(3), "cpu").outcome                  # the reference: cublasCreate on a full device
    assert o.status == Status.OOM and o.note.kind == NoteKind.INPUTS_OOM and "CUBLAS_STATUS_ALLOC_FAILED" in o.note.facts.text
    indep = next(p for p in contracts.points(spec, CPU_BUDGET) if p.kind == "independence")
    import dataclasses
    o = run_point(spec, dataclasses.replace(indep, dims=(("N", 3),)), "cpu").outcome
    assert o.status == Status.OOM                                    # not BROKEN "the reference raised"


# ------------------------------------------------------------------ the Runner, on a fake full device
FULL = {"processes": 15, "device_used_bytes": int(70.7 * GIB), "device_total_bytes": int(79.6 * GIB)}
FREE = {"processes": 0, "device_used_bytes": 0, "device_total_bytes": int(79.6 * GIB)}


class FakeLane:
    """A lane whose runs are scripted: each run pops (outcome or exception, Load)."""

    def __init__(self, pool):
        self.pool, self.gpu, self.load = pool, "0", Load()

    def run(self, point, timeout_s, fresh=False, budget_s=None):
        self.pool.runs.append((point.id, fresh, list(self.pool.polls)))
        what, self.load = self.pool.script.pop(0)
        if isinstance(what, Exception):
            raise what
        return what

    def device_load(self):
        return dict(self.pool.device())

    def close(self):
        pass


class FakePool:
    """A pool on a fake CUDA device whose holders `device()` reports (the NVML seam)."""

    def __init__(self, script, holders):
        self.script, self.holders, self.runs, self.polls = list(script), list(holders), [], []
        self.device_name, self.fingerprint = "fake H100", {}

    def device(self):
        now = self.holders.pop(0) if len(self.holders) > 1 else self.holders[0]
        self.polls.append(now["processes"])
        return now

    def free_bytes(self):
        return 80 * GIB

    def lane(self):
        return FakeLane(self)

    def pids(self):
        return []

    def close(self):
        pass


@pytest.fixture
def fake_device(monkeypatch):
    """A Runner on a fake CUDA device: `isolation.device_load` (NVML) answers from the pool, the
    host's memory is not full, the wait for memory is short."""
    monkeypatch.setattr(faults, "MEMORY_WAIT_S", 1.0)
    monkeypatch.setattr(faults, "MEMORY_POLL_S", 0.05)
    monkeypatch.setattr(isolation, "host_memory", lambda: (1 * GIB, 64 * GIB))

    def runner(script, holders):
        pool = FakePool(script, holders)
        monkeypatch.setattr(isolation, "device_load", lambda gpu, ours: pool.device())
        return Runner(SPEC, load_spec(SPEC), "cuda", pool=pool), pool
    return runner


def _oom(point, seconds=0.14):
    return Outcome(point, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call="", text="CUDA out of memory. Tried to "
                                                   "allocate 2.00 GiB"), seconds=seconds)


def _killed(point):
    return faults.died(point, -9, "")


def _words(o: Outcome) -> str:
    report = ClimbReport("memory_kill", SPEC, "cuda", rungs=[RungReport(1, "shapes", [o])])
    return render_text(report)


def test_an_oom_while_others_hold_the_device_is_not_judged_and_names_them(fake_device):
    p = _point(4)
    runner, pool = fake_device([(_oom(p), Load(**FULL)), (_oom(p), Load(**FULL))], [FULL])
    o = runner.run(p)
    assert o.status == Status.NOT_JUDGED and o.note.kind == NoteKind.DEVICE_FULL
    assert o.note.facts.processes == 15 and o.note.facts.alone == "oom"
    assert o.load.waited_s >= 1.0 and len(pool.runs) == 2 and pool.runs[1][1]   # waited, then alone in a fresh worker
    text = _words(o)
    assert "NOT JUDGED" in text and "the device was full" in text and "15 other processes on the device" in text
    assert "70.70 GiB of 79.60 GiB in use by others" in text and "waited" in text


def test_a_sigkill_while_others_hold_the_device_then_oom_alone_is_not_judged_not_crashed(fake_device):
    # liger kl_div at r1-M=4096-V=262144 on a shared H100 (issue 38): FAILED (crashed) before
    p = _point(4)
    runner, _ = fake_device([(_killed(p), Load(**FULL)), (_oom(p), Load(**FULL))], [FULL])
    o = runner.run(p)
    assert o.status == Status.NOT_JUDGED and o.note.kind == NoteKind.HOST_FULL and not o.findings
    assert o.note.facts.signal == "SIGKILL" and o.note.facts.alone == "oom"
    assert "others held the memory: the worker died with SIGKILL" in note_text(o.note)


def test_the_run_alone_waits_for_the_device_to_free(fake_device):
    p = _point(4)
    runner, pool = fake_device([(_killed(p), Load(**FULL)), (Outcome(p, Status.PASSED), Load(**FREE))],
                               [FULL, FULL, FULL, FREE])
    o = runner.run(p)
    assert o.status == Status.PASSED and o.warnings[0].check == Check.UNDER_LOAD
    assert pool.runs[1][2][-1] == 0                                  # it ran once the device was free
    assert pool.runs[1][2].count(15) >= 2


def test_a_run_alone_that_cannot_start_is_not_judged(fake_device):
    p = _point(4)
    runner, _ = fake_device([(_oom(p), Load(**FULL)), (DeviceStartError("starting a worker's CUDA context",
                                                                        "CUDA error: out of memory", "0"), Load())],
                            [FULL])
    o = runner.run(p)
    assert o.status == Status.NOT_JUDGED and o.note.kind == NoteKind.DEVICE_FULL


def test_only_a_failure_reproduced_with_the_memory_free_is_the_kernels(fake_device):
    p = _point(4)
    wrong = Outcome(p, Status.FAILED, [Finding(Check.VALUES, "y", mismatched=3, total=4)])
    runner, _ = fake_device([(_killed(p), Load(**FULL))] + [(wrong, Load(**FREE))] * 3, [FULL, FREE])
    o = runner.run(p)
    assert o.status == Status.FAILED and o.headline.check == Check.VALUES          # seen alone, the device free
    runner, _ = fake_device([(_killed(p), Load(**FULL)), (_killed(p), Load(**FREE))], [FULL, FREE])
    o = runner.run(p)
    assert o.status == Status.FAILED and o.headline.check == Check.CRASHED          # killed again, nobody else there
    runner, _ = fake_device([(_oom(p), Load(**FULL)), (_oom(p), Load(**FREE))], [FULL, FREE])
    assert runner.run(p).status == Status.OOM                                        # needs more than the device has


# ------------------------------------------------------------------ a real worker, killed, the host full
def test_a_worker_killed_while_the_hosts_memory_is_full_is_not_judged(monkeypatch):
    total = 24 * GIB
    monkeypatch.setattr(isolation, "host_memory", lambda: (int(0.97 * total), total))   # the host full, all along
    monkeypatch.setattr(faults, "MEMORY_WAIT_S", 1.0)
    monkeypatch.setattr(faults, "MEMORY_POLL_S", 0.2)
    runner = Runner(SPEC, load_spec(SPEC), "cpu")
    try:
        o = runner.run(_point(1))
    finally:
        runner.close()
    assert o.status == Status.NOT_JUDGED and o.note.kind == NoteKind.HOST_FULL, o
    assert o.note.facts.alone == "failed" and o.note.facts.host_used_bytes == int(0.97 * total)
    text = _words(o)
    assert "NOT JUDGED" in text and "the host's memory was full: the worker died with SIGKILL" in text
    assert "23.28 GiB of the host's 24.00 GiB memory in use" in text and "not the kernel's crash" in text


def test_a_worker_killed_on_a_host_with_memory_to_spare_is_still_the_kernels_crash(monkeypatch):
    monkeypatch.setattr(isolation, "host_memory", lambda: (2 * GIB, 24 * GIB))
    runner = Runner(SPEC, load_spec(SPEC), "cpu")
    try:
        o = runner.run(_point(1))
    finally:
        runner.close()
    assert o.status == Status.FAILED and o.headline.check == Check.CRASHED and o.headline.facts.signal == "SIGKILL"


def test_the_verdict_survives_the_pipe_and_the_schema(tmp_path):
    from conftest import report_json
    from kladder.report.jsonout import dumps, outcome_dict
    p = _point(4)
    out = faults.under_load(_killed(p), _oom(p), Load(**FULL), Load(**FULL, host_used_bytes=23 * GIB,
                                                                      host_total_bytes=24 * GIB, oom_kills=1))
    back = Outcome.from_dict(out.to_dict())
    assert back.status == Status.NOT_JUDGED and back.note == out.note
    log = tmp_path / "l.jsonl"
    log.write_text(dumps({"record": "point", "run_id": "20261206-000000-1-abcd", **outcome_dict(out)}) + "\n")
    (rec,) = report_json(log)
    assert rec["status"] == "not_judged" and rec["note"]["kind"] == "host_full"


def test_a_rungs_first_failure_whose_run_alone_cannot_start_keeps_its_failure(fake_device):
    p = _point(4)
    wrong = Outcome(p, Status.FAILED, [Finding(Check.VALUES, "y", mismatched=3, total=4)])
    cannot = DeviceStartError("starting a worker's CUDA context", "CUDA error: out of memory", "0")
    runner, _ = fake_device([(wrong, Load()), (wrong, Load()), (cannot, Load())], [FREE])
    o = runner.run(p)                                  # before: DeviceStartError ended the climb
    assert o.status == Status.FAILED and o.headline.check == Check.VALUES
