"""Fault classification: what an exception, a dead worker or a silent one means for a point.
A kernel that raised, crashed, hung, faulted the device or ran out of memory is reported as
exactly that; a device fault or a failed capture also means the worker must be replaced
(after an illegal memory access every later CUDA call in that process fails)."""
from __future__ import annotations

import dataclasses
import os
import signal
from dataclasses import dataclass

from ..core.facts import (
    CaptureFacts,
    CrashedFacts,
    CrashedNotAloneFacts,
    DeviceFaultFacts,
    HangFacts,
    RaisedFacts,
    UnderLoadFacts,
)
from ..core.outcome import (
    Check,
    Finding,
    Hung,
    KernelError,
    Load,
    Note,
    NoteKind,
    Outcome,
    Replay,
    Stage,
    Status,
    error_facts,
)
from ..core.notation import ValueKind, Values
from ..core.point import Point
from ..checks.dispatch import refusal
from . import interpreter

# The CUDA runtime's words for a sticky error: after one of these every later call in the
# process fails, so the worker that saw it must be replaced.
DEVICE_FAULT_WORDS = ("illegal memory access", "misaligned address", "unspecified launch failure",
                      "device-side assert", "illegal instruction", "an illegal", "CUDA error: unknown error")


@dataclass
class Result:
    outcome: Outcome
    fatal: bool = False          # the process must not run another point


# what allocators say when an allocation fails: torch's CUDA and CPU allocators, the C library,
# and the CUDA libraries' own (cuBLAS's CUBLAS_STATUS_ALLOC_FAILED from cublasCreate on a full
# device, cuDNN's CUDNN_STATUS_ALLOC_FAILED, cuFFT's CUFFT_ALLOC_FAILED, cuSOLVER's and cuSPARSE's
# *_STATUS_ALLOC_FAILED, cuRAND's CURAND_STATUS_ALLOCATION_FAILED, the runtime's
# cudaErrorMemoryAllocation): matched lowercased
OOM_WORDS = ("out of memory", "can't allocate memory", "cannot allocate memory", "failed to allocate",
             "_alloc_failed", "_allocation_failed", "cudaerrormemoryallocation")


def is_oom(e: BaseException) -> bool:
    import torch
    text = str(e).lower()
    return isinstance(e, (MemoryError, torch.OutOfMemoryError)) or any(w in text for w in OOM_WORDS)


def is_device_fault(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    return "AcceleratorError" in text or any(w in text for w in DEVICE_FAULT_WORDS)


def kernel_error(spec, point: Point, k: KernelError, device: str = "cpu") -> Result:
    """The kernel raised during a call (`k.label` says which). Whatever it becomes, its facts
    carry the exception's traceback, folded to the kernel's own frames (run/frames.py)."""
    e = k.error
    trace = kernel_trace(spec, point, e)
    if isinstance(e, SystemExit):            # sys.exit() in the kernel: it ends the process, as in production
        return Result(Outcome(point, Status.FAILED, [Finding(Check.CRASHED, call=k.label,
                                                             facts=CrashedFacts(exit_status=_status(e.code)))]), fatal=True)
    theirs = interpreter.explains(e)
    if theirs is not None:       # Triton's interpreter failed, not the kernel: not judged on the CPU
        _, facts = theirs
        return Result(Outcome(point, Status.SKIPPED, note=Note.of(NoteKind.INTERPRETER_ERROR, **facts, trace=trace)))
    refused = None if is_device_fault(e) or is_oom(e) or isinstance(e, Hung) else refusal(spec, point, e, device)
    if refused is not None:                  # a launcher documented to refuse here (Expect(runs=False)) did
        return Result(Outcome(point, Status.PASSED, note=Note.of(NoteKind.REFUSED_AS_DOCUMENTED, **error_facts(e),
                                                                 label=refused.label or None)))
    if point.layouts and not is_device_fault(e) and not is_oom(e):
        # refusing a layout loudly is allowed; reading the wrong elements silently is not
        return Result(Outcome(point, Status.SKIPPED, note=Note.of(NoteKind.LAYOUT_REFUSED, **error_facts(e), trace=trace)))
    if spec.nonfinite == "raise" and any(kd == ValueKind(Values.NONFINITE) for kd in point.kinds.values()) and not is_device_fault(e):
        return Result(Outcome(point, Status.PASSED, note=Note.of(NoteKind.RAISED_AS_ASKED, error=type(e).__name__)))
    if is_oom(e):
        return Result(Outcome(point, Status.OOM, note=Note.of(NoteKind.KERNEL_OOM, call=k.label, text=str(e))))
    if isinstance(e, Hung):
        # a batch's watchdog gave up on it: the kernel still runs on the device, so the worker goes
        return Result(Outcome(point, Status.FAILED, [Finding(Check.HANG, call=k.label, facts=HangFacts(timeout_s=e.timeout_s,
                                                                                                     watchdog=True))]),
                      fatal=True)
    if k.label == "capture":
        # a failed capture can leave the context unusable: the worker is replaced as after a fault
        facts = CaptureFacts(**error_facts(e), trace=trace, claimed=True if getattr(getattr(spec, "modes", None), "graphs", None) else None)
        return Result(Outcome(point, Status.FAILED, [Finding(Check.CAPTURE, call=k.label, facts=facts)]), fatal=True)
    if is_device_fault(e):
        return Result(Outcome(point, Status.FAILED, [Finding(Check.DEVICE_FAULT, call=k.label,
                                                             facts=DeviceFaultFacts(**error_facts(e), trace=trace, in_call=True))]), fatal=True)
    return Result(Outcome(point, Status.FAILED, [Finding(Check.RAISED, call=k.label, facts=RaisedFacts(**error_facts(e), trace=trace))]))


def kernel_trace(spec, point: Point, e: BaseException) -> dict | None:
    """The traceback of the kernel's exception as TraceFacts' fields (run/frames.py), with the
    launcher kladder called and the names it passed (Spec.args in order, the config's keys)."""
    from .frames import trace_of
    names = [n for n in getattr(spec, "args", {})]
    try:
        return trace_of(e, getattr(spec, "kernel", None), names, list(point.kwargs))
    except Exception:  # noqa: BLE001 - a traceback that cannot be read leaves the error's own words
        return None


def outside_call(point: Point, e: BaseException) -> Result | None:
    """Out of memory while preparing, or a fault outside the kernel's call; None: kladder's own bug."""
    if is_oom(e):
        return Result(Outcome(point, Status.OOM, note=Note.of(NoteKind.INPUTS_OOM, text=error_facts(e)["text"])))
    if is_device_fault(e):
        return Result(Outcome(point, Status.FAILED, [Finding(Check.DEVICE_FAULT, facts=DeviceFaultFacts(**error_facts(e), in_call=False))]),
                      fatal=True)
    return None


def hang(point: Point, timeout_s: float) -> Outcome:
    """No answer in time: the parent killed the worker's process group."""
    return Outcome(point, Status.FAILED, [Finding(Check.HANG, facts=HangFacts(timeout_s=timeout_s))], seconds=timeout_s)


def overrun(point: Point, stage: Stage, seconds: float, budget_s: float, timeout_s: float) -> Outcome:
    """kladder's own stage of the point (building the inputs, the reference, the peers, the
    checks) was silent past its budget: the parent killed the worker. Not judged: the kernel's
    calls were not what was slow, and nothing says whether they were right."""
    return Outcome(point, Status.NOT_JUDGED, note=Note.of(
        NoteKind.STAGE_OVERRUN, stage=str(stage), seconds=round(seconds, 1), budget_s=budget_s, timeout_s=timeout_s),
        seconds=seconds)


# What a run under load said that a run alone must confirm before the kernel is blamed: a hang
# past the point's timeout, a crash or a device fault, or memory. Not rung 5's batch watchdog: its
# bound is 50x the calls' own time, measured under the same load.
LOAD_SENSITIVE = (Check.HANG, Check.CRASHED, Check.DEVICE_FAULT)


def load_sensitive(o: Outcome) -> bool:
    if o.status == Status.OOM:
        return True
    head = o.headline
    return o.status == Status.FAILED and head.check in LOAD_SENSITIVE and not getattr(head.facts, "watchdog", None)


def _load_excuses(first: Outcome) -> bool:
    """Whether other work can have caused what the run under load saw, so that a pass alone
    clears the kernel: a hang (a device or host shared with others is slower), a SIGKILL (the
    host's out-of-memory killer ends the biggest process, whoever used the memory). A segfault
    or a device fault is the process's own (no other process can cause one in it): passing
    alone makes it FLAKY, a failure with its rate, as any failure that does not recur."""
    head = first.headline
    return head.check == Check.HANG or (head.check == Check.CRASHED and head.facts.signal == "SIGKILL")


def others_memory(load: Load) -> bool:
    """Other processes held memory on the device (more than a tenth of it, or any when its size is unknown)."""
    used = load.device_used_bytes or 0
    return used > 0.1 * load.device_total_bytes if load.device_total_bytes else used > 0


def host_full(load: Load) -> bool:
    """The host's memory was full once the point ended (sampling.HostSample keeps it only then),
    or the out-of-memory killer killed a process while the point ran."""
    return load.host_used_bytes is not None or bool(load.oom_kills)


def memory_held(load: Load) -> bool:
    """Others held the memory a run needs: the device's, or the host's."""
    return others_memory(load) or host_full(load)


def killed(o: Outcome) -> bool:
    """The worker died by SIGKILL (what the host's out-of-memory killer sends)."""
    head = o.headline
    return o.status == Status.FAILED and head is not None and head.check == Check.CRASHED and head.facts.signal == "SIGKILL"


def memory_exhausted(o: Outcome, load: Load) -> bool:
    """The run ended for memory: out of memory (the kernel's call, its inputs or its reference:
    CUDA's, the host's, a CUDA library's allocation), or a SIGKILL while others held the device's
    or the host's memory (the out-of-memory killer ends the biggest process, whoever used it)."""
    return o.status == Status.OOM or (killed(o) and memory_held(load))


STARVED_WAIT_SHARE = 0.5      # the worker waited for a CPU at least this share of the alone run


def starved(load: Load | None) -> bool:
    """Whether a worker was kept from the CPU over a run: runnable but waiting for a CPU (the
    run queue's delay, /proc schedstat) at least half of the wall time. A kernel blocked for good
    (a lock, a sleep, a flag never set) waits on no run queue, however busy the host: its hang
    stands; a kernel spinning in a hang on an idle host runs its core whole: its hang stands; a
    worker that waited most of the time for a CPU others held has not shown that its kernel
    would not finish."""
    if load is None or load.seconds <= 0:
        return False
    return load.worker_wait_s >= STARVED_WAIT_SHARE * load.seconds


# A run alone after one that ended for memory waits for others' memory to free, this long at most,
# asking who holds it every MEMORY_POLL_S: another climb's point ends in seconds; one that holds
# the device for longer leaves the point not judged (never the kernel's failure).
MEMORY_WAIT_S = 60.0
MEMORY_POLL_S = 2.0


def could_not_start(point: Point, error: str) -> Outcome:
    """The run alone could not start its worker: the device refused a CUDA context (others held
    its memory past devicestart.DEVICE_RETRY_S). Out of memory, as its inputs would have been."""
    return Outcome(point, Status.OOM, note=Note.of(NoteKind.INPUTS_OOM, text=f"a worker's CUDA context could not "
                                                                           f"start: {error}"))


def under_load(first: Outcome, alone: Outcome, load: Load, alone_load: Load | None = None) -> Outcome:
    """A point that hung, crashed, faulted or ran out of memory while other work used the device
    or the host, and its run alone in a fresh worker with the other lanes held back: failing
    alone too, the first run's verdict stands; passing alone, a hang passes with a warning (a
    crash or a fault is flaky: see _load_excuses); a run that ended for memory while others held
    it: see after_memory; a hang that hangs alone too while its worker waited for a CPU most of
    the time (`alone_load`, starved): not judged, the host was busy. `load` gets
    the alone run's status (a copy) and is kept on the outcome (what else ran)."""
    load = dataclasses.replace(load, alone=alone.status, alone_s=round(alone.seconds, 3),
                               waited_s=alone_load.waited_s if alone_load is not None and alone_load.waited_s
                               else load.waited_s)
    what = str(first.headline.check) if first.status == Status.FAILED else str(first.status)
    hung = (first.status == Status.FAILED and first.headline.check == Check.HANG
            and alone.status == Status.FAILED and alone.headline.check == Check.HANG)
    if hung and starved(alone_load):
        facts = {**alone_load.to_dict(whole=True), "alone": str(alone.status), "alone_s": round(alone.seconds, 3)}
        out = Outcome(first.point, Status.NOT_JUDGED, note=Note.of(
            NoteKind.HOST_BUSY, timeout_s=alone.headline.facts.timeout_s, cores=os.cpu_count() or 1, **facts),
            seconds=first.seconds + alone.seconds, stages=first.stages)
    elif memory_exhausted(first, load):
        out = after_memory(first, alone, load, alone_load)
    elif first.status == Status.FAILED and alone.status == Status.PASSED and _load_excuses(first):
        out = alone
        out.warnings = [Finding(Check.UNDER_LOAD, facts=UnderLoadFacts(first=what, **load.to_dict(whole=True))), *out.warnings]
    elif first.status == Status.FAILED and alone.status == Status.PASSED:
        out = first                          # its own crash: flaky, reported with the run alone's status
        out.status, out.replay, out.replay_status = Status.FLAKY, Replay.FLAKY, alone.status
    elif alone.status in (Status.FAILED, Status.OOM):
        out = first                          # alone too: as seen
    else:
        out = alone                          # skipped, broken or not judged alone: its own reason
    out.load = load
    return out


def after_memory(first: Outcome, alone: Outcome, load: Load, alone_load: Load | None) -> Outcome:
    """A run that ended for memory (memory_exhausted) while others held the device or the host,
    and its run alone (after waiting, bounded, for the memory to free). Only a failure reproduced
    with the memory available is the kernel's:
    - alone it passed: out of memory, not judged (the device was full; the first run judged
      nothing); killed, the pass stands with the run under load as a warning;
    - alone it ended for memory again (or could not start) while others still held memory: not
      judged, naming what was full and who held it; with the memory free it is its own (out of
      memory: the point needs more than there is; killed again: the kernel's crash);
    - alone it failed otherwise: that failure, seen with the memory available, is the kernel's;
      skipped, broken or not judged alone: its own reason."""
    held = alone_load if alone_load is not None else load
    again = alone.status == Status.OOM or killed(alone)
    if alone.status == Status.PASSED and killed(first):
        alone.warnings = [Finding(Check.UNDER_LOAD, facts=UnderLoadFacts(first=str(Check.CRASHED), **load.to_dict(whole=True))),
                          *alone.warnings]
        return alone
    if alone.status == Status.PASSED or (again and memory_held(held)):
        return _not_judged_memory(first, alone, load, held)
    return alone if alone.status != Status.OOM or first.status != Status.OOM else first


def _not_judged_memory(first: Outcome, alone: Outcome, load: Load, held: Load) -> Outcome:
    """NOT JUDGED: the device's memory (an OOM while others held it) or the host's (a SIGKILL
    while it was full) was others', named with the first run's load (who held it then)."""
    facts = load.to_dict(whole=True)
    for k in ("processes", "device_used_bytes", "device_total_bytes", "host_used_bytes", "host_total_bytes"):
        if facts.get(k) is None or (k == "processes" and not facts[k]):
            facts[k] = getattr(held, k)              # what the run alone saw, where the first run had no reading
    if first.status == Status.OOM:
        note = Note.of(NoteKind.DEVICE_FULL, first=str(first.note.kind) if first.note else "",
                       text=getattr(first.note.facts, "text", "") if first.note else "", **facts)
    else:
        note = Note.of(NoteKind.HOST_FULL, signal=first.headline.facts.signal, first=str(first.headline.check), **facts)
    return Outcome(first.point, Status.NOT_JUDGED, note=note, seconds=first.seconds + alone.seconds,
                   stages=first.stages, output=first.output)


def died(point: Point, code: int | None, stderr_tail: str) -> Outcome:
    """The worker ended without an answer while it ran the point. The worker answers for
    everything kladder itself does (its own errors are BROKEN outcomes, sent like any other),
    so a worker that ends in the middle of a point was ended by the kernel: a signal is a
    crash (SIGSEGV), an exit status is the kernel ending the process (os._exit)."""
    if code is not None and code < 0:
        return Outcome(point, Status.FAILED, [Finding(Check.CRASHED, facts=CrashedFacts(signal=signal_name(-code),
                                                                                         frames=python_frames(stderr_tail)))])
    return Outcome(point, Status.FAILED, [Finding(Check.CRASHED, facts=CrashedFacts(exit_status=code,
                                                                                     frames=python_frames(stderr_tail)))])


def signal_name(number: int) -> str:
    """A signal's name: SIGSEGV; a real-time one, which signal.Signals names only at its ends
    (SIGRTMIN, SIGRTMAX), as SIGRTMIN+N; one this platform does not know, "signal N"."""
    try:
        return signal.Signals(number).name
    except ValueError:
        low, high = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
        if low is not None and high is not None and low < number < high:
            return f"SIGRTMIN+{number - low}"
        return f"signal {number}"


def kladder_error(point: Point, e: BaseException) -> Outcome:
    """kladder's own bug while running a point: broken, never the kernel's fault."""
    import traceback
    trace = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    return Outcome(point, Status.BROKEN, note=Note.of(NoteKind.KLADDER_ERROR, **error_facts(e), trace=trace))


def _status(code) -> int | str:
    """sys.exit's argument as the exit status it gives (None is 0; a message exits 1)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def kernel_prints(stderr_tail: str) -> str:
    """What the kernel printed before a crash, without Python's own fatal-error dump (its
    frames are the finding's already)."""
    return stderr_tail.partition("Fatal Python error:")[0].rstrip()


def python_frames(stderr_tail: str, keep: int = 3) -> list[str]:
    """The first frames of faulthandler's dump of the thread that crashed ('File "x.py", line
    17 in scale'); the dump lists the other threads (the worker's lifeline) first."""
    frames = []
    _, current, rest = stderr_tail.partition("Current thread")
    for line in (rest if current else stderr_tail).splitlines():
        line = line.strip()
        if line.startswith('File "'):
            path, _, rest = line[6:].partition('", line ')
            frames.append(f"{os.path.basename(path)}:{rest.replace(' in ', ' in ', 1)}")
        elif frames:
            break
    return frames[:keep]


# A crash that heap damage causes: glibc's malloc aborts when it finds its metadata broken
# (SIGABRT, with one of these messages on stderr), or a later allocation dereferences a broken
# pointer (SIGSEGV, SIGBUS). The damage may have been done by an earlier point in that worker.
HEAP_SIGNALS = ("SIGABRT", "SIGSEGV", "SIGBUS")
HEAP_WORDS = ("free(): ", "malloc(): ", "realloc(): ", "corrupted size vs. prev_size", "double free or corruption",
              "corrupted double-linked list", "malloc_consolidate", "munmap_chunk(): ", "unaligned tcache chunk",
              "malloc_check", "memory corruption")


def heap_words(stderr: str) -> str:
    """The line of glibc's malloc message in a crashed worker's stderr, or ''."""
    for line in stderr.splitlines():
        if any(w in line for w in HEAP_WORDS):
            return line.strip()[:200]
    return ""


def looks_like_heap_damage(outcome: Outcome) -> bool:
    """A worker that died of a signal heap damage raises: re-run the point alone with malloc's
    checks on (heapcheck.heap_checked_rerun) before it is blamed."""
    crash = next((f for f in outcome.findings if f.check == Check.CRASHED), None)
    return crash is not None and crash.facts.signal in HEAP_SIGNALS and crash.facts.rank is None


def after_heap_check(crashed: Outcome, alone: Outcome, earlier: int) -> Outcome:
    """The point's verdict after its crash in a shared worker and its re-run alone with
    glibc's malloc checks on: crashed again, the crash is the kernel's (said so); otherwise the
    re-run's verdict stands, with the shared worker's crash as a warning."""
    crash = next(f for f in crashed.findings if f.check == Check.CRASHED)
    again = next((f for f in alone.findings if f.check == Check.CRASHED), None)
    if again is not None:
        again.facts = dataclasses.replace(again.facts, heap_checked=True)
        alone.output = alone.output or crashed.output
        return alone
    facts = CrashedNotAloneFacts(signal=crash.facts.signal, frames=crash.facts.frames or [],
                                 heap_words=heap_words(crashed.output or ""), earlier=earlier, alone=str(alone.status))
    alone.warnings.append(Finding(Check.CRASHED_NOT_ALONE, call=crash.call, facts=facts))
    return alone
