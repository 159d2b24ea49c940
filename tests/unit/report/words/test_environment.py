"""report/words/environment.py: the environment in one line, a climb that could not start, a
climb that ran nothing."""
from __future__ import annotations

from kladder.core.results import StartErrorFacts
from kladder.report.words.environment import (
    ENV_SHOWN,
    collection_failed_text,
    device_holders_text,
    device_start_error,
    device_start_text,
    fingerprint_text,
    nothing_ran_text,
    target_warning_text,
)

FP = {"python": "3.11.7", "torch": "2.13.0+cpu", "triton": "3.9.0", "kladder": "0.9",
      "device": {"kind": "cpu", "name": "x86_64"}}


def test_fingerprint_text_of_nothing():
    assert fingerprint_text({}) == "environment unknown"


def test_fingerprint_text_on_a_cpu_without_git_or_env():
    assert fingerprint_text(FP) == ("python 3.11.7, torch 2.13.0+cpu, triton 3.9.0, cpu (x86_64), kladder 0.9; no "
                                    "compile-steering env")


def test_fingerprint_text_on_gpus_with_git_and_more_env_than_shown():
    env = {f"V{i}": str(i) for i in range(ENV_SHOWN + 2)}
    fp = {**FP, "triton": None, "cuda": "12.4", "driver": "550.54",
          "device": {"kind": "cuda", "name": "H100", "arch": "sm_90", "capability": "9.0", "count": 8},
          "git": {"commit": "0123456789abcdef", "dirty": True}, "env": env}
    assert fingerprint_text(fp) == ("python 3.11.7, torch 2.13.0+cpu (CUDA 12.4, driver 550.54), no triton, H100 "
                                    "(sm_90, capability 9.0) x8, kladder 0.9, git 0123456789 (uncommitted changes); "
                                    "env V0=0 V1=1 V2=2 V3=3 +2 more (--json)")


def test_fingerprint_text_of_one_gpu_and_an_unqueried_device():
    one = {**FP, "rocm": "6.1", "device": {"kind": "cuda", "name": "MI300", "arch": "gfx942", "capability": "9.4"}}
    assert "torch 2.13.0+cpu (ROCm 6.1), triton 3.9.0, MI300 (gfx942, capability 9.4), kladder" in fingerprint_text(one)
    assert "device not queried" in fingerprint_text({**FP, "device": None})


def test_target_warning_text():
    w = {"var": "TORCH_CUDA_ARCH_LIST", "value": "8.0", "name": "H100", "device": "sm_90"}
    assert target_warning_text(w).startswith("TORCH_CUDA_ARCH_LIST=8.0 names a build target that the live device "
                                             "(H100, sm_90) is not")


def test_nothing_ran_text():
    assert nothing_ran_text(0).startswith("nothing ran: the rungs climbed generated no point")
    assert nothing_ran_text(12).startswith("nothing ran: all 12 points were skipped")
    assert nothing_ran_text(1).startswith("nothing ran: the one point was skipped")


# ---------------------------------------------------------------------------- a device that refused
def _start(**kw) -> dict:
    base = {"kind": "device", "what": "a CUDA context", "error": "out of memory", "waited_s": 30.0, "gpu": "0",
            "free_bytes": 1 << 20, "total_bytes": 80 << 30, "holders": []}
    return {**base, **kw}


def test_device_holders_text_unknown_none_and_many():
    assert device_holders_text(_start(free_bytes=None, holders=None)) == (
        "the device's free memory is unknown (no nvidia-smi), held by processes unknown")
    assert device_holders_text(_start()) == "the device had 1.00 MiB free of 80.00 GiB, no process listed as holding it"
    holders = [{"pid": i, "name": f"p{i}", "used_bytes": (1 << 30) if i == 0 else None} for i in range(8)]
    assert device_holders_text(_start(holders=holders)) == (
        "the device had 1.00 MiB free of 80.00 GiB, held by 8 processes: pid 0 p0 (1.00 GiB), pid 1 p1, pid 2 p2, "
        "pid 3 p3, pid 4 p4, pid 5 p5 and 2 more")
    one = [{"pid": 7, "name": "python"}]
    assert device_holders_text(_start(holders=one)).endswith("held by 1 process: pid 7 python")


def test_device_start_text_with_and_without_a_gpu_and_an_error():
    assert device_start_text(_start()) == (
        "a CUDA context on GPU 0 failed for 30 s: out of memory; the device had 1.00 MiB free of 80.00 GiB, no process "
        "listed as holding it; wait for them to finish, or give --devices a free GPU")
    assert device_start_text(_start(gpu="", error="")).startswith("a CUDA context failed for 30 s: no error text;")
    assert device_start_text(_start(gpu=None)).startswith("a CUDA context failed for 30 s:")


def test_device_start_error_carries_its_line():
    e = device_start_error(_start())
    assert isinstance(e, StartErrorFacts) and e.message == device_start_text(_start()) and e.gpu == "0"


def test_collection_failed_text():
    assert collection_failed_text(2, 1) == ("no point ran: pytest's collection failed (2 errors, shown above), so "
                                            "nothing was tested (1 kladder point had been collected)")
    assert collection_failed_text(0, 3) == ("no point ran: pytest's collection failed (a usage error: pytest's ERROR "
                                            "line), so nothing was tested (3 kladder points had been collected)")
    assert "(1 error, shown above)" in collection_failed_text(1, 0)
