"""kladder.core.fingerprint: the build targets read from the environment, the warnings, the live
device and driver from what torch and the kernel report (fakes: no GPU, no git, no process)."""
import io
import json
import os
import types

import pytest

import kladder
from kladder.core import fingerprint as fp
from kladder.core.fingerprint import _cuda_targets, source_file, steering_env, target_warnings

H100 = {"kind": "cuda", "name": "H100", "capability": "9.0", "arch": "sm_90", "count": 1}
MI300 = {"kind": "rocm", "name": "MI300X", "capability": "9.4", "arch": "gfx942", "count": 8}


@pytest.mark.parametrize("value,want", [
    ("8.0;9.0a+PTX", {"8.0", "9.0"}), ("80;90", {"8.0", "9.0"}), ("80,90 100", {"8.0", "9.0", "10.0"}),
    ("sm_90a", {"9.0"}), ("compute_86", {"8.6"}), ("120", {"12.0"}), ("10.0", {"10.0"}),
    ("Hopper;Ampere", {"9.0", "8.0", "8.6"}), ("Blackwell+PTX", {"10.0", "12.0"}),
    ("all", None), ("all-major", None), ("8.0;native", None), ("", set()), ("PTX", set()), ("7", set()),
])
def test_cuda_targets_read_torch_and_cmake_spellings(value, want):
    assert _cuda_targets(value) == want


def test_steering_env_keeps_the_compilers_variables_sorted_and_masks_secrets():
    env = {"PATH": "/bin", "HOME": "/root", "TORCH_CUDA_ARCH_LIST": "9.0", "HIP_VISIBLE_DEVICES": "0",
           "HSA_API_KEY": "k", "CUDA_AUTH_PASSWD": "p", "LD_LIBRARY_PATH": "/x", "GPU_ARCHS": "gfx942",
           "TORCHINDUCTOR_CACHE_DIR": "/c", "TORCH_LOGS": "+dynamo", "MY_TRITON_X": "no"}
    out = steering_env(env)
    assert list(out) == sorted(out)
    assert out == {"CUDA_AUTH_PASSWD": "***", "GPU_ARCHS": "gfx942", "HIP_VISIBLE_DEVICES": "0", "HSA_API_KEY": "***",
                   "LD_LIBRARY_PATH": "/x", "TORCHINDUCTOR_CACHE_DIR": "/c", "TORCH_CUDA_ARCH_LIST": "9.0"}
    assert steering_env({}) == {}


def test_a_cuda_target_list_without_the_device_warns_once_per_variable():
    env = {"TORCH_CUDA_ARCH_LIST": "8.0;8.6", "CUDAARCHS": "80", "GPU_ARCHS": "gfx942"}
    w = target_warnings(H100, env)
    assert w == [{"var": "TORCH_CUDA_ARCH_LIST", "value": "8.0;8.6", "device": "9.0", "name": "H100"},
                 {"var": "CUDAARCHS", "value": "80", "device": "9.0", "name": "H100"}]     # a ROCm variable is not a CUDA build's
    assert json.dumps(w, allow_nan=False)


@pytest.mark.parametrize("env", [{}, {"TORCH_CUDA_ARCH_LIST": ""}, {"TORCH_CUDA_ARCH_LIST": "all"},
                                 {"TORCH_CUDA_ARCH_LIST": "Hopper"}, {"CUDAARCHS": "90-real"}])
def test_no_cuda_warning_where_the_device_is_named_or_nothing_is(env):
    assert target_warnings(H100, env) == []


def test_a_rocm_target_list_reads_the_arch_before_its_features():
    assert target_warnings(MI300, {"PYTORCH_ROCM_ARCH": "gfx942:sramecc+:xnack-;gfx90a"}) == []
    w = target_warnings(MI300, {"AMDGPU_TARGETS": "gfx90a, gfx1100", "TORCH_CUDA_ARCH_LIST": "8.0"})
    assert w == [{"var": "AMDGPU_TARGETS", "value": "gfx90a, gfx1100", "device": "gfx942", "name": "MI300X"}]


def test_no_warning_without_a_live_gpu():
    env = {"TORCH_CUDA_ARCH_LIST": "8.0", "GPU_ARCHS": "gfx90a"}
    assert target_warnings(None, env) == []
    assert target_warnings({"kind": "cpu"}, env) == []


# ---------------------------------------------------------------------------- the live device
def _torch(available=True, initialized=True, hip=None, gcn="", major=9, minor=0, count=2, driver=12080):
    props = types.SimpleNamespace(name="Fake GPU", major=major, minor=minor, gcnArchName=gcn)

    def get_driver():
        if isinstance(driver, Exception):
            raise driver
        return driver
    cuda = types.SimpleNamespace(is_available=lambda: available, is_initialized=lambda: initialized,
                                 current_device=lambda: 0, get_device_properties=lambda i: props,
                                 device_count=lambda: count)
    return types.SimpleNamespace(cuda=cuda, version=types.SimpleNamespace(hip=hip, cuda="12.8"),
                                 _C=types.SimpleNamespace(_cuda_getDriverVersion=get_driver))


def test_the_cpu_device_is_named_without_torch():
    d = fp._device(None, "cpu")
    assert d["kind"] == "cpu" and d["capability"] is None and d["count"] == 0 and d["name"]


def test_a_cuda_device_is_read_only_where_cuda_is_already_initialised():
    assert fp._device(_torch(), "cuda") == {"kind": "cuda", "name": "Fake GPU", "capability": "9.0", "arch": "sm_90",
                                            "count": 2}
    assert fp._device(_torch(initialized=False), "cuda") is None          # never initialise CUDA in the parent
    assert fp._device(_torch(available=False), "cuda") is None
    assert fp._device(None, "cuda") is None
    assert fp._device(_torch(), None) is None


def test_a_rocm_device_is_named_by_its_gcn_arch():
    d = fp._device(_torch(hip="6.2", gcn="gfx942:sramecc+:xnack-", major=9, minor=4), "cuda")
    assert (d["kind"], d["arch"], d["capability"]) == ("rocm", "gfx942", "9.4")


@pytest.fixture
def files(monkeypatch):
    """The driver files the module reads: {path: text}; any other path is absent."""
    have: dict[str, str] = {}

    def fake_open(path, *a, **k):
        if path not in have:
            raise FileNotFoundError(path)
        return io.StringIO(have[path])
    monkeypatch.setattr(fp, "open", fake_open, raising=False)
    return have


def test_the_driver_version_comes_from_the_kernel_modules_file(files):
    files["/proc/driver/nvidia/version"] = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 "
                                            "22:23:56 UTC 2024\nGCC version: gcc 12\n")
    assert fp.driver_version(_torch(), H100) == "550.54.15"


def test_an_amd_driver_is_read_where_no_nvidia_one_is(files):
    files["/sys/module/amdgpu/version"] = "6.7.0\n"
    assert fp.driver_version(None, MI300) == "6.7.0"


def test_an_unreadable_nvidia_file_falls_through_to_the_next(files):
    files["/proc/driver/nvidia/version"] = "nothing to see"
    files["/sys/module/amdgpu/version"] = "6.3.6"
    assert fp.driver_version(None, None) == "6.3.6"


@pytest.mark.parametrize("driver,want", [(12080, "CUDA 12.8"), (12040, "CUDA 12.4"), (11020, "CUDA 11.2"),
                                         (RuntimeError("no driver"), None)])
def test_without_a_driver_file_the_cuda_driver_api_says_its_version(files, driver, want):
    assert fp.driver_version(_torch(driver=driver), H100) == want
    assert fp.driver_version(_torch(driver=driver), MI300) is None         # the CUDA API says nothing of ROCm
    assert fp.driver_version(_torch(driver=driver), None) is None


# ---------------------------------------------------------------------------- the whole fingerprint
def test_the_fingerprint_reads_the_env_it_is_given_and_is_strict_json():
    got = fp.fingerprint(None, "cpu", env={"TRITON_INTERPRET": "1", "HOME": "/h"})
    assert got["env"] == {"TRITON_INTERPRET": "1"} and got["warnings"] == [] and got["git"] is None
    assert got["kladder"] == kladder.__version__ and got["device"]["kind"] == "cpu"
    assert json.loads(json.dumps(got, allow_nan=False)) == got


def test_version_of_an_absent_package_is_none():
    assert fp._version("kladder-no-such-package") is None


def test_git_of_nothing_is_none():
    assert fp.git_of(None) is None and fp.git_of("") is None


@pytest.mark.parametrize("ref,want", [
    ("x.py::n", os.path.abspath("x.py")), ("x.py", os.path.abspath("x.py")),
    (f"a{os.sep}b::n", os.path.abspath(f"a{os.sep}b")),
    ("kladder.core.stats::x", os.path.abspath(fp.__file__.replace("fingerprint.py", "stats.py"))),
    ("no_such_module_q::x", None), ("no_such_pkg_q.sub::x", None),
])
def test_source_file_of_a_spec_reference(ref, want):
    assert source_file(ref) == want


def test_a_package_without_metadata_gives_its_modules_version(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "kl_vendored_q", types.SimpleNamespace(__version__="1.2.3"))
    assert fp._version("kl_vendored_q") == "1.2.3"
    monkeypatch.setitem(sys.modules, "kl_vendored_q", types.SimpleNamespace())
    assert fp._version("kl_vendored_q") is None
