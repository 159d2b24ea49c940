"""report/words/notes.py: why a point was skipped, broken, out of memory or not judged, and
what a passing mode measured, from notes built here; the waits of a rung's lanes."""
from __future__ import annotations

import pytest

from kladder.core.outcome import Note, NoteKind, Wait, Waited
from kladder.report.words.notes import INTERPRETER_FEATURES, WAIT_WORDS, note_text, waiting_text, waits_text


def _say(kind: NoteKind, sized: bool = True, **facts) -> str:
    return note_text(Note.of(kind, **facts), sized)


# ---------------------------------------------------------------------------- waits
def test_waits_text_with_why_and_times():
    waits = [Waited(Wait.FORK_SERVER, 2.06), Waited(Wait.WORKER, 0.5), Waited(Wait.DEVICE, 12.0, times=3)]
    assert waits_text(waits) == (
        "2.1 s for the fork server to start (it imports torch and Triton once, for every new process); "
        "0.5 s for a worker to start; 12.0 s for the device (a worker's CUDA context refused while other processes "
        "held its memory; 3 times)")
    assert waits_text([]) == ""


def test_waiting_text():
    assert waiting_text(Wait.IN_FLIGHT, 3.6) == "waiting 4 s for the other lanes' points to end"
    assert waiting_text(Wait.HELD, 1.0, "r3-M=4") == "waiting 1 s for a point that ran alone (r3-M=4)"


def test_every_wait_has_its_words():
    assert set(WAIT_WORDS) == set(Wait)


# ---------------------------------------------------------------------------- skips and sizes
def test_a_gpu_points_size_is_left_out_of_a_groups_text():
    assert _say(NoteKind.GPU_POINT, need_bytes=3 << 30, budget="256 MiB") == (
        "a GPU point (3.00 GiB of tensors): over the CPU budget (256 MiB), since the Triton interpreter runs every "
        "program in Python; climb with --device cuda")
    assert _say(NoteKind.GPU_POINT, sized=False, need_bytes=3 << 30, budget="256 MiB").startswith(
        "a GPU point: over the CPU budget (256 MiB)")


def test_value_out_of_range_with_a_known_and_an_unknown_why():
    assert _say(NoteKind.VALUE_OUT_OF_RANGE, arg="x", value="tiny", lo=1.0, hi=2.5, why="no_tiny") == (
        "x: tiny cannot be drawn inside its declared range [1, 2.5] (no subnormal, smallest-normal or zero value lies "
        "in it): this value kind is skipped for this input")
    assert "(some new reason)" in _say(NoteKind.VALUE_OUT_OF_RANGE, arg="x", value="v", lo=0, hi=1,
                                       why="some new reason")


def test_no_device_memory_measured_or_from_the_tensors():
    assert _say(NoteKind.NO_DEVICE_MEMORY, need_bytes=1 << 30, free_bytes=1 << 20) == \
        "needs 1.00 GiB of tensors; the device has 1.00 MiB free"
    assert _say(NoteKind.NO_DEVICE_MEMORY, need_bytes=1 << 30, free_bytes=1 << 20, measured="r1-M=4",
                measured_bytes=1 << 10).startswith(
        "needs about 1.00 GiB on the device (the peak of kernel, reference and peer measured at r1-M=4, 1.00 KiB, "
        "scaled by the elements)")


def test_no_host_memory_by_the_number_of_workers():
    common = dict(need_bytes=8 << 30, share_bytes=2 << 30, measured="p", measured_bytes=1 << 30)
    assert "the host has 2.00 GiB available to each of its 4 workers:" in _say(NoteKind.NO_HOST_MEMORY, workers=4,
                                                                               **common)
    assert "the host has 2.00 GiB available:" in _say(NoteKind.NO_HOST_MEMORY, workers=1, **common)


def test_inputs_mutated_at_a_repetition_and_at_an_accumulation():
    assert _say(NoteKind.INPUTS_MUTATED, args=["x", "y"]).startswith("the kernel writes x, y in place (the spec "
                                                                     "declares it): each call")
    assert _say(NoteKind.INPUTS_MUTATED, args=["g"], when="accumulate").startswith(
        "the kernel's backward writes g in place (the spec declares it): a second backward")


def test_fixed_notes():
    assert _say(NoteKind.NO_OUT_ARGS).startswith("no out-arguments:")
    assert _say(NoteKind.NOT_COMPILED, variant="compiler").startswith("under Triton's interpreter nothing is compiled")


# ---------------------------------------------------------------------------- errors of the spec and of kladder
def test_refused_as_documented_names_who_refused():
    assert _say(NoteKind.REFUSED_AS_DOCUMENTED, error="ValueError", text="N > 4096") == (
        "refused as documented: the launcher raised ValueError here, where the spec says it must not run: N > 4096")
    assert _say(NoteKind.REFUSED_AS_DOCUMENTED, error="E", text="t", label="call 2").startswith(
        "refused as documented: call 2 raised E")


def test_reference_shape_and_nan():
    assert _say(NoteKind.REFERENCE_SHAPE, output="y", shape=[4, 8], declared=[4, 7]).startswith(
        "the reference returned `y` of shape (4, 8) where returns= declares (4, 7)")
    assert _say(NoteKind.REFERENCE_NAN, output="y", count=1234, total=4096, at=[0, 3]).startswith(
        "the reference returned NaN at 1,234 of 4,096 elements of `y` (the first at (0, 3))")


def test_kladder_error_strips_its_trace_and_asks_for_a_report():
    text = _say(NoteKind.KLADDER_ERROR, error="KeyError", text="'x'", trace="\n  File a.py, line 3\n\n")
    assert text == ("kladder's own error, not the kernel's: KeyError: 'x' (please report it, with this trace: "
                    "File a.py, line 3)")


def test_kernel_oom_with_and_without_its_call():
    assert _say(NoteKind.KERNEL_OOM, call="replay 2", text="CUDA OOM") == "the kernel ran out of memory (replay 2): CUDA OOM"
    assert _say(NoteKind.KERNEL_OOM, call="", text="CUDA OOM") == "the kernel ran out of memory: CUDA OOM"


def test_stage_overrun_names_the_stage_and_the_elements():
    text = _say(NoteKind.STAGE_OVERRUN, stage="reference", seconds=61.5, budget_s=60, timeout_s=20, elements=1 << 20)
    assert text.startswith("kladder's own stage, the float64 reference, was still running after 61.5 s at 1,048,576 "
                           "elements (its budget: 60 s; the kernel's calls get 20 s): not judged")
    assert _say(NoteKind.STAGE_OVERRUN, stage="new", seconds=1, budget_s=1, timeout_s=1).startswith(
        "kladder's own stage, new, was still running after 1 s (its budget")


def test_reference_not_independent_names_what_it_shares():
    text = _say(NoteKind.REFERENCE_NOT_INDEPENDENT, reference="ref_add", functions=["add"], jit_kernels=[],
                gpu_kernels=["k1", "k2"], torch_op="aten::add")
    assert text.startswith("the reference ref_add is not independent of the kernel under test: it runs the kernel's "
                           "own functions add; its GPU kernels k1, k2; the torch op under test, aten::add; a comparison")


# ---------------------------------------------------------------------------- load: not judged
def test_device_full_says_what_the_alone_run_gave():
    common = dict(first="kernel_oom", text="OOM", processes=2, alone_s=1.25)
    assert _say(NoteKind.DEVICE_FULL, alone="passed", **common) == (
        "the device was full: out of memory (OOM) while 2 other processes on the device; it passed alone (in 1.2 s)")
    assert "it ran out of memory alone too" in _say(NoteKind.DEVICE_FULL, alone="oom", **common)
    assert "it was not judged alone" in _say(NoteKind.DEVICE_FULL, alone="not_judged", **common)


def test_host_full_is_never_the_kernels_crash():
    text = _say(NoteKind.HOST_FULL, signal="SIGKILL", first="crashed", alone="failed", alone_s=2.0, oom_kills=1)
    assert text == ("the host's memory was full: the worker died with SIGKILL (the out-of-memory killer's signal) "
                    "while the out-of-memory killer killed 1 process; it was killed alone too, others still holding "
                    "memory (in 2.0 s): not judged, and not the kernel's crash")
    assert _say(NoteKind.HOST_FULL, signal="SIGKILL", first="crashed", alone="passed").startswith(
        "others held the memory: ")


def test_host_busy():
    text = _say(NoteKind.HOST_BUSY, timeout_s=20, cores=2, worker_cpu_s=1.0, worker_wait_s=15.0, seconds=20.0,
                host_cpu_s=38.0)
    assert text.startswith("the host was busy: the kernel did not finish in its 20 s under load, nor alone, and alone "
                           "its worker ran 1.0 s and waited 15.0 s for a CPU in 20.0 s while other processes used 38.0 s "
                           "of the 2 CPUs' 40 s: not judged")


# ---------------------------------------------------------------------------- what a passing mode measured
def test_run_to_run():
    text = _say(NoteKind.RUN_TO_RUN, outputs=["y", "z"], differ=3, total=4096, mode="aba", files=2)
    assert text.startswith("A's two calls on the same inputs, before B, differ in 3 of 4,096 elements of `y`, `z`:")
    assert ", so A after B was judged against the reference" in text and text.endswith(
        "; the cold process left 2 file(s) in the cache directory")
    assert "A on the warm cache and on the cold one" in _say(NoteKind.RUN_TO_RUN, outputs=["y"], differ=1, total=1,
                                                             mode="jitcache")


def test_ran_with_an_expectation_not_judged_here():
    unjudged = [{"label": "fast path", "kernel": "k", "unmet": [{"key": "cuda", "want": ">= 12", "have": "11.8"},
                                                              {"key": "arch", "want": "sm90", "have": None}]},
                {"label": "", "kernel": "j", "unmet": [{"key": "triton", "want": ">= 3.9", "have": "3.8"}]}]
    text = _say(NoteKind.RAN, functions=["f"], n_functions=1, unjudged=unjudged)
    assert text == ("ran Python f; fast path (`k`) not judged here: cuda >= 12 does not hold (cuda 11.8 here), "
                    "arch sm90 does not hold (no arch here); `j` not judged here: triton >= 3.9 does not hold "
                    "(triton 3.8 here)")


def test_flag_changed():
    assert _say(NoteKind.FLAG_CHANGED, flag="USE_TMA", values=[True, False], how="binary", codes=2) == (
        "the flag USE_TMA changes the code: 2 distinct sets of compiled binaries over its values True, False")
    assert _say(NoteKind.FLAG_CHANGED, flag="$X", values=["1"], how="names", codes=1, set="after_import").endswith(
        "GPU kernels over its values '1', each set after the kernel's module was imported and the kernel called once")


def test_imports_checked_with_nothing_declared():
    assert _say(NoteKind.IMPORTS_CHECKED, names=[], traced=[]) == (
        "imports checked: none declared; modules imported afresh under the tracer: none importable by name")


def test_collective_calls():
    assert _say(NoteKind.COLLECTIVE_CALLS, world=2, queued=16, lag=1, lag_us=500, dim="N", sizes=[4, 4096],
                backend="gloo", seconds=1.25) == (
        "2 ranks x 16 queued calls, every output right; rank 1 lagged 500 us before each call; N = 4, 4,096; "
        "reference over gloo; 1.2 s")


@pytest.mark.parametrize("feature", sorted(INTERPRETER_FEATURES))
def test_interpreter_defect_of_each_feature(feature):
    text = _say(NoteKind.INTERPRETER_DEFECT, feature=feature, what="tl.exp", x=[1.0], got=[0.0], want=[2.718])
    assert text == (f"not judged on the CPU: the Triton interpreter {INTERPRETER_FEATURES[feature]} (its probe: tl.exp "
                    "of [1.0] gave [0.0], not [2.718]) and the kernel's calls use it; climb with --device cuda")


def test_interpreter_error_with_its_probe():
    assert _say(NoteKind.INTERPRETER_ERROR, error="E", text="t", probe="libdevice") == (
        "not judged on the CPU: the Triton interpreter raised E: t (its probe of a libdevice call raised the same); "
        "climb with --device cuda")
    assert _say(NoteKind.INTERPRETER_ERROR, error="E", text="t") == ("not judged on the CPU: the Triton interpreter "
                                                                      "raised E: t; climb with --device cuda")


def test_sanitizer_clean_and_missing():
    assert _say(NoteKind.SANITIZER_CLEAN, tool="memcheck", calls=3).startswith(
        "compute-sanitizer memcheck: no errors in 3 calls. memcheck sees accesses outside every live allocation")
    assert _say(NoteKind.NO_SANITIZER, tool="racecheck", searched=["/usr/local/cuda/bin", "PATH"]).startswith(
        "compute-sanitizer was not found (searched /usr/local/cuda/bin, PATH): the racecheck check did not run")


def test_the_short_notes_say_their_facts():
    """Notes of one line each, made from the facts here: each says its numbers and names (no
    KeyError, no 'None' where a value was given)."""
    made = {NoteKind.MODE_NEEDS_CUDA: dict(mode="graph"), NoteKind.OUTSIDE_CLIMB: dict(mode="jitcache"),
            NoteKind.NOT_ENOUGH_GPUS: dict(world=4, gpus=1), NoteKind.COLLECTIVE_NEEDS_CUDA: dict(world=2),
            NoteKind.CACHE_FILES: dict(files=3), NoteKind.CACHE_MISSED: dict(variant="config", files_cold=2, files_added=0),
            NoteKind.NO_SUCH_SLOT: dict(slot="mlp", slots=["attn", "norm"]),
            NoteKind.RACE_NOT_SET_UP: dict(attempts=4, delay_cycles=100_000)}
    texts = {k: _say(k, **kw) for k, kw in made.items()}
    assert texts[NoteKind.NOT_ENOUGH_GPUS].startswith("4 ranks need 4 GPUs, one each") and texts[
        NoteKind.NOT_ENOUGH_GPUS].endswith("this host has 1")
    assert texts[NoteKind.NO_SUCH_SLOT] == "kl.InModel(slot='mlp'): kladder's model has the slots attn, norm"
    assert "(up to 100,000 cycles)" in texts[NoteKind.RACE_NOT_SET_UP]
    assert texts[NoteKind.CACHE_MISSED] == ("B (config) on the cache A left matched B on an empty cache; the warm "
                                            "process added 0 file(s) to the 2 A left")
    assert all(t and "None" not in t for t in texts.values())
