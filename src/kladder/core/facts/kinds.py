"""The kinds: what failed (Check) and why a point was skipped, broken or out of memory, or what a
passing mode measured (NoteKind). Each member's facts are its facts class's fields, declared
where the class says its kind (`class HangFacts(Facts, check=Check.HANG)`, in this package's
family modules): the one place they are written. outcome.py re-exports both enums."""
from __future__ import annotations

from enum import Enum


class Words(str, Enum):
    """A str-valued enum that prints, formats and serialises as its value ("passed")."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Check(Words):
    """What failed; its facts: the facts class registered with `check=` (CHECK_FACTS)."""
    CONTRACT = "contract"
    VALUES = "values"
    GUARD = "guard"
    RAISED = "raised"
    CRASHED = "crashed"
    HANG = "hang"
    DEVICE_FAULT = "device_fault"
    CAPTURE = "capture"
    UNCAPTURED = "uncaptured"                # a warning, never a failure
    INPUT_CHANGED = "input_changed"
    NOT_BITWISE = "not_bitwise"
    PADDING = "padding"
    INVALID_REFERENCE = "invalid_reference"  # older reports only: a reference that is not independent is now the
                                             # spec's problem (NoteKind.REFERENCE_NOT_INDEPENDENT)
    INVARIANT = "invariant"
    NONFINITE = "nonfinite"                  # NaN/Inf accepted where the policy says raise
    MODEL = "model"
    BIAS = "bias"                            # a warning, never a failure
    # rung 7, the toolchain
    DISPATCH = "dispatch"
    FLAG_NO_EFFECT = "flag_no_effect"
    IMPORT_CONTRACT = "import_contract"
    CAUGHT_IMPORT = "caught_import"          # a warning, never a failure
    # rung 6: the first wrong call of each rank follows a COLLECTIVE as its own finding (values, guard, contract)
    COLLECTIVE = "collective"
    RANKS_HUNG = "ranks_hung"
    # rung 5 (checks/repetition.py)
    REPEATS = "repeats"
    NONDETERMINISTIC = "nondeterministic"    # a warning, never a failure
    STREAM = "stream"
    SANITIZER = "sanitizer"
    UNDER_LOAD = "under_load"                # a warning, never a failure
    CRASHED_NOT_ALONE = "crashed_not_alone"  # a warning, never a failure (run/faults.py after_heap_check)


class NoteKind(Words):
    """Why a point was skipped, broken or out of memory, or what a passing mode measured; its
    facts: the facts class registered with `note=` (NOTE_FACTS)."""
    GPU_POINT = "gpu_point"
    VALUE_OUT_OF_RANGE = "value_out_of_range"
    NO_DEVICE_MEMORY = "no_device_memory"
    MODE_NEEDS_CUDA = "mode_needs_cuda"
    GRAPHS_NOT_CLAIMED = "graphs_not_claimed"
    NO_OUT_ARGS = "no_out_args"
    INPUTS_MUTATED = "inputs_mutated"
    NOT_TORCH_OP = "not_torch_op"
    OUTSIDE_CLIMB = "outside_climb"
    RACE_NOT_SET_UP = "race_not_set_up"
    LAYOUT_REFUSED = "layout_refused"
    RAISED_AS_ASKED = "raised_as_asked"
    REFUSED_AS_DOCUMENTED = "refused_as_documented"
    INPUTS_FAILED = "inputs_failed"
    REFERENCE_RAISED = "reference_raised"
    REFERENCE_SHAPE = "reference_shape"
    REFERENCE_NAN = "reference_nan"
    INVARIANT_RAISED = "invariant_raised"
    PROCESS_FAILED = "process_failed"
    NO_SUCH_SLOT = "no_such_slot"
    BASELINE_FAILED = "baseline_failed"
    KLADDER_ERROR = "kladder_error"                # kladder's own bug, never the kernel's
    KERNEL_OOM = "kernel_oom"
    INPUTS_OOM = "inputs_oom"
    MODEL_SCORES = "model_scores"
    CACHE_FILES = "cache_files"
    RUN_TO_RUN = "run_to_run"
    # rung 7
    RAN = "ran"
    FLAG_CHANGED = "flag_changed"
    FLAG_NOT_VISIBLE = "flag_not_visible"
    NOT_COMPILED = "not_compiled"
    IMPORTS_CHECKED = "imports_checked"
    CACHE_MISSED = "cache_missed"
    COLLECTIVE_NEEDS_CUDA = "collective_needs_cuda"
    NOT_ENOUGH_GPUS = "not_enough_gpus"
    RANK_FAILED = "rank_failed"
    COLLECTIVE_CALLS = "collective_calls"
    REPEATS_CLEAN = "repeats_clean"
    STREAM_CLEAN = "stream_clean"
    SANITIZER_CLEAN = "sanitizer_clean"
    NO_SANITIZER = "no_sanitizer"
    INTERPRETER_DEFECT = "interpreter_defect"
    INTERPRETER_ERROR = "interpreter_error"
    STAGE_OVERRUN = "stage_overrun"                # kladder's own stage was silent past its budget: not judged
    DEVICE_FULL = "device_full"                    # out of memory while others held the device's memory: not judged
    HOST_BUSY = "host_busy"                        # hung alone too while others held the host's CPUs: not judged
    HOST_FULL = "host_full"                        # killed while the host's memory was full: not judged
    NO_HOST_MEMORY = "no_host_memory"              # the host cannot hold the point: skipped before it ran
    REFERENCE_NOT_INDEPENDENT = "reference_not_independent"  # BROKEN: the reference runs the kernel's own code
