"""Triton's interpreter (TRITON_INTERPRET=1: how Triton kernels run on the CPU) has defects of
its own, and a kernel that is right on the GPU must not be blamed for them. Measured on Triton
3.9: bfloat16 arithmetic works on the raw uint16 bits (2 * 1.5 gives 0.0), float32 -> bfloat16
truncates where a GPU rounds to nearest, libdevice calls return None (an InterpreterError);
Triton 3.6 with numpy 2.x raises TypeError('only 0-dimensional arrays can be converted to
Python scalars') in any `for start in range(0, N, BLOCK)` loop.

A worker probes the interpreter once (`probe`: five tiny kernels, run/interpreter_probes.py)
and keeps what it got wrong, with the evidence. Each kernel call runs under `watch`, which
records the defective features the call touched (the interpreter's builder ops on bfloat16
operands, float32 -> bfloat16 and fp8 casts). Then (run/trial.py, run/faults.py):
- a call that touched a feature whose results are garbage (bfloat16 arithmetic, a broken fp8
  cast) is not judged on the CPU, whatever its values: never FAILED, never passed;
- a failure a truncating float32 -> bfloat16 conversion can explain (one ulp more) is not
  judged either; one past it is the kernel's;
- an exception the probe saw too (a libdevice call, a runtime loop), and any InterpreterError,
  is the interpreter's, reported with its message.
Nothing here runs on a GPU: `watch` and `probe` do nothing unless the interpreter is on."""
from __future__ import annotations

import contextlib
import functools
import os
import sys

BF16_ARITHMETIC = "bf16_arithmetic"
BF16_ROUNDING = "bf16_rounding"
FP8_CAST = "fp8_cast"
LIBDEVICE = "libdevice"
RUNTIME_LOOP = "runtime_loop"
GARBAGE = (BF16_ARITHMETIC, FP8_CAST)          # a point that touches one of these is never judged
RAISING = (LIBDEVICE, RUNTIME_LOOP)            # these show as an exception the probe saw too
_BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert")

def on() -> bool:
    """Triton runs its kernels under the interpreter in this process. The one read of
    TRITON_INTERPRET in kladder's run side: the worker that sets up a point (run/trial.py) asks
    once and passes the answer down (Harness, Judge, the rung-5 Differ); Triton itself read it
    when it was first imported, so it does not change during a process."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def active() -> bool:
    """Triton kernels run under the interpreter in this process: the interpreter is on and
    Triton is imported (by the spec's kernels; a spec of torch ops never pays for a probe)."""
    return on() and "triton" in sys.modules


@functools.cache
def probe() -> dict[str, dict]:
    """{feature: evidence} for every feature the interpreter gets wrong here: probed once for a
    given Triton, numpy and Python, and kept in the user's cache (a worker starts in ~1 ms, not
    the probe's ~0.7 s: every A-B-A point starts a worker)."""
    return _cached_probe() if active() else {}


_options_seen = False         # without_dead_checks looked at the interpreter's options in this process


def without_dead_checks() -> bool:
    """Triton's interpreter computes an overflow check for every integer add, sub and mul a
    kernel does (`sanitize_overflow`, on by default: the operands widened to int64, the result
    compared with the type's bounds) and hands it to device_assert, which drops it unless the
    interpreter's options say debug, and the interpreter has no switch that sets debug. Work
    whose result nothing reads: 38% of compounding_bias's interpreter time, a kernel that
    rounds float32 to bfloat16 on the bits (measured with cProfile, 2026-12-07). A GPU compiles
    the same check out where debug is off. Turned off once a process where debug is off: the
    kernel's values and exceptions are the same. Returns whether it was turned off now. Called
    before every interpreted call (watch): until Triton is imported (a launcher may import it at
    its first call) it does nothing and looks again next time."""
    global _options_seen
    if _options_seen or not active():
        return False
    _options_seen = True
    import dataclasses

    from triton.runtime import interpreter as ti
    builder = getattr(ti, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if not dataclasses.is_dataclass(options) or getattr(options, "debug", True) \
            or not getattr(options, "sanitize_overflow", False):
        return False
    builder.options = dataclasses.replace(options, sanitize_overflow=False)
    return True


_lang_seen = False            # patch_lang_once looked at the interpreter's language patch in this process


def patch_lang_once() -> bool:
    """Triton's interpreter patches triton.language at every kernel launch (every builtin of
    tl, tl.core, tl.tensor and tl.math, found by inspect.getmembers, then the range, the dtypes,
    the reductions; restored when the launch ends), and patches it all again at every call of a
    @triton.jit helper inside the kernel, while the launch's patch still holds (the helper's own
    patch finds the builtins already replaced and is never restored). Work whose result is the
    state the language is already in: a third of decode_group16's interpreter time, a kernel
    that calls helpers in its loop (`_patch_builtin` 2.2 of 6.5 s, cProfile, 2026-12-07). A
    call (a helper's, in practice) whose modules are patched already (their `load` no builtin:
    the launch's patch replaced it) now skips it; a module the launch did not patch (a helper
    importing triton.language where the kernel imported triton.language.core) is patched as
    before. Installed once a process, where the interpreter is on; called before every
    interpreted call (watch) and by the worker. Returns whether it was installed now."""
    global _lang_seen
    if _lang_seen or not active():
        return False
    _lang_seen = True
    import inspect

    from triton.runtime import interpreter as ti
    original, scope_type = getattr(ti, "_patch_lang", None), getattr(ti, "_LangPatchScope", None)
    tl = getattr(ti, "tl", None)
    is_builtin = getattr(getattr(tl, "core", None), "is_builtin", None)
    if not callable(original) or scope_type is None or is_builtin is None or getattr(original, "kladder", False):
        return False

    def patched_already(fn) -> bool:
        langs = [v for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)]
        return bool(langs) and all(hasattr(m, "load") and not is_builtin(m.load) for m in langs)

    def _patch_lang(fn):
        if patched_already(fn):
            return scope_type()                # nothing patched here, nothing to restore
        return original(fn)
    _patch_lang.kladder, _patch_lang.original = True, original
    ti._patch_lang = _patch_lang
    return True


def trim() -> None:
    """The interpreter's work whose result nothing reads, left out from here on in this process:
    its dead overflow checks (without_dead_checks) and its language patched again at every
    helper's call (patch_lang_once). Each looks once a process, and again later where Triton is
    not imported yet."""
    without_dead_checks()
    patch_lang_once()


def _cache_path() -> str:
    import numpy
    import triton
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = f"triton-{triton.__version__}-numpy-{numpy.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return os.path.join(root, "kladder", f"interpreter-probe-{key}.json")


def _cached_probe() -> dict[str, dict]:
    import json
    import tempfile
    try:
        path = _cache_path()
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    found = run_probes()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            json.dump(found, f)
        os.replace(tmp, path)                      # atomic: a worker never reads half a file
    except OSError:
        pass                                       # no cache here: each process probes for itself
    return found


def run_probes() -> dict[str, dict]:
    import torch
    try:
        from . import interpreter_probes as k
    except Exception:  # noqa: BLE001 - Triton without an interpreter we can drive: nothing to name
        return {}
    found = {}
    for feature, run in ((BF16_ARITHMETIC, _bf16_arithmetic), (BF16_ROUNDING, _bf16_rounding), (FP8_CAST, _fp8_cast),
                         (LIBDEVICE, _libdevice), (RUNTIME_LOOP, _runtime_loop)):
        try:
            evidence = run(k, torch)
        except Exception as e:  # noqa: BLE001 - the probe's kernel raised: that is the evidence
            evidence = {"error": type(e).__name__, "text": str(e).strip().splitlines()[0][:300] if str(e).strip() else ""}
        if evidence:
            found[feature] = evidence
    return found


def _values(x, got, want, what: str) -> dict | None:
    if [float(v) for v in got] == [float(v) for v in want]:
        return None
    return {"what": what, "x": [float(v) for v in x], "got": [float(v) for v in got], "want": [float(v) for v in want]}


def _bf16_arithmetic(k, torch):
    x = torch.tensor([1.5, 3.0, -2.25], dtype=torch.bfloat16)
    y = torch.empty_like(x)
    k.double[(1,)](x, y, 3, BLOCK=4)
    return _values(x, y, 2 * x, "2 * x in bfloat16")


def _bf16_rounding(k, torch):
    x = torch.tensor([1 + 2 ** -8 + 2 ** -10, -(1 + 2 ** -8 + 2 ** -10)], dtype=torch.float32)
    y = torch.empty(2, dtype=torch.bfloat16)
    k.to_bfloat16[(1,)](x, y, 2, BLOCK=2)
    return _values(x, y, x.to(torch.bfloat16), "float32 -> bfloat16")


def _fp8_cast(k, torch):
    if not hasattr(torch, "float8_e4m3fn"):
        return None
    x = torch.tensor([1.1, 300.0, -0.3, 0.013], dtype=torch.float32)
    y = torch.empty_like(x)
    k.through_fp8[(1,)](x, y, 4, BLOCK=4)
    return _values(x, y, x.to(torch.float8_e4m3fn).to(torch.float32), "float32 -> float8e4nv -> float32")


def _libdevice(k, torch):
    x = torch.tensor([0.0, 1.0, -1.0, 2.0])
    y = torch.empty_like(x)
    k.libdevice_exp[(1,)](x, y, 4, BLOCK=4)
    return _values(x, y, x.exp(), "libdevice.exp(x)") if not torch.allclose(y, x.exp()) else None


def _runtime_loop(k, torch):
    x = torch.arange(10, dtype=torch.float32)
    y = torch.empty(1)
    k.loop_sum[(1,)](x, y, 10, BLOCK=4)
    return _values([45.0], y, [45.0], "sum over `for start in range(0, N, BLOCK)`")


# ---------------------------------------------------------------------------- watching a call
def _bf16(h, tl) -> bool:
    return getattr(getattr(h, "dtype", None), "scalar", None) == tl.bfloat16


def _fp8(dt) -> bool:
    dt = getattr(dt, "scalar", dt)
    return bool(getattr(dt, "is_fp8", lambda: False)())


@contextlib.contextmanager
def watch():
    """Records, in the set it yields, the defective features (those `probe` found) that the
    kernels launched inside touched. Does nothing when the interpreter is off or sound."""
    seen: set[str] = set()
    trim()
    defects = probe() if active() else {}
    silent = {f for f in defects if f in (BF16_ARITHMETIC, BF16_ROUNDING, FP8_CAST)}
    if not silent:
        yield seen
        return
    import triton.language as tl
    from triton.runtime import interpreter as ti
    builder = ti.InterpreterBuilder

    def arith(*hs, op=None):
        if (BF16_ARITHMETIC in silent and any(_bf16(h, tl) for h in hs)
                and getattr(op, "__name__", "") not in _BITWISE):
            seen.add(BF16_ARITHMETIC)

    def cast(src, dst):
        if BF16_ROUNDING in silent and src.dtype.scalar == tl.float32 and getattr(dst, "scalar", dst) == tl.bfloat16:
            seen.add(BF16_ROUNDING)
        if FP8_CAST in silent and (_fp8(src.dtype) or _fp8(dst)):
            seen.add(FP8_CAST)

    hooks = {
        "binary_op": lambda self, lhs, rhs, op, *a: arith(lhs, rhs, op=op),
        "unary_op": lambda self, arg, op, *a: arith(arg, op=op),
        "create_dot": lambda self, a, b, *rest: arith(a, b),
        "create_fma": lambda self, x, y, z, *a: arith(x, y, z),
        "create_rsqrt": lambda self, arg, *a: arith(arg),
        "create_erf": lambda self, arg, *a: arith(arg),
        "cast_impl": lambda self, src, dst, *a: cast(src, dst),
        "create_fp_to_fp": lambda self, src, dst, *a: cast(src, dst),
    }
    saved = {}
    for name, hook in hooks.items():
        original = builder.__dict__.get(name)
        if original is None:
            continue
        saved[name] = original
        setattr(builder, name, _hooked(original, hook))
    try:
        yield seen
    finally:
        for name, original in saved.items():
            setattr(builder, name, original)


def _hooked(original, hook):
    def method(self, *args, **kwargs):
        hook(self, *args)
        return original(self, *args, **kwargs)
    return method


# ---------------------------------------------------------------------------- what it means
def garbage(touched: set[str]) -> tuple[str, dict] | None:
    """(feature, evidence) of a garbage-producing defect the point's calls touched."""
    found = probe()
    for f in GARBAGE:
        if f in touched and f in found:
            return f, found[f]
    return None


def rounding_touched(touched: set[str]) -> dict | None:
    """The probe's evidence when the calls converted float32 to bfloat16 on an interpreter that
    truncates: failures within one bfloat16 ulp more are the interpreter's."""
    return probe().get(BF16_ROUNDING) if BF16_ROUNDING in touched else None


def explains(e: BaseException) -> tuple[str, dict] | None:
    """(feature, facts) when an exception of the kernel's is the interpreter's: any
    InterpreterError, or the exception a probe raised too."""
    if not active():
        return None
    text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
    for f in RAISING:
        ev = probe().get(f)
        if ev and ev.get("error") == type(e).__name__ and ev.get("text") == text:
            return f, {"error": type(e).__name__, "text": text, "probe": f}
    if type(e).__name__ == "InterpreterError":
        return "interpreter_error", {"error": type(e).__name__, "text": text}
    return None
