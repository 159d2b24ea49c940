"""The environment a climb ran in, as data: a kernel is correct only as the code its toolchain
emits, in the build the engine runs, so every report says which build
that was. Python, torch (and the CUDA or ROCm it was built for), Triton, the driver, the live
device's name and capability, kladder's version, the git commit of the spec's repository, and
the environment variables that steer compilation. A build target named in the environment
(TORCH_CUDA_ARCH_LIST, PYTORCH_ROCM_ARCH, GPU_ARCHS, ...) that the live device is not gets a
warning: dispatch must follow the device, not the build (aiter #6348's guard read GPU_ARCHS).

Cheap: versions come from the installed packages' metadata, the device from torch only where
CUDA is already initialised (the worker's, never the parent's), git in two short commands."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import subprocess
import sys

from .notation import SpecRef
from ..version import __version__

STEERING_PREFIXES = ("TRITON_", "PYTORCH_", "CUDA_", "TORCHINDUCTOR_", "TORCH_COMPILE_", "HIP_", "ROCM_", "HSA_")
STEERING_NAMES = ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS", "GPU_ARCHS", "AMDGPU_TARGETS", "HCC_AMDGPU_TARGET",
                  "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "LD_LIBRARY_PATH")
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "KEY")
CUDA_TARGETS = ("TORCH_CUDA_ARCH_LIST", "CUDAARCHS")
ROCM_TARGETS = ("PYTORCH_ROCM_ARCH", "GPU_ARCHS", "AMDGPU_TARGETS", "HCC_AMDGPU_TARGET")


def fingerprint(spec_file: str | None = None, device: str | None = None, env=None) -> dict:
    """The environment as a JSON-ready dict; `warnings` lists build targets the live device is not."""
    env = os.environ if env is None else env
    torch = sys.modules.get("torch")
    live = _device(torch, device)
    steering = steering_env(env)
    return {"python": platform.python_version(), "platform": platform.platform(terse=True),
            "torch": _version("torch"), "cuda": getattr(getattr(torch, "version", None), "cuda", None),
            "rocm": getattr(getattr(torch, "version", None), "hip", None), "triton": _version("triton"),
            "driver": driver_version(torch, live), "device": live, "kladder": __version__, "git": git_of(spec_file),
            "env": steering, "warnings": target_warnings(live, steering)}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return getattr(sys.modules.get(package), "__version__", None)


def _device(torch, device: str | None) -> dict | None:
    if device == "cpu":
        return {"kind": "cpu", "name": platform.machine() or "cpu", "capability": None, "arch": None, "count": 0}
    if device != "cuda" or torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    gcn = getattr(props, "gcnArchName", "") or ""
    return {"kind": "rocm" if torch.version.hip else "cuda", "name": props.name,
            "capability": f"{props.major}.{props.minor}", "arch": gcn.split(":")[0] if gcn else f"sm_{props.major}{props.minor}",
            "count": torch.cuda.device_count()}


def driver_version(torch, live: dict | None) -> str | None:
    """The kernel driver's version (NVIDIA, AMD), else the CUDA driver API's as torch reports it."""
    for path, pattern in (("/proc/driver/nvidia/version", r"Kernel Module\s+([\d.]+)"), ("/sys/module/amdgpu/version", r"(\S+)")):
        try:
            with open(path) as f:
                m = re.search(pattern, f.read())
            if m:
                return m.group(1)
        except OSError:
            continue
    if live and live["kind"] == "cuda":
        try:
            v = torch._C._cuda_getDriverVersion()     # e.g. 12080: the CUDA version the driver supports
            return f"CUDA {v // 1000}.{v % 1000 // 10}"
        except (AttributeError, RuntimeError):
            return None
    return None


def steering_env(env) -> dict[str, str]:
    """The environment variables that steer compilation and dispatch; secrets masked."""
    out = {}
    for k in sorted(env):
        if k.startswith(STEERING_PREFIXES) or k in STEERING_NAMES:
            out[k] = "***" if any(w in k.upper() for w in SECRET_WORDS) else env[k]
    return out


def source_file(ref: str) -> str | None:
    """The file a spec reference names ('path.py::name', or 'package.module::name')."""
    target = SpecRef.parse(ref).target
    if target.endswith(".py") or os.sep in target:
        return os.path.abspath(target)
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return None
    return found.origin if found else None


def git_of(path: str | None) -> dict | None:
    """The commit of the git repository holding `path`, and whether its tracked files changed."""
    if not path:
        return None
    where = path if os.path.isdir(path) else os.path.dirname(path)
    try:
        head = subprocess.run(["git", "-C", where, "rev-parse", "--show-toplevel", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0:
            return None
        top, commit = head.stdout.split()[:2]
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return {"repo": top, "commit": commit, "dirty": bool(dirty.stdout.strip())}


ARCH_NAMES = {"volta": {"7.0"}, "turing": {"7.5"}, "ampere": {"8.0", "8.6"}, "ada": {"8.9"}, "hopper": {"9.0"},
              "blackwell": {"10.0", "12.0"}}


def _cuda_targets(value: str) -> set[str] | None:
    """'8.0;9.0a+PTX' or CMake's '80;90' -> {'8.0', '9.0'}; None for 'all' (every target)."""
    out = set()
    for part in re.split(r"[;,\s]+", value.strip()):
        if part.lower() in ("all", "all-major", "native"):
            return None
        out |= ARCH_NAMES.get(part.split("+")[0].lower(), set())
        m = re.match(r"(?:sm_|compute_)?(\d+)\.?(\d)?", part)
        if m:
            major, minor = (m.group(1), m.group(2)) if m.group(2) else (m.group(1)[:-1], m.group(1)[-1])
            if major:
                out.add(f"{int(major)}.{minor}")
    return out


def target_warnings(live: dict | None, env: dict[str, str]) -> list[dict]:
    """Each build target named in the environment that the live device is not."""
    if not live or live["kind"] == "cpu":
        return []
    out = []
    if live["kind"] == "cuda":
        for var in CUDA_TARGETS:
            named = _cuda_targets(env.get(var, ""))
            if env.get(var) and named is not None and live["capability"] not in named:
                out.append({"var": var, "value": env[var], "device": live["capability"], "name": live["name"]})
    else:
        for var in ROCM_TARGETS:
            named = {t.split(":")[0] for t in re.split(r"[;,\s]+", env.get(var, "").strip()) if t}
            if named and live["arch"] not in named:
                out.append({"var": var, "value": env[var], "device": live["arch"], "name": live["name"]})
    return out
