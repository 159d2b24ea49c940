"""run/modes/sanitize.py on the CPU: the report parser's every field (tests/data/sanitizer holds
logs in both of the tool's layouts), where records start and end, the mode's refusals and how it
reads its child's exit status, and where it looks for compute-sanitizer. The child itself runs
only under the tool (CUDA)."""
import os
import subprocess

import pytest

import kladder as kl
from kladder.core.outcome import KernelError, NoteKind, Skip, SpecBroken
from kladder.core.point import Point
from kladder.run.forkclient import Children
from kladder.run.harness import Harness
from kladder.run.modes import sanitize
from kladder.run.modes.base import SanitizerAccess, Sanitized

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "data", "sanitizer")


def _sample(name: str) -> str:
    with open(os.path.join(SAMPLES, name)) as f:
        return f.read()


def _lines(*body: str) -> str:
    return "\n".join(["========= COMPUTE-SANITIZER", *(f"========= {b}" for b in body)]) + "\n"


# ---------------------------------------------------------------------------- the parser
def test_a_recent_memcheck_record_holds_access_size_place_thread_block_address_and_detail():
    errors, summary = sanitize.parse(_sample("memcheck_overrun.log"), "memcheck")
    assert summary == 2 and len(errors) == 2
    e = errors[0]
    assert (e.tool, e.kind, e.access, e.size) == ("memcheck", "invalid", "write", 2)
    assert (e.kernel, e.file, e.line) == ("_store_kernel", "/work/kladder/src/kladder/zoo/small_overrun.py", 41)
    assert (e.thread, e.block) == ("96,0,0", "15,0,0")
    assert e.address == "0x7f2c4a001f40"
    assert e.detail == "is out of bounds and is 0 bytes after the nearest allocation at 0x7f2c4a000000 of size 8,000 bytes"
    assert e.text == "Invalid __global__ write of size 2 bytes"
    assert (e.count, e.severity, e.second) == (1, "", None)
    # the second record is its own: its thread and address, not the first's
    assert (errors[1].thread, errors[1].address) == ("97,0,0", "0x7f2c4a001f42")
    assert errors[1].detail.startswith("is out of bounds and is 2 bytes after")


def test_an_older_record_names_the_kernel_after_the_file_and_line():
    (e,), summary = sanitize.parse(_sample("memcheck_older.log"), "memcheck")
    assert summary == 1
    assert (e.access, e.size, e.kernel, e.line) == ("read", 16, "fused_moe_kernel", 175)
    assert e.file.endswith("fused_moe_triton/fused_moe.py")
    assert e.address == "0x763995f9f000" and e.detail.startswith("is out of bounds and is 1,241,911,296 bytes before")
    # the host backtrace's "in /usr/lib/.../libcuda.so.1" is no place of the kernel's
    assert "libcuda" not in e.file and "libcuda" not in e.kernel


def test_a_pc_with_a_signature_and_no_file_is_the_kernels_name():
    (e,), _ = sanitize.parse(_sample("initcheck_cub_older.log"), "initcheck")
    assert e.kind == "uninitialized" and e.kernel.startswith("void cudf::count_set_bits_kernel<int=256>")
    assert (e.file, e.line, e.address, e.detail) == ("", 0, "0x7fc406200400", "")


def test_a_race_holds_its_severity_both_accesses_and_the_hazards_counted():
    first, second = sanitize.parse(_sample("racecheck_race.log"), "racecheck")[0]
    assert (first.kind, first.severity, first.access, first.kernel, first.line) == ("race", "error", "write", "shift_race", 9)
    assert first.second == SanitizerAccess(access="read", kernel="shift_race", file="/work/kladder/bench/planted.cu", line=11)
    assert (first.count, second.count) == (248, 8)
    assert (second.access, second.second.access) == ("read", "write")


def test_an_older_race_is_a_warning_with_its_count_and_the_second_function():
    (e,), summary = sanitize.parse(_sample("racecheck_older.log"), "racecheck")
    assert (summary, e.severity, e.count, e.access) == (1, "warning", 3968, "read")
    assert e.second.access == "write" and e.second.line == 557
    assert e.second.kernel == "scalar_intra_block_reduction(Sum const &,double,bool,double*,int,double*)"
    assert e.second.file.endswith("Kokkos_Cuda_ReduceScan.hpp")


def test_a_barrier_error_takes_its_place_from_the_at_line_not_the_device_frame():
    errors, summary = sanitize.parse(_sample("synccheck_divergent.log"), "synccheck")
    assert summary == 2 and [e.kind for e in errors] == ["barrier", "barrier"]
    assert [e.thread for e in errors] == ["16,0,0", "17,0,0"]
    assert (errors[0].kernel, errors[0].line, errors[0].size, errors[0].access) == ("half_barrier", 24, 0, "")


def test_a_clean_run_has_no_errors_and_a_summary_of_zero():
    assert sanitize.parse(_sample("memcheck_clean.log"), "memcheck") == ([], 0)


@pytest.mark.parametrize("text, summary", [
    ("", None),                                                   # no summary: the tool never finished
    (_lines("ERROR SUMMARY: 1,234 errors"), 1234),                # thousands separators
    (_lines("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"), 0),
    (_lines("ERROR SUMMARY: 1 error", "ERROR SUMMARY: 5 errors"), 5),   # the last one given
])
def test_the_summary_count(text, summary):
    assert sanitize.parse(text, "memcheck")[1] == summary


def test_lines_without_the_tools_prefix_are_the_programs_own_and_ignored():
    text = ("Invalid __global__ write of size 4 bytes\n"               # printed by the kernel's process, not the tool
            + _lines("ERROR SUMMARY: 0 errors"))
    assert sanitize.parse(text, "memcheck") == ([], 0)


def test_a_blank_line_or_an_unknown_record_ends_the_record_before_it():
    text = _lines("Invalid __global__ read of size 8 bytes",
                  "    at k+0x10 in a.py:3",
                  "",
                  "    by thread (1,0,0) in block (2,0,0)",      # after the blank: belongs to no record
                  "Invalid __global__ read of size 4 bytes",
                  "Program hit cudaErrorLaunchFailure on CUDA API call",   # a record the parser does not know
                  "    Address 0xdead is out of bounds")
    errors, _ = sanitize.parse(text, "memcheck")
    assert [(e.size, e.kernel, e.thread, e.address) for e in errors] == [(8, "k", "", ""), (4, "", "", "")]


def test_the_first_at_line_places_a_record_and_later_ones_do_not_move_it():
    text = _lines("Invalid __shared__ atomic of size 4 bytes",
                  "    at first_kernel+0x10 in one.py:7",
                  "    at other+0x20 in two.py:9")
    (e,), _ = sanitize.parse(text, "memcheck")
    assert (e.access, e.kernel, e.file, e.line) == ("atomic", "first_kernel", "one.py", 7)


def test_a_misaligned_access_is_its_own_kind_with_access_and_size():
    (e,), _ = sanitize.parse(_lines("Misaligned __global__ write of size 8 bytes", "    at k in a.py:1"), "memcheck")
    assert (e.kind, e.access, e.size, e.kernel) == ("misaligned", "write", 8, "k")


def test_and_is_lines_add_to_the_detail_of_memory_errors_only():
    text = _lines("Invalid __global__ read of size 4 bytes", "    and is inside a freed allocation")
    (e,), _ = sanitize.parse(text, "memcheck")
    assert e.detail == "and is inside a freed allocation"


# ---------------------------------------------------------------------------- the mode
def _spec():
    return kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
                   args={"x": kl.Tensor("N", dtype="float32")}, dims={"N": kl.Dim(1, 64)},
                   returns=kl.Tensor("N", like="x"))


def _harness(tool="memcheck", ref="tests/specs/good.py::spec", **repeat):
    point = Point("double", 5, (("N", 7),), mode="sanitize", seed=11, repeat=(("tool", tool), *repeat.items()))
    return Harness(_spec(), point, "cpu", children=Children(ref))


def test_a_tool_it_does_not_drive_is_refused_naming_the_tools():
    with pytest.raises(ValueError, match=r"tool 'leakcheck'.*memcheck"):
        list(sanitize.MODE.observe(_harness("leakcheck")))


def test_outside_a_climb_there_is_no_spec_reference_for_the_child_and_the_point_is_skipped(monkeypatch):
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: ("/opt/cs", []))
    with pytest.raises(Skip) as e:
        list(sanitize.MODE.observe(_harness(ref=None)))
    assert e.value.note.kind == NoteKind.OUTSIDE_CLIMB


@pytest.mark.parametrize("text, code, err, expect", [
    ("", sanitize.KERNEL_RAISED, "the kernel raised ValueError: no", KernelError),
    ("", 1, "ModuleNotFoundError: no module named x", SpecBroken),
    ("", -9, "", SpecBroken),
    ("", 0, "", Sanitized),
    (_sample("memcheck_overrun.log"), sanitize.KERNEL_RAISED, "", Sanitized),   # errors found: they are the result
    (_sample("memcheck_overrun.log"), sanitize.FOUND_ERRORS, "", Sanitized),
])
def test_the_childs_exit_status_decides_what_the_run_was(monkeypatch, text, code, err, expect):
    monkeypatch.setattr(sanitize, "find_sanitizer", lambda: ("/opt/cs", []))
    monkeypatch.setattr(sanitize, "_run", lambda exe, tool, ref, h: (text, code, err))
    if expect is not Sanitized:
        with pytest.raises(expect) as e:
            list(sanitize.MODE.observe(_harness("initcheck")))
        if expect is KernelError:
            assert str(e.value.error) == err and "compute-sanitizer initcheck" in e.value.label
        else:
            assert e.value.note.kind == NoteKind.PROCESS_FAILED
            assert e.value.note.facts.text == (err or f"exit {code}")
        return
    (seen,) = list(sanitize.MODE.observe(_harness("initcheck")))
    assert (seen.tool, seen.calls, len(seen.errors)) == ("initcheck", sanitize.CALLS, 2 if text else 0)


def test_the_log_is_kept_where_asked_and_stdout_stands_in_for_a_missing_log(monkeypatch, tmp_path):
    seen = {}

    def fake_run(cmd, env, capture_output, text, timeout):
        seen["timeout"] = timeout
        return subprocess.CompletedProcess(cmd, 0, _lines("ERROR SUMMARY: 0 errors"), "warming up\nlast words\n")

    monkeypatch.setattr(sanitize.subprocess, "run", fake_run)
    monkeypatch.setenv(sanitize.LOGS_ENV, str(tmp_path / "logs"))
    h = _harness("racecheck", seconds=42.0)
    text, code, err = sanitize._run("/opt/cs", "racecheck", "ref", h)
    assert (code, err, seen["timeout"]) == (0, "last words", 42.0)
    assert sanitize.parse(text, "racecheck") == ([], 0)
    assert (tmp_path / "logs" / "double-racecheck-11.log").read_text() == text


def test_compute_sanitizer_is_found_in_cuda_home_and_the_places_searched_are_said(monkeypatch, tmp_path):
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "compute-sanitizer"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    found, searched = sanitize.find_sanitizer()
    assert found == str(exe)
    assert searched == ["PATH", str(bin_dir), "/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"]


# ---------------------------------------------------------------------------- the child, in this process
CHILD_SPEC = '''
import torch
import kladder as kl

def twice(x):
    with open(SEEN, "a") as f:                 # each call's inputs, as the child saw them
        f.write(repr(x.tolist()) + "\\n")
    return torch.mul(x, 2)

spec = kl.Spec("twice_sanitized", kernel=twice, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
               dims={"N": kl.Dim(1, 64)}, returns=kl.Tensor("N", like="x"))
'''


def test_the_child_makes_its_calls_on_two_input_draws_and_exits_0(tmp_path):
    seen = tmp_path / "seen.txt"
    (tmp_path / "s.py").write_text(f"SEEN = {str(seen)!r}\n" + CHILD_SPEC)
    point = Point("twice_sanitized", 5, (("N", 7),), mode="eager", seed=3)
    assert sanitize.child([f"{tmp_path}/s.py::spec", "cpu", point.to_json()]) == 0
    calls = seen.read_text().splitlines()
    assert len(calls) == sanitize.CALLS and calls[0] != calls[1]
