"""run/faults.py in-process: what each way a kernel's call or its worker ends becomes (status, check,
facts, whether the worker must go), the load rules (others' memory, a full host, a starved worker)
and the parsing of a crashed worker's stderr (faulthandler's frames, glibc's malloc words)."""
import json

import pytest
import torch

import kladder as kl
from kladder.core.outcome import Check, Hung, KernelError, Load, Note, NoteKind, Outcome, Replay, Stage, Status
from kladder.core.point import Point
from kladder.run import faults

SPEC = kl.Spec("copy", kernel=lambda x: x.clone(), reference=lambda x: x.clone(),
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 64)})
RAISING = kl.Spec("copy", kernel=lambda x: x.clone(), reference=lambda x: x.clone(),
                  args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
                  dims={"N": kl.Dim(1, 64)}, nonfinite="raise")
PT = Point("copy", 1, (("N", 8),))
LAYOUT = Point("copy", 3, (("N", 8),), layouts=(("x", "transposed"),))
NONFINITE = Point("copy", 2, (("N", 8),), values=(("x", "nonfinite"),))
GIB = 1 << 30


def _error(e, label="call", spec=SPEC, point=PT):
    return faults.kernel_error(spec, point, KernelError(e, label))


def _roundtrip(o: Outcome) -> Outcome:
    return Outcome.from_dict(json.loads(json.dumps(o.to_dict(), allow_nan=False)))


# ---------------------------------------------------------------------------- what an exception is
@pytest.mark.parametrize("e", [MemoryError(), torch.OutOfMemoryError("x"), RuntimeError("CUDA OUT OF MEMORY. Tried"),
                               RuntimeError("CUBLAS_STATUS_ALLOC_FAILED"), OSError("Cannot allocate memory")])
def test_out_of_memory_is_told_by_its_type_or_its_words_in_any_case(e):
    assert faults.is_oom(e)


@pytest.mark.parametrize("e", [RuntimeError("index out of range"), ValueError("memory layout"), MemoryError.__base__("")])
def test_other_errors_are_not_out_of_memory(e):
    assert not faults.is_oom(e)


def test_a_device_fault_is_told_by_the_runtimes_words_or_the_accelerator_errors_name():
    assert faults.is_device_fault(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert faults.is_device_fault(RuntimeError("CUDA error: misaligned address"))

    class AcceleratorError(RuntimeError):
        pass
    assert faults.is_device_fault(AcceleratorError("whatever it says"))
    assert not faults.is_device_fault(RuntimeError("CUDA error: invalid argument"))
    assert not faults.is_device_fault(RuntimeError("illegal value for N"))     # not the runtime's sticky words


# ---------------------------------------------------------------------------- kernel_error's branches
@pytest.mark.parametrize("code, status", [(None, 0), (5, 5), ("bye", 1)])
def test_sys_exit_in_the_kernel_is_a_crash_with_the_exit_status_it_gives_and_ends_the_worker(code, status):
    r = _error(SystemExit(code), "call 2")
    assert r.fatal and r.outcome.status == Status.FAILED
    head = r.outcome.headline
    assert head.check == Check.CRASHED and head.call == "call 2" and head.facts.exit_status == status
    assert head.facts.signal is None


def test_a_plain_exception_is_raised_with_its_words_and_the_worker_lives():
    r = _error(ValueError("N must be even\nmore"), "call")
    assert not r.fatal and r.outcome.status == Status.FAILED
    head = r.outcome.headline
    assert head.check == Check.RAISED and head.facts.error == "ValueError" and head.facts.text == "N must be even"


def test_out_of_memory_in_the_call_is_oom_naming_the_call_not_a_failure():
    r = _error(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"), "replay 1 of 3")
    assert not r.fatal and r.outcome.status == Status.OOM and not r.outcome.findings
    assert r.outcome.note.kind == NoteKind.KERNEL_OOM
    assert r.outcome.note.facts.call == "replay 1 of 3" and "2 GiB" in r.outcome.note.facts.text


def test_a_watchdogs_hung_is_a_hang_with_its_bound_and_the_worker_goes():
    r = _error(Hung(12.5), "batch 3")
    assert r.fatal and r.outcome.headline.check == Check.HANG
    assert r.outcome.headline.facts.timeout_s == 12.5 and r.outcome.headline.facts.watchdog is True


def test_a_failed_capture_is_a_capture_finding_and_the_worker_is_replaced():
    r = _error(RuntimeError("operation not permitted when stream is capturing"), "capture")
    assert r.fatal and r.outcome.headline.check == Check.CAPTURE
    assert r.outcome.headline.facts.claimed is None       # the spec did not claim graphs


def test_a_device_fault_in_the_call_is_fatal_and_says_it_was_in_the_call():
    r = _error(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert r.fatal and r.outcome.headline.check == Check.DEVICE_FAULT and r.outcome.headline.facts.in_call is True


def test_a_device_fault_during_the_capture_is_the_captures_finding():
    # the order of the branches: a fault during the capture is the capture's finding (fatal either way)
    r = _error(RuntimeError("CUDA error: an illegal memory access"), "capture")
    assert r.fatal and r.outcome.headline.check == Check.CAPTURE


def test_a_layout_point_that_raises_is_a_refused_layout_skipped_but_oom_and_faults_there_are_not():
    r = _error(RuntimeError("expected contiguous"), point=LAYOUT)
    assert r.outcome.status == Status.SKIPPED and r.outcome.note.kind == NoteKind.LAYOUT_REFUSED and not r.fatal
    assert _error(MemoryError(), point=LAYOUT).outcome.status == Status.OOM
    fault = _error(RuntimeError("CUDA error: misaligned address"), point=LAYOUT)
    assert fault.fatal and fault.outcome.headline.check == Check.DEVICE_FAULT


def test_raising_on_nonfinite_inputs_passes_only_where_the_spec_asks_for_it():
    asked = _error(ValueError("NaN in input"), spec=RAISING, point=NONFINITE)
    assert asked.outcome.status == Status.PASSED and asked.outcome.note.kind == NoteKind.RAISED_AS_ASKED
    assert asked.outcome.note.facts.error == "ValueError"
    assert _error(ValueError("NaN"), spec=RAISING, point=PT).outcome.status == Status.FAILED      # finite inputs
    assert _error(ValueError("NaN"), spec=SPEC, point=NONFINITE).outcome.status == Status.FAILED  # no such policy
    # a device fault is never "raised as asked"
    assert _error(RuntimeError("CUDA error: misaligned address"), spec=RAISING, point=NONFINITE).fatal


REFUSING = kl.Spec("copy", kernel=lambda x: x.clone(), reference=lambda x: x.clone(),
                   args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
                   dims={"N": kl.Dim(1, 64)},
                   toolchain=kl.Toolchain(expect=[kl.Expect("*", runs=False, raises=ValueError, when={"N": 8})]))


def test_a_documented_refusal_passes_only_with_its_exception_where_it_applies():
    refused = _error(ValueError("N=8 unsupported"), spec=REFUSING).outcome
    assert refused.status == Status.PASSED and refused.note.kind == NoteKind.REFUSED_AS_DOCUMENTED
    assert refused.note.facts.error == "ValueError" and refused.note.facts.text == "N=8 unsupported"
    assert _error(TypeError("x"), spec=REFUSING).outcome.headline.check == Check.RAISED        # not its exception
    elsewhere = Point("copy", 1, (("N", 9),))
    assert _error(ValueError("x"), spec=REFUSING, point=elsewhere).outcome.headline.check == Check.RAISED
    # running out of memory or hanging is never a documented refusal
    assert _error(MemoryError(), spec=REFUSING).outcome.status == Status.OOM
    assert _error(Hung(2.0), spec=REFUSING).outcome.headline.check == Check.HANG


def test_kernel_errors_survive_strict_json():
    for e in (ValueError("x"), SystemExit(3), MemoryError("oom"), Hung(1.0)):
        o = _error(e).outcome
        back = _roundtrip(o)
        assert back.status == o.status and [f.check for f in back.findings] == [f.check for f in o.findings]


# ---------------------------------------------------------------------------- outside the call, hangs, overruns
def test_outside_the_call_oom_is_the_inputs_a_fault_is_fatal_and_anything_else_is_kladders():
    oom = faults.outside_call(PT, MemoryError("cannot allocate memory"))
    assert oom.outcome.status == Status.OOM and oom.outcome.note.kind == NoteKind.INPUTS_OOM and not oom.fatal
    fault = faults.outside_call(PT, RuntimeError("CUDA error: unspecified launch failure"))
    assert fault.fatal and fault.outcome.headline.facts.in_call is False
    assert faults.outside_call(PT, KeyError("x")) is None


def test_a_hang_carries_its_timeout_as_its_seconds_and_an_overrun_is_not_judged_naming_its_stage():
    h = faults.hang(PT, 7.0)
    assert h.status == Status.FAILED and h.seconds == 7.0 and h.headline.facts.timeout_s == 7.0
    assert h.headline.facts.watchdog is None
    o = faults.overrun(PT, Stage.REFERENCE, 612.345, 600.0, 120.0)
    assert o.status == Status.NOT_JUDGED and not o.findings
    assert (o.note.kind, o.note.facts.stage, o.note.facts.seconds) == (NoteKind.STAGE_OVERRUN, "reference", 612.3)
    assert (o.note.facts.budget_s, o.note.facts.timeout_s) == (600.0, 120.0)


def test_could_not_start_is_out_of_memory_with_the_devices_words():
    o = faults.could_not_start(PT, "CUDA error: out of memory")
    assert o.status == Status.OOM and o.note.kind == NoteKind.INPUTS_OOM and o.note.facts.text.endswith("out of memory")


# ---------------------------------------------------------------------------- load rules
def test_load_sensitive_is_a_hang_crash_fault_or_oom_but_not_a_watchdogs_hang_or_a_raise():
    assert faults.load_sensitive(faults.hang(PT, 1.0))
    assert faults.load_sensitive(faults.died(PT, -11, ""))
    assert faults.load_sensitive(Outcome(PT, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call="", text="x")))
    assert faults.load_sensitive(_error(RuntimeError("CUDA error: misaligned address")).outcome)
    assert not faults.load_sensitive(_error(Hung(1.0)).outcome)
    assert not faults.load_sensitive(_error(ValueError("x")).outcome)
    assert not faults.load_sensitive(Outcome(PT, Status.PASSED))


def test_others_memory_is_more_than_a_tenth_of_the_device_or_any_when_its_size_is_unknown():
    assert not faults.others_memory(Load(device_used_bytes=GIB, device_total_bytes=10 * GIB))       # exactly a tenth
    assert faults.others_memory(Load(device_used_bytes=GIB + 1, device_total_bytes=10 * GIB))
    assert faults.others_memory(Load(device_used_bytes=1))
    assert not faults.others_memory(Load())
    assert not faults.others_memory(Load(device_used_bytes=0, device_total_bytes=None))


def test_the_host_is_full_when_its_use_was_kept_or_the_oom_killer_killed():
    assert not faults.host_full(Load())
    assert not faults.host_full(Load(oom_kills=0))
    assert faults.host_full(Load(oom_kills=1))
    assert faults.host_full(Load(host_used_bytes=9 * GIB, host_total_bytes=10 * GIB))
    assert faults.memory_held(Load(oom_kills=2)) and faults.memory_held(Load(device_used_bytes=5))
    assert not faults.memory_held(Load(lanes=3, host_cpu_s=100.0))


def test_killed_is_a_sigkill_crash_only_and_memory_exhausted_needs_others_memory_for_it():
    sigkill, segv = faults.died(PT, -9, ""), faults.died(PT, -11, "")
    assert faults.killed(sigkill) and not faults.killed(segv) and not faults.killed(faults.hang(PT, 1.0))
    assert not faults.killed(Outcome(PT, Status.PASSED))
    assert faults.memory_exhausted(sigkill, Load(oom_kills=1))
    assert not faults.memory_exhausted(sigkill, Load())
    assert not faults.memory_exhausted(segv, Load(oom_kills=1))
    assert faults.memory_exhausted(Outcome(PT, Status.OOM), Load())


@pytest.mark.parametrize("wait, seconds, starved", [(5.0, 10.0, True), (4.999, 10.0, False), (9.0, 0.0, False),
                                                    (0.0, 10.0, False)])
def test_starved_is_waiting_for_a_cpu_at_least_half_the_wall_time(wait, seconds, starved):
    assert faults.starved(Load(worker_wait_s=wait, seconds=seconds)) is starved
    assert faults.starved(None) is False


# ---------------------------------------------------------------------------- under load, alone
def test_a_segfault_that_passes_alone_is_flaky_with_the_alone_runs_status_and_the_load_says_alone():
    first, alone = faults.died(PT, -11, ""), Outcome(PT, Status.PASSED, seconds=1.23456)
    out = faults.under_load(first, alone, Load(lanes=1, waited_s=4.0))
    assert out is first and out.status == Status.FLAKY and out.replay == Replay.FLAKY
    assert out.replay_status == Status.PASSED
    assert out.load.alone == Status.PASSED and out.load.alone_s == 1.235 and out.load.waited_s == 4.0


def test_the_alone_runs_wait_for_memory_is_kept_over_the_first_runs():
    out = faults.under_load(faults.died(PT, -11, ""), faults.died(PT, -11, ""), Load(lanes=1, waited_s=1.0),
                            Load(waited_s=9.0))
    assert out.status == Status.FAILED and out.load.waited_s == 9.0


def test_a_hang_skipped_alone_takes_the_alone_runs_reason():
    skipped = Outcome(PT, Status.SKIPPED, note=Note.of(NoteKind.MODE_NEEDS_CUDA, mode="graphs"))
    out = faults.under_load(faults.hang(PT, 1.0), skipped, Load(lanes=1))
    assert out is skipped and out.load.alone == Status.SKIPPED


def test_a_starved_hang_is_not_judged_with_the_cores_and_the_alone_runs_load():
    out = faults.under_load(faults.hang(PT, 3.0), faults.hang(PT, 3.0), Load(lanes=1),
                            Load(worker_wait_s=2.0, seconds=3.0, host_cpu_s=5.0))
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.HOST_BUSY
    assert out.note.facts.timeout_s == 3.0 and out.note.facts.cores >= 1 and out.note.facts.worker_wait_s == 2.0
    assert out.seconds == 6.0


def test_after_memory_a_sigkill_that_passes_alone_passes_with_the_run_under_load_as_a_warning():
    load = Load(oom_kills=1)
    out = faults.after_memory(faults.died(PT, -9, ""), Outcome(PT, Status.PASSED), load, None)
    assert out.status == Status.PASSED
    assert out.warnings[0].check == Check.UNDER_LOAD and out.warnings[0].facts.first == "crashed"


def test_after_memory_an_oom_that_passes_alone_is_not_judged_device_full_with_the_first_runs_words():
    first = Outcome(PT, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call="", text="CUDA out of memory"), seconds=1.0)
    out = faults.after_memory(first, Outcome(PT, Status.PASSED, seconds=2.0),
                              Load(device_used_bytes=8 * GIB, device_total_bytes=10 * GIB, processes=2), None)
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.DEVICE_FULL
    assert (out.note.facts.first, out.note.facts.text) == ("kernel_oom", "CUDA out of memory")
    assert out.note.facts.processes == 2 and out.seconds == 3.0


def test_after_memory_an_oom_again_with_the_memory_free_is_the_points_own():
    first = Outcome(PT, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call="", text="a"))
    again = Outcome(PT, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call="", text="b"))
    assert faults.after_memory(first, again, Load(device_used_bytes=GIB), Load()) is first
    raised = _error(ValueError("x")).outcome
    assert faults.after_memory(first, raised, Load(device_used_bytes=GIB), Load()) is raised


def test_not_judged_for_memory_fills_what_the_first_run_did_not_read_from_the_alone_runs_load():
    first = faults.died(PT, -9, "")
    held = Load(processes=4, host_used_bytes=15 * GIB, host_total_bytes=16 * GIB)
    out = faults.after_memory(first, faults.died(PT, -9, ""), Load(oom_kills=1), held)
    assert out.status == Status.NOT_JUDGED and out.note.kind == NoteKind.HOST_FULL
    assert out.note.facts.signal == "SIGKILL" and out.note.facts.processes == 4
    assert (out.note.facts.host_used_bytes, out.note.facts.host_total_bytes) == (15 * GIB, 16 * GIB)
    assert _roundtrip(out).note.facts == out.note.facts


# ---------------------------------------------------------------------------- a dead worker
DUMP = """the kernel said hello
Fatal Python error: Segmentation fault

Thread 0x00007f (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/x/kladder/run/lifeline.py", line 30 in _hold

Current thread 0x00007e (most recent call first):
  File "/home/me/kern.py", line 17 in scale
  File "/home/me/launch.py", line 5 in launch
  File "/x/kladder/run/modes/base.py", line 99 in call_once
  File "/x/kladder/run/harness.py", line 200 in call

Extension modules: torch
"""


def test_died_by_a_signal_names_it_and_the_crashing_threads_frames():
    o = faults.died(PT, -11, DUMP)
    f = o.headline.facts
    assert o.status == Status.FAILED and f.signal == "SIGSEGV" and f.exit_status is None
    assert f.frames == ["kern.py:17 in scale", "launch.py:5 in launch", "base.py:99 in call_once"]


@pytest.mark.parametrize("code", [0, 7, None])
def test_died_by_an_exit_status_keeps_it(code):
    f = faults.died(PT, code, "").headline.facts
    assert f.exit_status == code and f.signal is None and f.frames == []


def test_python_frames_without_a_current_thread_read_the_first_block_and_stop_after_it():
    text = 'noise\n  File "/a/k.py", line 3 in f\n  File "/a/m.py", line 4 in g\nafter\n  File "/a/z.py", line 9 in h\n'
    assert faults.python_frames(text) == ["k.py:3 in f", "m.py:4 in g"]
    assert faults.python_frames(text, keep=1) == ["k.py:3 in f"]
    assert faults.python_frames("") == []


def test_kernel_prints_drops_pythons_fatal_dump():
    assert faults.kernel_prints(DUMP) == "the kernel said hello"
    assert faults.kernel_prints("just words  \n") == "just words"


def test_kladder_error_is_broken_with_the_trace_never_the_kernels():
    def inner():
        raise KeyError("missing")
    try:
        inner()
    except KeyError as e:
        o = faults.kladder_error(PT, e)
    assert o.status == Status.BROKEN and not o.findings and o.note.kind == NoteKind.KLADDER_ERROR
    assert "inner" in o.note.facts.trace and o.note.facts.error == "KeyError"


# ---------------------------------------------------------------------------- heap damage
def test_heap_words_finds_mallocs_line_cut_to_200_characters():
    assert faults.heap_words("ok\nfree(): invalid pointer\nmore") == "free(): invalid pointer"
    assert faults.heap_words("x\n  double free or corruption (out)" + "!" * 300) .startswith("double free")
    assert len(faults.heap_words("malloc(): " + "a" * 500)) == 200
    assert faults.heap_words("Segmentation fault") == ""


@pytest.mark.parametrize("code, heap", [(-6, True), (-11, True), (-7, True), (-9, False), (-8, False), (3, False)])
def test_looks_like_heap_damage_only_for_the_signals_heap_damage_raises(code, heap):
    assert faults.looks_like_heap_damage(faults.died(PT, code, "")) is heap


def test_a_ranks_crash_is_not_taken_for_heap_damage():
    o = faults.died(PT, -11, "")
    import dataclasses
    o.findings[0].facts = dataclasses.replace(o.findings[0].facts, rank=1)
    assert not faults.looks_like_heap_damage(o)


def test_after_heap_check_a_crash_again_is_the_kernels_marked_heap_checked_and_keeps_the_first_output():
    crashed = faults.died(PT, -6, "")
    crashed.output = "malloc(): corrupted top size"
    again = faults.died(PT, -6, "")
    out = faults.after_heap_check(crashed, again, earlier=2)
    assert out is again and out.headline.facts.heap_checked is True and out.output == "malloc(): corrupted top size"


def test_after_heap_check_a_clean_rerun_stands_with_the_shared_workers_crash_as_a_warning():
    crashed = faults.died(PT, -11, DUMP + "free(): invalid size\n")
    crashed.output = DUMP + "free(): invalid size\n"
    alone = Outcome(PT, Status.PASSED)
    out = faults.after_heap_check(crashed, alone, earlier=4)
    assert out is alone and out.status == Status.PASSED
    w = out.warnings[-1]
    assert w.check == Check.CRASHED_NOT_ALONE and w.facts.earlier == 4 and w.facts.signal == "SIGSEGV"
    assert w.facts.heap_words == "free(): invalid size" and w.facts.alone == "passed"
    assert w.facts.frames[0] == "kern.py:17 in scale"


@pytest.mark.parametrize("code, name", [(-34, "SIGRTMIN"), (-35, "SIGRTMIN+1"), (-40, "SIGRTMIN+6"), (-64, "SIGRTMAX")])
def test_a_worker_ended_by_a_real_time_signal_is_a_crash_naming_it_not_kladders_error(code, name):
    # signal.Signals names only SIGRTMIN and SIGRTMAX: 35..63 raised ValueError in the parent
    o = faults.died(PT, code, "")
    assert o.status == Status.FAILED and o.headline.check == Check.CRASHED and o.headline.facts.signal == name


def test_a_signal_no_platform_names_is_said_by_its_number():
    assert faults.signal_name(11) == "SIGSEGV" and faults.signal_name(200) == "signal 200"
