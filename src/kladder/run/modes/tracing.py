"""What a call ran, seen from inside the process: the Python functions it called (a
sys.setprofile tracer), the Triton kernels it launched with the values that decide their code
(JITFunction.run / the interpreter's InterpretedFunction.run, wrapped while active), and on
CUDA the GPU kernels the profiler records. Reference independence (rung 3) and the toolchain
modes (rung 7: dispatch, flags, imports) read these; nothing here judges.

A launch's `code` names the code object it ran. On a GPU it is the digest of the binary Triton
compiled (cubin / hsaco): two launches with the same digest ran the same machine code. Under
Triton's interpreter nothing is compiled, so `code` models what decides Triton's binary: the
kernel's source and that of the functions it calls (JITFunction.cache_key), the constexprs its
source reads, how its other arguments specialise (pointer dtypes, integers equal to 1 or
divisible by 16) and the launch options (num_warps, num_stages, ...). A constexpr the kernel
never reads changes no binary, so it changes no `code` either."""
from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
import sys
import textwrap
from dataclasses import dataclass, field


def is_machinery(filename: str) -> bool:
    """Code that is neither the kernel's nor the reference's: torch, triton, numpy, kladder's
    machinery (not its zoo), the standard library."""
    f = filename.replace(os.sep, "/")
    if "/kladder/" in f and "/kladder/zoo/" not in f:
        return True
    return any(part in f for part in ("/torch/", "/triton/", "/numpy/", "/scipy/", "/python3.", "<frozen", "<string>"))


class Tracer:
    """The Python functions called while active (code object -> 'name (file:line)'), and
    which of them the Triton interpreter ran as kernel bodies. With `op` (the name of a torch
    op: torch_op_name), also each call of a torch callable of that name (torch.sin, Tensor.sin,
    torch.ops.aten.sin, a Python function of torch's such as F.softmax), in `op_calls`."""

    def __init__(self, op: str | None = None):
        self.called: dict = {}
        self.kernels: set = set()
        self.op = op
        self.op_calls: list[str] = []

    def __call__(self, frame, event, arg):
        if self.op is not None and event in ("call", "c_call"):
            self._op_call(frame, event, arg)
        if event != "call":
            return
        code = frame.f_code
        if is_machinery(code.co_filename):
            return
        self.called[code] = f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
        caller = frame.f_back
        if caller is not None and "/triton/" in caller.f_code.co_filename.replace(os.sep, "/"):
            self.kernels.add(code)

    def _op_call(self, frame, event, arg) -> None:
        """A call of the torch op `self.op`, however it is reached (its builtin, a Tensor method,
        torch.ops, or torch's own Python function of that name)."""
        if event == "c_call":
            name = getattr(arg, "__name__", None)
            if name == self.op and _torch_owned(arg):
                self.op_calls.append(f"torch {name}")
        elif frame.f_code.co_name in (self.op, "__call__"):
            f = frame.f_code.co_filename.replace(os.sep, "/")
            if "/torch/" not in f:
                return
            me = frame.f_locals.get("self") if frame.f_code.co_name == "__call__" else None
            if frame.f_code.co_name == self.op or (me is not None and torch_op_name(me) == self.op):
                self.op_calls.append(f"torch {self.op}")

    def functions(self) -> list[str]:
        """The qualified names of the functions called, in the order first called."""
        seen: dict[str, None] = {}
        for code in self.called:
            if not code.co_name.startswith("<"):         # <module>, <listcomp>, <lambda>: no name to expect
                seen.setdefault(getattr(code, "co_qualname", code.co_name), None)
        return list(seen)

    def __enter__(self):
        self._old = sys.getprofile()
        sys.setprofile(self)
        return self

    def __exit__(self, *exc):
        sys.setprofile(self._old)


def _torch_owned(fn) -> bool:
    """A callable torch itself ships: a builtin of a torch module, or a method of a tensor."""
    import torch
    owner = getattr(fn, "__self__", None)
    return (getattr(fn, "__module__", None) or "").startswith("torch") or isinstance(owner, torch.Tensor) or (
        isinstance(owner, type) and owner.__module__.startswith("torch"))


def torch_op_name(fn) -> str | None:
    """The op's name when `fn` is itself a torch op (torch.sin, F.gelu, F.softmax, Tensor.sin,
    torch.ops.aten.sin.default, a functools.partial of one), else None: what the launcher under
    test then owns is torch's op itself."""
    import functools

    import torch
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return fn._qualified_op_name.rpartition("::")[2] if hasattr(fn, "_qualified_op_name") else \
            fn.name().rpartition("::")[2]
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    code = getattr(fn, "__code__", None)
    if code is not None:
        return name if "/torch/" in code.co_filename.replace(os.sep, "/") else None
    objclass = getattr(fn, "__objclass__", None)
    if objclass is not None:
        return name if objclass.__module__.startswith("torch") else None
    return name if _torch_owned(fn) else None


def gpu_kernels(fn, owners: bool = False) -> dict[str, str]:
    """The GPU kernels the profiler records while `fn` runs (CUDA only): name -> with `owners`
    the op that launched it ('aten::bincount': torch's), or '' when no op did (a Triton launch,
    an extension's own launch: the caller's code); without, '' for every kernel (the CPU's ops
    are not recorded)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if owners else [ProfilerActivity.CUDA]
    with profile(activities=activities) as prof:
        fn()
        torch.cuda.synchronize()
    events = prof.events()
    found = {e.name: "" for e in events if getattr(e, "device_type", None) is not None
             and "cuda" in str(e.device_type).lower()}
    for e in events:                    # an op's kernels: those launched while it was the innermost op
        for k in getattr(e, "kernels", None) or ():
            if k.name in found and e.name != k.name and not found[k.name]:
                found[k.name] = e.name
    return found


# ---------------------------------------------------------------------------- Triton launches
@dataclass
class Launch:
    """One Triton launch: the kernel's name, its constexprs and launch options as given, the
    code it ran (see the module docstring), how that was known, and the digests of the
    compiled assembly (GPU only: ptx, cubin, ...)."""
    name: str
    params: dict
    code: str
    how: str                        # "binary" (a compiled kernel's bytes) | "source" (the interpreter's model)
    asm: dict = field(default_factory=dict)
    fn: object = field(default=None, repr=False, compare=False)     # the @triton.jit object (not serialised)

    def to_dict(self) -> dict:
        return {"name": self.name, "params": self.params, "code": self.code, "how": self.how, "asm": self.asm}


class Launches:
    """Every Triton kernel launched while active, in order (autotuner and heuristics wrappers
    reach the same JITFunction.run, so their launches are seen too; warm-ups are not launches)."""

    def __init__(self):
        self.seen: list[Launch] = []
        self._patched: list = []

    def __enter__(self):
        for cls in _launch_classes():
            self._patch(cls)
        return self

    def _patch(self, cls) -> None:
        original = cls.run
        seen = self.seen

        def run(fn_self, *args, grid, warmup, **kwargs):
            result = original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            if not warmup:
                seen.append(launch_of(fn_self, args, kwargs, result))
            return result

        cls.run = run
        self._patched.append((cls, original))

    def __exit__(self, *exc):
        for cls, original in reversed(self._patched):
            cls.run = original
        self._patched.clear()


def _launch_classes() -> list:
    """The classes whose .run launches a Triton kernel, if this process uses Triton at all."""
    if "triton" not in sys.modules:
        return []
    out = []
    try:
        from triton.runtime.jit import JITFunction
        out.append(JITFunction)
    except ImportError:
        pass
    try:
        from triton.runtime.interpreter import InterpretedFunction
        out.append(InterpretedFunction)
    except ImportError:
        pass
    return out


def launch_of(fn_obj, args: tuple, kwargs: dict, result) -> Launch:
    fn = fn_obj.fn
    names = list(inspect.signature(fn).parameters)
    bound = _bound(fn, args, kwargs)
    constexprs = [n for n in names if _is_constexpr(fn, n)]
    options = {k: plain(v) for k, v in kwargs.items() if k not in names}
    params = {**{n: plain(bound[n]) for n in constexprs if n in bound}, **options}
    asm = _asm_digests(result)
    binary = _binary_digest(result)
    if binary:
        code, how = binary, "binary"
    else:
        code, how = _source_identity(fn, bound, names, constexprs, options), "source"
    return Launch(fn.__name__, params, code, how, asm, fn_obj)


def _bound(fn, args, kwargs) -> dict:
    sig = inspect.signature(fn)
    known = {k: v for k, v in kwargs.items() if k in sig.parameters}
    try:
        b = sig.bind_partial(*args, **known)
    except TypeError:
        return dict(zip(sig.parameters, args, strict=False))
    b.apply_defaults()
    return dict(b.arguments)


def _is_constexpr(fn, name: str) -> bool:
    ann = getattr(fn, "__annotations__", {}).get(name)
    if ann is None:
        return False
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann))
    return text.split(".")[-1] == "constexpr"


def plain(v):
    """A value as JSON holds it: constexprs unwrapped, dtypes and other objects by their repr."""
    v = getattr(v, "value", v) if type(v).__name__ == "constexpr" else v
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else repr(v)
    return repr(v)[:80]


def _specialize(v) -> str:
    """How Triton specialises a non-constexpr argument: pointers by dtype, integers equal to 1
    or divisible by 16 (the alignment the compiler may assume), others by kind."""
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
        return f"*{v.dtype}"
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        return "1" if v == 1 else "i%16" if v % 16 == 0 else "i32" if -2**31 <= v < 2**31 else "i64"
    if isinstance(v, float):
        return "fp32"
    return "none" if v is None else type(v).__name__


@functools.cache
def _source_key(fn) -> str:
    """The digest of the kernel's source and its callees' (Triton's own JIT cache key)."""
    try:
        from triton.runtime.jit import JITFunction
        return JITFunction(fn).cache_key
    except Exception:  # noqa: BLE001 - no Triton front end here: the source alone
        try:
            return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()
        except (OSError, TypeError):
            return f"{fn.__module__}.{fn.__qualname__}"


@functools.cache
def used_names(fn) -> frozenset[str]:
    """The names the kernel's body reads: a constexpr it never reads cannot change its code."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        body = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        return frozenset(n.id for stmt in body.body for n in ast.walk(stmt) if isinstance(n, ast.Name))
    except (OSError, TypeError, SyntaxError, StopIteration):
        return frozenset(inspect.signature(fn).parameters)       # unknown: every parameter counts


def _source_identity(fn, bound: dict, names: list, constexprs: list, options: dict) -> str:
    used = used_names(fn)
    consts = {n: plain(bound.get(n)) for n in constexprs if n in used}
    spec = [_specialize(bound.get(n)) for n in names if n not in constexprs]
    text = json.dumps([fn.__module__, fn.__qualname__, _source_key(fn), consts, spec, options], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _binary_digest(result) -> str:
    """The digest of a compiled kernel's binary (cubin on NVIDIA, hsaco on AMD), or ''."""
    blob = getattr(result, "kernel", None)
    if isinstance(blob, (bytes, bytearray)):
        return hashlib.sha256(blob).hexdigest()[:32]
    return ""


def _asm_digests(result) -> dict:
    """Digests of the compiled kernel's assembly, by kind (ptx, cubin, amdgcn, hsaco)."""
    asm = getattr(result, "asm", None)
    out = {}
    if asm is None:
        return out
    for ext in ("ptx", "cubin", "amdgcn", "hsaco"):
        try:
            text = asm[ext]
        except Exception:  # noqa: BLE001 - an assembly this backend does not make
            continue
        blob = text.encode() if isinstance(text, str) else bytes(text)
        out[ext] = hashlib.sha256(blob).hexdigest()[:16]
    return out


def traced_call(h, prep, label: str = ""):
    """One call of the kernel under the tracer and the launch recorder (and on CUDA the
    profiler): (what it returned, base.Ran)."""
    from .base import Ran
    gpu: set[str] = set()
    with Tracer() as t, Launches() as launched:
        if h.device == "cuda":
            box = []
            gpu = set(gpu_kernels(lambda: box.append(h.call(prep, label))))
            returned = box[0]
        else:
            returned = h.call(prep, label)
    return returned, Ran([x.to_dict() for x in launched.seen], sorted(gpu), t.functions(), label)
