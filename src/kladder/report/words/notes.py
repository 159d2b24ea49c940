"""The words of the notes: why a point was skipped, broken, out of memory or not judged, and
what a passing mode measured (model scores and repeats have theirs beside their checks)."""
from __future__ import annotations

from ...core import facts as F
from ...core.outcome import Wait
from ...core.sizes import human_bytes
from .base import NOTES, ints, load_text, notes, status_word
from .modes import CANNOT_SEE
from .toolchain import ran_text

STAGE_WORDS = {"inputs": "building the inputs", "kernel": "the kernel's calls", "reference": "the float64 reference",
               "peers": "the honest peer (the reference in the kernel's precision and its spread draws)",
               "checks": "the checks (guards, contract, comparison, pattern)"}

WAIT_WORDS = {Wait.FORK_SERVER: "the fork server to start", Wait.WORKER: "a worker to start", Wait.DEVICE: "the device",
              Wait.IN_FLIGHT: "the other lanes' points to end", Wait.HELD: "a point that ran alone"}
WAIT_WHY = {Wait.FORK_SERVER: "it imports torch and Triton once, for every new process",
            Wait.DEVICE: "a worker's CUDA context refused while other processes held its memory",
            Wait.IN_FLIGHT: "to run a point alone", Wait.HELD: "the other lanes held back"}


def waits_text(waits) -> str:
    """What a rung's lanes waited for (outcome.Waited each): '2.1 s for the fork server to start (...)'."""
    def one(w) -> str:
        why = [WAIT_WHY[w.wait]] if w.wait in WAIT_WHY else []
        times = [f"{w.times} times"] if w.times > 1 else []
        return f"{w.seconds:.1f} s for {WAIT_WORDS[w.wait]}" + (f" ({'; '.join(why + times)})" if why or times else "")
    return "; ".join(one(w) for w in waits)


def waiting_text(wait: Wait, seconds: float, point: str = "") -> str:
    """A wait in progress, for the progress line."""
    return f"waiting {seconds:.0f} s for {WAIT_WORDS[wait]}" + (f" ({point})" if point else "")


INTERPRETER_FEATURES = {
    "bf16_arithmetic": "computes bfloat16 arithmetic on the raw uint16 bits",
    "bf16_rounding": "truncates float32 -> bfloat16 where a GPU rounds to nearest, and the failure is within the "
                     "one bfloat16 ulp that truncation adds",
    "fp8_cast": "converts to and from fp8 wrongly",
    "libdevice": "returns None from libdevice calls",
    "runtime_loop": "raises inside loops over a runtime bound",
}
INTERPRETER_PROBES = {"libdevice": "a libdevice call", "runtime_loop": "a `for start in range(0, N, BLOCK)` loop"}


def note_text(n, sized: bool = True) -> str:
    """Why a point was skipped, broken or out of memory, or what a passing mode measured.
    Without `sized`, a GPU point's size is left out (the text of a group of such skips)."""
    return NOTES[type(n.facts)](n.facts, sized)


def _fixed(text: str):
    return lambda x, sized=True: text


NOTES[F.NoOutArgsFacts] = _fixed("no out-arguments: the kernel allocates its outputs, so there is no buffer to reuse")
NOTES[F.NotTorchOpFacts] = _fixed("the kernel is a Python launcher, not a torch op or custom op "
                                  "(torch.library.custom_op): torch.compile would run it as it is, eagerly")
NOTES[F.NotCompiledFacts] = _fixed("under Triton's interpreter nothing is compiled, so a compiler setting changes no "
                                   "code object here; climb with --device cuda")


@notes(F.InputsMutatedFacts)
def _inputs_mutated(x, sized=True):
    if x.when == "accumulate":
        return (f"the kernel's backward writes {', '.join(x.args)} in place (the spec declares it): a second backward "
                "on the same graph would read what the first wrote, which no training step does; the accumulation "
                "point is not run (every other point judges the write)")
    return (f"the kernel writes {', '.join(x.args)} in place (the spec declares it): each call on the same buffers is "
            "another computation, so repeating it cannot be held to the first call's bits; rung 5 does not "
            "repeat kernels at points with declared writes (rungs 1-4 judge them)")


@notes(F.GpuPointFacts)
def _gpu_point(x, sized=True):
    size = f" ({human_bytes(x.need_bytes)} of tensors)" if sized else ""
    return (f"a GPU point{size}: over the CPU budget ({x.budget}), since the Triton interpreter runs every "
            "program in Python; climb with --device cuda")


RANGE_WHY = {"no_value": "the dtype holds no value there",
             "no_tiny": "no subnormal, smallest-normal or zero value lies in it",
             "no_one": "1 does not lie in it"}


@notes(F.ValueOutOfRangeFacts)
def _value_out_of_range(x, sized=True):
    return (f"{x.arg}: {x.value} cannot be drawn inside its declared range [{x.lo:g}, {x.hi:g}] "
            f"({RANGE_WHY.get(x.why, x.why)}): this value kind is skipped for this input")


@notes(F.NoDeviceMemoryFacts)
def _no_device_memory(x, sized=True):
    if x.measured:
        return (f"needs about {human_bytes(x.need_bytes)} on the device (the peak of kernel, reference and peer "
                f"measured at {x.measured}, {human_bytes(x.measured_bytes)}, scaled by the elements); the device has "
                f"{human_bytes(x.free_bytes)} free")
    return f"needs {human_bytes(x.need_bytes)} of tensors; the device has {human_bytes(x.free_bytes)} free"


@notes(F.NoHostMemoryFacts)
def _no_host_memory(x, sized=True):
    share = f"{human_bytes(x.share_bytes)} available to each of its {x.workers} workers" if x.workers > 1 else \
        f"{human_bytes(x.share_bytes)} available"
    return (f"needs about {human_bytes(x.need_bytes)} of the host's memory (the peak of kernel, reference and peer "
            f"measured at {x.measured}, {human_bytes(x.measured_bytes)}, scaled by the elements); the host has "
            f"{share}: skipped before a worker ran out of memory (climb with fewer --jobs, or on a larger host)")


@notes(F.ModeNeedsCudaFacts)
def _mode_needs_cuda(x, sized=True):
    return f"the {x.mode} mode needs CUDA; on the CPU it is skipped, never passed"


@notes(F.GraphsNotClaimedFacts)
def _graphs_not_claimed(x, sized=True):
    return (f"the kernel cannot be captured in a CUDA graph ({x.error}: {x.text}), and the spec says production "
            "does not run it in graphs (kl.Modes(graphs=False)): skipped, never passed")


@notes(F.RaceNotSetUpFacts)
def _race_not_set_up(x, sized=True):
    return (f"the late producer finished before the call returned, {x.attempts} times (up to "
            f"{x.delay_cycles:,} cycles): the race could not be set up, so the stream ordering was not checked")


@notes(F.LayoutRefusedFacts)
def _layout_refused(x, sized=True):
    return f"refused: the kernel raised {x.error} on this layout: {x.text}"


@notes(F.RaisedAsAskedFacts)
def _raised_as_asked(x, sized=True):
    return f"raised {x.error} on NaN/Inf inputs, as the spec's policy asks"


@notes(F.RefusedAsDocumentedFacts)
def _refused_as_documented(x, sized=True):
    who = x.label or "the launcher"
    return f"refused as documented: {who} raised {x.error} here, where the spec says it must not run: {x.text}"


@notes(F.InputsFailedFacts)
def _inputs_failed(x, sized=True):
    return f"building the inputs failed: {x.error}: {x.text}"


@notes(F.ReferenceRaisedFacts)
def _reference_raised(x, sized=True):
    return f"the reference raised {x.error}: {x.text} (a spec problem, not a kernel failure)"


@notes(F.ReferenceShapeFacts)
def _reference_shape(x, sized=True):
    return (f"the reference returned `{x.output}` of shape {tuple(x.shape)} where returns= declares "
            f"{tuple(x.declared)} (the kernel's output has it): the reference's fault (a spec problem), not a "
            "kernel failure: fix the reference, or returns=")


@notes(F.ReferenceNanFacts)
def _reference_nan(x, sized=True):
    return (f"the reference returned NaN at {x.count:,} of {x.total:,} elements of `{x.output}` (the first at "
            f"{tuple(x.at)}) where every input is finite and the kernel's output is not NaN: the reference's fault "
            "(a spec problem), not a kernel failure")


@notes(F.InvariantRaisedFacts)
def _invariant_raised(x, sized=True):
    return f"the invariant '{x.name}' raised {x.error}: {x.text}"


@notes(F.ProcessFailedFacts)
def _process_failed(x, sized=True):
    return f"the {x.label} process failed: {x.text}"


@notes(F.NoSuchSlotFacts)
def _no_such_slot(x, sized=True):
    return f"kl.InModel(slot={x.slot!r}): kladder's model has the slots {', '.join(x.slots)}"


@notes(F.BaselineFailedFacts)
def _baseline_failed(x, sized=True):
    what = "the user model's baseline evaluation failed" if x.user else "the baseline model run failed"
    return f"{what}: {x.error}: {x.text}"


@notes(F.KladderErrorFacts)
def _kladder_error(x, sized=True):
    return (f"kladder's own error, not the kernel's: {x.error}: {x.text} (please report it, with this "
            f"trace: {x.trace.strip()})")


@notes(F.KernelOomFacts)
def _kernel_oom(x, sized=True):
    during = f" ({x.call})" if x.call else ""
    return f"the kernel ran out of memory{during}: {x.text}"


@notes(F.InputsOomFacts)
def _inputs_oom(x, sized=True):
    return f"the inputs or the reference ran out of memory: {x.text}"


@notes(F.StageOverrunFacts)
def _stage_overrun(x, sized=True):
    at = f" at {x.elements:,} elements" if x.elements else ""
    return (f"kladder's own stage, {STAGE_WORDS.get(x.stage, x.stage)}, was still running after "
            f"{x.seconds:g} s{at} (its budget: {x.budget_s:g} s; the kernel's calls get {x.timeout_s:g} s): "
            "not judged, and not the kernel's hang; give it more time with --timeout or the spec's timeout_s "
            "(kladder's stages get a multiple of it)")


@notes(F.DeviceFullFacts)
def _device_full(x, sized=True):
    alone = {"passed": "passed alone", "oom": "ran out of memory alone too, others still holding memory"}.get(
        x.alone, f"was {status_word(x.alone)} alone")
    return (f"the device was full: out of memory ({x.text}) while {load_text(x)}; it {alone} "
            f"(in {x.alone_s:.1f} s)")


@notes(F.HostFullFacts)
def _host_full(x, sized=True):
    alone = {"passed": "passed alone", "oom": "ran out of memory alone too, others still holding memory",
             "failed": "was killed alone too, others still holding memory"}.get(x.alone, f"was {status_word(x.alone)} alone")
    full = "the host's memory was full" if x.host_used_bytes or x.oom_kills else "others held the memory"
    return (f"{full}: the worker died with {x.signal} (the out-of-memory killer's signal) while "
            f"{load_text(x)}; it {alone} (in {x.alone_s:.1f} s): not judged, and not the kernel's crash")


@notes(F.ReferenceNotIndependentFacts)
def _reference_not_independent(x, sized=True):
    what = "; ".join(s for s in (x.functions and f"the kernel's own functions {', '.join(x.functions)}",
                                 x.jit_kernels and f"its Triton kernels {', '.join(x.jit_kernels)}",
                                 x.gpu_kernels and f"its GPU kernels {', '.join(x.gpu_kernels)}",
                                 x.torch_op and f"the torch op under test, {x.torch_op}") if s)
    return (f"the reference {x.reference} is not independent of the kernel under test: it runs {what}; a comparison "
            "with it cannot fail when both are wrong. The spec's problem, not the kernel's (its other points are "
            "judged as usual): write the reference in plain torch, independent of the kernel's code")


@notes(F.HostBusyFacts)
def _host_busy(x, sized=True):
    return (f"the host was busy: the kernel did not finish in its {x.timeout_s:g} s under load, nor alone, and alone "
            f"its worker ran {x.worker_cpu_s:.1f} s and waited {x.worker_wait_s:.1f} s for a CPU in {x.seconds:.1f} s "
            f"while other processes used {x.host_cpu_s:.1f} s of the {x.cores} CPUs' {x.cores * x.seconds:.0f} s: "
            "not judged, and not the kernel's hang; run it again on an idle host")


@notes(F.CacheFilesFacts)
def _cache_files(x, sized=True):
    return f"the cold process left {x.files} file(s) in the cache directory"


@notes(F.RunToRunFacts)
def _run_to_run(x, sized=True):
    after = "A after B" if x.mode == "aba" else "A on the warm cache and on the cold one"
    files = f"; the cold process left {x.files} file(s) in the cache directory" if x.files is not None else ""
    return (f"A's two calls on the same inputs, before B, differ in {x.differ:,} of {x.total:,} elements of "
            f"{', '.join(f'`{n}`' for n in x.outputs)}: the kernel is not bit-for-bit deterministic, which the spec "
            f"allows (kl.Repetition(deterministic=False)), so {after} was judged against the reference for those outputs, "
            f"not bit for bit{files}")


@notes(F.RanFacts)
def _ran(x, sized=True):
    return "ran " + ran_text(x) + "".join(f"; {_unjudged(u)}" for u in x.unjudged or [])


def _unjudged(u: dict) -> str:
    """An expectation not judged at a point: a toolchain condition that does not hold there."""
    who = f"{u['label']} (`{u['kernel']}`)" if u["label"] else f"`{u['kernel']}`"
    why = ", ".join(f"{c['key']} {c['want']} does not hold ({c['key']} {c['have']} here)" if c["have"] is not None
                    else f"{c['key']} {c['want']} does not hold (no {c['key']} here)" for c in u["unmet"])
    return f"{who} not judged here: {why}"


@notes(F.FlagChangedFacts)
def _flag_changed(x, sized=True):
    seen = {"binary": "compiled binaries", "source": "code (the interpreter's model)", "names": "GPU kernels"}[x.how]
    when = ", each set after the kernel's module was imported and the kernel called once" if x.set == "after_import" else ""
    return (f"the flag {x.flag} changes the code: {x.codes} distinct sets of {seen} over its values "
            f"{', '.join(map(repr, x.values))}{when}")


@notes(F.FlagNotVisibleFacts)
def _flag_not_visible(x, sized=True):
    return (f"the flag {x.flag}: no Triton kernel ran, and the CPU has no profiler to name GPU kernels, so "
            "whether it changes the code cannot be seen here; climb with --device cuda")


@notes(F.ImportsCheckedFacts)
def _imports_checked(x, sized=True):
    names = ", ".join(x.names) or "none declared"
    traced = ", ".join(x.traced) or "none importable by name"
    return f"imports checked: {names}; modules imported afresh under the tracer: {traced}"


@notes(F.CacheMissedFacts)
def _cache_missed(x, sized=True):
    return (f"B ({x.variant}) on the cache A left matched B on an empty cache; the warm process added "
            f"{x.files_added} file(s) to the {x.files_cold} A left")


@notes(F.CollectiveNeedsCudaFacts)
def _collective_needs_cuda(x, sized=True):
    return (f"the collective runs only on CUDA ranks (Collective(needs='cuda')): its {x.world} ranks are "
            "skipped on the CPU, never passed")


@notes(F.NotEnoughGpusFacts)
def _not_enough_gpus(x, sized=True):
    return (f"{x.world} ranks need {x.world} GPUs, one each (the spec does not declare "
            f"Collective(share_device=True)); this host has {x.gpus}")


@notes(F.RankFailedFacts)
def _rank_failed(x, sized=True):
    return (f"rank {x.rank} failed in its {x.phase} phase, outside the kernel's calls: {x.error}: "
            f"{x.text} (kladder's side or the spec's, not a kernel failure)")


@notes(F.CollectiveCallsFacts)
def _collective_calls(x, sized=True):
    return (f"{x.world} ranks x {x.queued} queued calls, every output right; rank {x.lag} lagged "
            f"{x.lag_us} us before each call; {x.dim} = {ints(x.sizes)}; reference over "
            f"{x.backend}; {x.seconds:.1f} s")


@notes(F.OutsideClimbFacts)
def _outside_climb(x, sized=True):
    return f"the {x.mode} mode runs inside a climb's worker (it starts processes of its own)"


@notes(F.SanitizerCleanFacts)
def _sanitizer_clean(x, sized=True):
    return f"compute-sanitizer {x.tool}: no errors in {x.calls} calls. {CANNOT_SEE[x.tool]}"


@notes(F.NoSanitizerFacts)
def _no_sanitizer(x, sized=True):
    return (f"compute-sanitizer was not found (searched {', '.join(x.searched)}): the {x.tool} check did not "
            "run; install the CUDA toolkit's compute-sanitizer or put it on PATH")


@notes(F.InterpreterDefectFacts)
def _interpreter_defect(x, sized=True):
    return (f"not judged on the CPU: the Triton interpreter {INTERPRETER_FEATURES[x.feature]} (its probe: "
            f"{x.what} of {x.x} gave {x.got}, not {x.want}) and the kernel's calls use it; "
            "climb with --device cuda")


@notes(F.InterpreterErrorFacts)
def _interpreter_error(x, sized=True):
    same = f" (its probe of {INTERPRETER_PROBES[x.probe]} raised the same)" if x.probe else ""
    return (f"not judged on the CPU: the Triton interpreter raised {x.error}: {x.text}{same}; "
            "climb with --device cuda")
