"""The words of the execution modes and of the calls' own ends (rung 4 and every call): what
the kernel raised, how it crashed or hung, a capture that failed, two results that must be the
same bits, compute-sanitizer's errors, a failure that was the load's or an earlier point's."""
from __future__ import annotations

from ...core.facts import (
    CaptureFacts,
    CrashedFacts,
    CrashedNotAloneFacts,
    DeviceFaultFacts,
    HangFacts,
    NotBitwiseFacts,
    PaddingFacts,
    RaisedFacts,
    SanitizerFacts,
    TraceFacts,
    UncapturedFacts,
    UnderLoadFacts,
)
from ...core.outcome import Cause
from .base import during, load_text, pattern_text, says

FIRST_WORDS = {"hang": "hung", "crashed": "crashed", "device_fault": "faulted the device", "oom": "ran out of memory"}


@says(RaisedFacts)
def _raised(f, x: RaisedFacts) -> str:
    return f"the kernel raised {x.error}{during(f)}" + (f": {x.text}" if x.text else " (with no message)")


FRAME_ROLE = {"library": "  (raised here)", "jit": "  (the line Triton's compiler names)"}


def trace_lines(t: TraceFacts | None) -> list[str]:
    """The kernel's traceback, outermost frame first, each as 'FILE:LINE in FUNCTION' with its
    source line under it; then what was folded. A call that never entered the launcher (a
    signature that does not match) says where the launcher is defined and what kladder passed."""
    if t is None:
        return []
    lines = []
    if t.entered is False and t.launcher is not None:
        a = t.launcher
        lines += [f"{a.file}:{a.line}: kladder called {a.function}({', '.join(t.called or [])}) (Spec.args in order, "
                  f"the point's config as keywords); it never ran: its signature does not take those",
                  f"    {a.code}"]
    for fr in t.frames:
        lines.append(f"{fr.file}:{fr.line} in {fr.function}{FRAME_ROLE.get(fr.kind, '')}")
        if fr.code:
            lines.append(f"    {fr.code}")
    folded = [f"{n} of {who}" for n, who in ((t.folded_kladder, "kladder's"),
                                             (t.folded_library, "torch's, Triton's, numpy's or Python's own"),
                                             (t.folded_more or 0, "the outermost, past the innermost kept"))
              if n]
    if folded:
        lines.append(f"(frames folded: {', '.join(folded)})")
    return lines


@says(DeviceFaultFacts)
def _device_fault(f, x: DeviceFaultFacts) -> str:
    if x.in_call:
        return f"the kernel faulted the device{during(f)}: {x.error}: {x.text}"
    return f"the device faulted: {x.error}: {x.text}"


@says(CaptureFacts)
def _capture(f, x: CaptureFacts) -> str:
    claimed = " (the spec claims it runs in graphs: kl.Modes(graphs=True))" if x.claimed else ""
    return f"the kernel cannot be captured in a CUDA graph{claimed}: {x.error}: {x.text}"


@says(UncapturedFacts)
def _uncaptured(f, x: UncapturedFacts) -> str:
    return (f"the kernel cannot be captured in a CUDA graph: {x.error}: {x.text}; not failed, since the spec "
            "does not say production graphs it (kl.Modes(graphs=True) makes this a failure, graphs=False skips "
            "the point); its eager call before the capture was judged")


@says(HangFacts)
def _hang(f, x: HangFacts) -> str:
    if x.watchdog:
        return (f"{f.call} did not finish within {x.timeout_s:g} s (the batch's watchdog): a kernel that spins or "
                "waits on what never comes; the worker was replaced")
    return (f"the kernel's calls did not finish within {x.timeout_s:g} s (kladder's own stages are timed apart); "
            "the worker's process group was killed")


@says(UnderLoadFacts)
def _under_load(f, x: UnderLoadFacts) -> str:
    return (f"{FIRST_WORDS.get(x.first, x.first)} under load ({load_text(x)}); passed alone in "
            f"{x.alone_s:.1f} s: not the kernel's failure")


@says(CrashedFacts)
def _crashed(f, x: CrashedFacts) -> str:
    rank = f"rank {x.rank}'s process" if x.rank is not None else None
    if x.signal is not None:
        msg = f"{rank or 'the worker'} died with {x.signal} while running the point{during(f)}"
    else:
        msg = (f"the kernel ended {rank or 'the worker process'} with exit status {x.exit_status} (sys.exit or os._exit) "
               f"while running the point{during(f)}")
    if x.frames:
        msg += "; innermost Python frames: " + " <- ".join(x.frames)
    if x.heap_checked:
        msg += "; it crashed again alone, in a fresh worker with glibc's malloc checks on"
    return msg


@says(CrashedNotAloneFacts)
def _crashed_not_alone(f, x: CrashedNotAloneFacts) -> str:
    glibc = f" ({x.heap_words})" if x.heap_words else ""
    n = x.earlier
    where = f" after {n:,} other point{'s' if n != 1 else ''} in it" if n else ""
    return (f"the worker died with {x.signal}{glibc}{where}, as damage to its heap does; alone, in a fresh "
            f"worker with glibc's malloc checks on, the point {x.alone}: the damage was not this point's")


@says(NotBitwiseFacts)
def _not_bitwise(f, x: NotBitwiseFacts) -> str:
    n, total = f"{f.mismatched:,}", f"{f.total:,}"
    if x.cause == Cause.ABA:
        return (f"`{f.output}` of A after B differs from A's first result in {n} of {total} elements, "
                "on the same inputs: state left by B changed A")
    if x.cause == Cause.RUN_TO_RUN:
        return (f"`{f.output}` of A's second call differs from its first in {n} of {total} elements, on the same "
                "inputs and before B ran: the kernel is not deterministic, though kl.Repetition(deterministic=True) says it is")
    if x.cause == Cause.CACHEKEY:
        return (f"`{f.output}` of B ({x.variant}) in a process on the cache A left differs from B on an empty cache "
                f"({n} of {total} elements), on the same inputs: the cache key leaves out what B changed, so the "
                "restarted process got A's code")
    return (f"`{f.output}` of A differs between a cold cache and the warm cache the cold process left ({n} of {total} "
            "elements), on the same inputs: the cache handed the warm process other code")


@says(PaddingFacts)
def _padding(f, x: PaddingFacts) -> str:
    return (f"`{f.output}` changed when only {x.arg}'s padding bytes changed (zero -> {x.fill}): "
            f"{f.mismatched:,} of {f.total:,} elements differ, {pattern_text(f.pattern)}; the kernel reads past "
            f"the {x.valid} valid elements")


# ---------------------------------------------------------------------------- compute-sanitizer
CANNOT_SEE = {
    "memcheck": "memcheck sees accesses outside every live allocation (the caching allocator off, no guard bytes); "
                "it cannot see a store that lands inside another live tensor, nor a wrong value",
    "racecheck": "racecheck covers shared memory only: a handshake between programs through global memory (a flag, "
                 "a counter, a missing fence) is invisible to it; rung 5's repetition is the check for that",
    "initcheck": "initcheck sees device reads of global memory nothing wrote; memory kladder filled (the inputs, the "
                 "poisoned out-arguments) counts as written",
    "synccheck": "synccheck sees barriers used wrongly (divergent, invalid); it cannot see a barrier that is missing",
}


def sanitizer_kind(x: SanitizerFacts) -> str:
    k = x.kind
    if k == "race":
        second = x.second or {}
        return f"a {x.access}-{second.get('access', '?')} race in shared memory"
    if k == "unread":
        return f"{x.count:,} errors in a report kladder could not read"
    if k in ("invalid", "uninitialized", "misaligned"):
        word = {"invalid": "out-of-bounds", "uninitialized": "uninitialized", "misaligned": "misaligned"}[k]
        return f"{word} {x.access} of {x.size} bytes"
    return x.text


def _at(kernel, file, line) -> str:
    where = f"{file}:{line}" if file else "no source line (compile with line info)"
    return f"`{kernel or '?'}` at {where}"


@says(SanitizerFacts)
def _sanitizer(f, x: SanitizerFacts) -> str:
    if x.kind == "unread":
        return (f"compute-sanitizer {x.tool} counted {x.count:,} errors, in a report kladder could not read; "
                "run the point with `kladder repro ... --sanitize` and read the tool's own output")
    times = f" ({x.count:,} reports)" if x.count > 1 else ""
    if x.kind == "race":
        second = x.second or {}
        msg = (f"racecheck: a race in shared memory between a {x.access} in {_at(x.kernel, x.file, x.line)} and a "
               f"{second.get('access', '?')} in {_at(second.get('kernel'), second.get('file'), second.get('line'))}"
               f"{times}, between threads of one program with no barrier between them")
    else:
        msg = f"{x.tool}: {sanitizer_kind(x)} in {_at(x.kernel, x.file, x.line)}{times}"
        if x.thread:
            msg += f", e.g. thread ({x.thread}) of block ({x.block})"
        if x.address:
            msg += f", address {x.address}" + (f" {x.detail}" if x.detail else "")
    return msg + f". {CANNOT_SEE[x.tool]}"
