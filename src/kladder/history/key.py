"""The key of an outcome: everything that decides it, as one digest (history/outcomes.py keeps
outcomes under it and reuses a passed one whose key a later climb computes again).

A point's key is the digest of:
- the point itself (its JSON: dims, dtypes, config, mode, seed, values, layouts, plan, ...);
- the spec's declarations, every field in a canonical serialisation (dicts in their declared
  order, floats by repr, dataclasses by their fields, callables by their code); of `dims` only
  what a point's run reads (each dim's name, tiles and chunks: the words of a pattern, the rows a
  big point checks, chunk lengths), of `configs` only the declared config the point's call is
  (Spec.config_of: its keywords and tolerance) and its partner's: a dim's range, widths and
  sizes and the other configs choose which points exist, not how one runs;
- the kernel's code and the reference's (`code`, below);
- the toolchain and the device: torch, Triton, CUDA/ROCm, the driver, Python, the device's
  name, capability and count (from a worker's fingerprint on CUDA);
- kladder's version and a digest of its own source files (a check that changes changes verdicts);
- the environment variables the fingerprint lists (fingerprint.steering_env; not those that only
  say where a cache goes: WHERE_ONLY) and those the spec names (kl.Flag(env=...),
  kl.Expect(when={"$VAR": ...}));
- the climb's options that decide a verdict: the device and --timeout.

A callable's code (`code`): a Python function by its code object (bytecode, constants, names,
nested code; never its id), its defaults and closure values (each serialised the same way), its
qualified name and the *code closure* of its module: that module's source file, and every file
it imports (anywhere in it, inside functions too) or holds an object of, transitively, within
the same top-level package or the same folder (never site-packages or the standard library;
never kladder's own files, which kladder's digest covers), each by its bytes; a compiled
extension (.so) in it by its size and modification time; CUDA/C++ sources (.cu, .cuh, .cpp, .h,
...) in those folders by their bytes; the installed distribution's version where the module is
installed. Every Triton kernel found in those modules (a JITFunction, an autotuner's configs, a
heuristic's functions) adds its own source (`.src`) and its configs, so a kernel made with
`exec` from a string at import is covered. A torch op or another builtin: its module, name and
its package's version.

Not covered (docs/cli.md, "The outcome store"): a kernel built from a string *at call time* from a file
or a value the modules do not hold, code read from files other than those above, environment
variables neither the fingerprint nor the spec names, data files a launcher reads. Where a part
cannot be computed soundly (a callable with no source file, an object with nothing but an
address to serialise), the key is None with one line saying why, and nothing is reused.

`TOOLCHAIN` is the seam the tests use to fake another toolchain (a function of the
fingerprint)."""
from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import hashlib
import importlib.util
import json
import math
import os
import sys
import sysconfig
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

FORMAT = 1                  # bumped when what a key covers changes: every key before it misses
NATIVE = (".so", ".pyd", ".dylib")
SOURCES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hip", ".ptx")
TENSOR_BYTES = 256 << 20     # tensors held by a spec or a closure are hashed whole up to this much in all
DEPTH = 40                   # nesting of objects serialised (a cycle or a deep graph beyond it: not keyed)


class Unsound(Exception):
    """A part of the key cannot be computed soundly: its one-line reason."""


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else json.dumps(p, sort_keys=True, default=str, allow_nan=True).encode())
        h.update(b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------- the toolchain
def toolchain_of(fp: dict) -> dict:
    """What compiles and runs the kernel, from a fingerprint (kladder.core.fingerprint)."""
    dev = fp.get("device") if isinstance(fp.get("device"), dict) else {}
    return {"torch": fp.get("torch"), "triton": fp.get("triton"), "cuda": fp.get("cuda"), "rocm": fp.get("rocm"),
            "driver": fp.get("driver"), "python": fp.get("python"), "device": dev.get("name"),
            "capability": dev.get("capability"), "arch": dev.get("arch"), "count": dev.get("count")}


TOOLCHAIN: Callable[[dict], dict] = toolchain_of     # the seam: tests replace it to fake another toolchain


@functools.cache
def kladder_digest() -> str:
    """kladder's version and every file of the package (a change in a check changes verdicts; rung 8's
    model weights ship in it)."""
    from ..version import __version__
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256(f"{__version__}\0{FORMAT}".encode())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith((".pyc", ".pyo")):
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def _kladder_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# ---------------------------------------------------------------------------- files: the code closure
@functools.cache
def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots |= {p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)}
    return tuple(sorted(os.path.abspath(r) + os.sep for r in roots if r))


def _installed(path: str) -> bool:
    return path.startswith(_installed_roots()) or f"{os.sep}site-packages{os.sep}" in path \
        or f"{os.sep}dist-packages{os.sep}" in path


def _file_bytes(path: str) -> bytes:
    if path.endswith(NATIVE):
        st = os.stat(path)
        return f"native {st.st_size} {st.st_mtime_ns}".encode()
    with open(path, "rb") as f:
        return f.read()


@dataclass
class _Scope:
    """Which files belong to a callable's code: its module's top-level package, or its folder."""
    top: str                       # the module's top-level package name
    folder: str                    # the module's folder (with a trailing separator)
    installed: bool                # the module is installed (site-packages): its folder is not walked

    def holds(self, name: str | None, path: str | None) -> bool:
        if path is None:
            return False
        path = os.path.abspath(path)
        if path.startswith(_kladder_root()):
            return path.startswith(os.path.join(_kladder_root(), "zoo") + os.sep)   # kladder's digest covers the rest
        if name is not None and name.partition(".")[0] == self.top:
            return True
        return not self.installed and path.startswith(self.folder) and not _installed(path)


class Closure:
    """The files a callable's code is made of, found once per module (see the module docstring)."""

    def __init__(self):
        self._modules: dict[str, tuple[str, list]] = {}

    def of_module(self, mod: types.ModuleType) -> str:
        """The digest of a module's code closure."""
        name = mod.__name__
        if name not in self._modules:
            self._modules[name] = self._walk(mod)
        return self._modules[name][0]

    def _walk(self, start: types.ModuleType) -> tuple[str, list]:
        path = getattr(start, "__file__", None)
        if not path or not os.path.exists(path):
            raise Unsound(f"module {start.__name__!r} has no source file")
        path = os.path.abspath(path)
        scope = _Scope(start.__name__.partition(".")[0], os.path.dirname(path) + os.sep, _installed(path))
        files: dict[str, bytes] = {}
        kernels: list = []
        todo: list[tuple[str | None, str]] = [(start.__name__, path)]
        while todo:
            name, p = todo.pop()
            if p in files:
                continue
            files[p] = hashlib.sha256(_file_bytes(p)).digest()
            if p.endswith(".py"):
                todo += [t for t in _imports_of(name, p, scope) if t[1] not in files]
            mod = sys.modules.get(name) if name else None
            if mod is not None and getattr(mod, "__file__", None) and os.path.abspath(mod.__file__) == p:
                todo += [t for t in _held_by(mod, scope, kernels) if t[1] not in files]
        folders = sorted({os.path.dirname(p) for p in files if not _installed(p)})
        for folder in folders:
            for entry in sorted(os.listdir(folder)):
                full = os.path.join(folder, entry)
                if entry.endswith(SOURCES) and os.path.isfile(full):
                    files[full] = hashlib.sha256(_file_bytes(full)).digest()
        dist = _distribution(scope.top) if scope.installed else None
        digest = _digest(*[p.encode() + b"\0" + d for p, d in sorted(files.items())], dist, sorted(kernels))
        return digest, sorted(files)

    def files(self, mod: types.ModuleType) -> list[str]:
        self.of_module(mod)
        return self._modules[mod.__name__][1]


@functools.cache
def _distribution(top: str) -> str | None:
    """The installed distribution of a top-level package, name==version (its own name first: a
    scan of every distribution's files costs a second)."""
    import importlib.metadata
    try:
        return f"{top}=={importlib.metadata.version(top)}"
    except (importlib.metadata.PackageNotFoundError, ValueError):
        pass
    try:
        dists = importlib.metadata.packages_distributions().get(top) or []
        return ";".join(f"{d}=={importlib.metadata.version(d)}" for d in sorted(dists)) or None
    except Exception:  # noqa: BLE001 - no metadata: the module's name alone (its files, where it has them)
        return None


@functools.lru_cache(maxsize=4096)
def _parsed_imports(path: str, mtime_ns: int, size: int) -> tuple[tuple[int, str, tuple[str, ...]], ...]:
    """(level, module, names) of every import statement in a file, inside functions too."""
    with open(path, "rb") as f:
        try:
            tree = ast.parse(f.read(), path)
        except (SyntaxError, ValueError):
            return ()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(0, a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module or "", tuple(a.name for a in node.names)))
    return tuple(out)


def _imports_of(name: str | None, path: str, scope: _Scope) -> list[tuple[str | None, str]]:
    """The files in scope that a source file imports: modules of its package, files beside it."""
    st = os.stat(path)
    package = None
    if name is not None:
        package = name if os.path.basename(path) == "__init__.py" else name.rpartition(".")[0]
    found = []
    for level, module, names in _parsed_imports(path, st.st_mtime_ns, st.st_size):
        if level:
            if package is None:
                base = os.path.dirname(path)
                for _ in range(level - 1):
                    base = os.path.dirname(base)
                found += _beside(base, module, names)
                continue
            parts = package.split(".")
            base_name = ".".join(parts[: len(parts) - (level - 1)])
            module = f"{base_name}.{module}" if module else base_name
        candidates = [module] + [f"{module}.{n}" for n in names if n != "*"]
        whole = module.split(".")
        candidates += [".".join(whole[:i]) for i in range(1, len(whole))]
        for cand in candidates:
            hit = _locate(cand, scope)
            if hit is not None:
                found.append(hit)
        if not level and not scope.installed:       # a module beside the spec, imported by its own name (sys.path)
            found += _beside(scope.folder.rstrip(os.sep), module, names)
    return found


def _beside(folder: str, module: str, names: tuple) -> list[tuple[str | None, str]]:
    """A module imported by a file that is not in a package (a spec file's helpers beside it)."""
    out = []
    rel = module.replace(".", os.sep) if module else ""
    for stem in [rel] + ([os.path.join(rel, n) for n in names if n != "*"] if names else []):
        if not stem:
            continue
        for cand in (os.path.join(folder, stem + ".py"), os.path.join(folder, stem, "__init__.py")):
            if os.path.isfile(cand) and not _installed(os.path.abspath(cand)):
                out.append((None, os.path.abspath(cand)))
    return out


def _locate(name: str, scope: _Scope) -> tuple[str, str] | None:
    """(module name, file) of an importable module in scope, without importing anything outside it."""
    if not name or name.partition(".")[0] != scope.top:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None) if mod is not None else None
        return (name, os.path.abspath(f)) if f and scope.holds(name, f) else None
    mod = sys.modules.get(name)
    f = getattr(mod, "__file__", None) if mod is not None else None
    if f is None:
        try:
            found = importlib.util.find_spec(name)       # the package's own modules: its parents are imported already
        except (ImportError, ValueError, AttributeError):
            return None
        f = found.origin if found is not None and found.has_location else None
    return (name, os.path.abspath(f)) if f and scope.holds(name, f) and os.path.exists(f) else None


def _held_by(mod: types.ModuleType, scope: _Scope, kernels: list) -> list[tuple[str, str]]:
    """The modules in scope whose objects a module holds (a kernel imported from elsewhere in its
    package), and the source of every Triton kernel it holds (added to `kernels`)."""
    out = []
    for value in list(vars(mod).values()):
        if _is_kernel_interface(value):
            kernels.append(_digest(_triton(value, None)))
        target = value if isinstance(value, types.ModuleType) else sys.modules.get(_module_name(value) or "")
        f = getattr(target, "__file__", None) if target is not None else None
        if f and scope.holds(target.__name__, f):
            out.append((target.__name__, os.path.abspath(f)))
    return out


def _module_name(v) -> str | None:
    try:
        if _is_kernel_interface(v):
            return getattr(_innermost(v), "__module__", None)
        m = getattr(v, "__module__", None)
    except Exception:  # noqa: BLE001 - a proxy whose attributes raise: its type's module
        m = None
    return m if isinstance(m, str) else getattr(type(v), "__module__", None)


# ---------------------------------------------------------------------------- values: canonical serialisation
def _is_kernel_interface(v) -> bool:
    mod = sys.modules.get("triton.runtime.jit")
    return mod is not None and isinstance(v, mod.KernelInterface)


def _innermost(v):
    seen = 0
    while _is_kernel_interface(v) and hasattr(v, "fn") and seen < 16:
        v, seen = v.fn, seen + 1
    return v


def _triton(v, canon) -> list:
    """A Triton kernel as data: each wrapper's kind and what changes its code (a JIT function's
    source and options, an autotuner's configs and key, a heuristic's functions), down to its
    Python function."""
    layers = []
    seen = 0
    while _is_kernel_interface(v) and seen < 16:
        kind = type(v).__name__
        layer: dict[str, Any] = {"kind": kind}
        src = getattr(v, "src", None) or getattr(v, "_src", None)
        if isinstance(src, str):
            layer["src"] = src
        for attr in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline", "version"):
            if hasattr(v, attr) and isinstance(getattr(v, attr), (bool, int, str, list, tuple, type(None))):
                layer[attr] = list(getattr(v, attr)) if isinstance(getattr(v, attr), (list, tuple)) else getattr(v, attr)
        if hasattr(v, "configs") and isinstance(v.configs, (list, tuple)):
            layer["configs"] = [_config_dict(c) for c in v.configs]
            layer["key"] = list(getattr(v, "keys", None) or getattr(v, "key", None) or [])
        if canon is not None and isinstance(getattr(v, "values", None), Mapping):
            layer["values"] = canon(dict(v.values))
        layers.append(layer)
        v, seen = getattr(v, "fn", None), seen + 1
    if canon is not None and callable(v):
        layers.append(canon(v))
    elif isinstance(v, types.FunctionType):
        layers.append(_code_object(v.__code__))
    return layers


def _config_dict(c) -> Any:
    d = dict(vars(c)) if hasattr(c, "__dict__") else {"repr": repr(c)}
    return {k: (repr(v) if not isinstance(v, (int, float, str, bool, type(None), dict, list, tuple)) else v)
            for k, v in sorted(d.items()) if k not in ("pre_hook", "post_hook")}


def _code_object(co: types.CodeType) -> str:
    """A code object's digest, deterministic across processes (marshal is not: its reference flags
    follow refcounts): bytecode, names, constants (nested code by its own digest)."""
    consts = [_const(c) for c in co.co_consts]
    return _digest(co.co_code, list(co.co_names), list(co.co_varnames), list(co.co_freevars), list(co.co_cellvars),
                   co.co_name, getattr(co, "co_qualname", co.co_name), co.co_argcount, co.co_kwonlyargcount,
                   co.co_flags, consts)


def _const(c) -> Any:
    """A code object's constant, deterministically (a frozenset's repr follows the hash seed)."""
    if isinstance(c, types.CodeType):
        return ["code", _code_object(c)]
    if isinstance(c, frozenset):
        return ["frozenset", sorted(json.dumps(_const(x)) for x in c)]
    if isinstance(c, tuple):
        return ["tuple", [_const(x) for x in c]]
    return [type(c).__name__, repr(c)]


class Canon:
    """Values as canonical JSON-ready data; callables by their code.

    A Python function (not kladder's, not an installed package's) by its code object, defaults,
    closure values and every global it names (its code's names looked up in its globals, nested
    code included): a function by the same rule, a class by its members, a module of the
    user's by its code closure (`Closure`), an installed one by its distribution's version, a
    constant by its value. An installed package's function or class by its module, name and
    distribution's version; kladder's by its name (kladder's digest covers its code). `homes`
    collects the modules of the user's functions met (the kernel's part adds their closures)."""

    def __init__(self, closure: Closure | None = None):
        self.closure = closure or Closure()
        self.homes: set[str] = set()
        self._stack: list[int] = []
        self._memo: dict[int, Any] = {}
        self._keep: list = []                 # what the memo's ids point at stays alive while it is used
        self._tensor_bytes = 0

    def __call__(self, v: Any, where: str = "") -> Any:
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else ["float", repr(v)]
        if isinstance(v, enum.Enum):
            return ["enum", type(v).__name__, self(v.value, where)]
        if isinstance(v, bytes):
            return ["bytes", hashlib.sha256(v).hexdigest()]
        if id(v) in self._memo:
            return self._memo[id(v)]
        if id(v) in self._stack:
            return ["cycle", type(v).__qualname__]      # a recursive function, a class its methods name
        if len(self._stack) > DEPTH:
            raise Unsound(f"{where or 'a value'} nests too deep to be keyed")
        self._stack.append(id(v))
        try:
            out = self._compound(v, where)
        finally:
            self._stack.pop()
        if isinstance(v, (types.FunctionType, type)) or _is_kernel_interface(v):
            self._memo[id(v)] = out
            self._keep.append(v)
        return out

    def _compound(self, v: Any, where: str) -> Any:
        tname = f"{type(v).__module__}.{type(v).__qualname__}"
        if tname == "torch.dtype" or tname == "torch.device":
            return ["torch", str(v)]
        if tname in ("torch.Tensor", "torch.nn.parameter.Parameter"):
            return self._tensor(v, where)
        if _is_kernel_interface(v):
            return ["triton", _triton(v, lambda x: self(x, where))]
        if isinstance(v, types.ModuleType):
            return self._module_ref(v)
        if isinstance(v, Mapping):
            items = [[self(k, where), self(x, f"{where}[{k!r}]")] for k, x in v.items()]
            extra = {a: self(getattr(v, a), where) for a in getattr(v, "__slots__", ()) if hasattr(v, a) and not a.startswith("__")}
            return ["map", tname, items, extra] if extra else ["map", tname, items]
        if isinstance(v, (list, tuple)):
            return ["seq", type(v).__name__, [self(x, f"{where}[{i}]") for i, x in enumerate(v)]]
        if isinstance(v, (set, frozenset)):
            return ["set", sorted(json.dumps(self(x, where), sort_keys=True) for x in v)]
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return ["data", self._class(type(v), where),
                    [[f.name, self(getattr(v, f.name), f"{where}.{f.name}")] for f in dataclasses.fields(v)]]
        if isinstance(v, functools.partial):
            return ["partial", self(v.func, where), self(v.args, where), self(v.keywords, where)]
        if isinstance(v, types.MethodType):
            return ["method", self(v.__func__, where), self(v.__self__, where)]
        if isinstance(v, (staticmethod, classmethod)):
            return [type(v).__name__, self(v.__func__, where)]
        if isinstance(v, property):
            return ["property", self(v.fget, where), self(v.fset, where), self(v.fdel, where)]
        if isinstance(v, types.FunctionType):
            return self._function(v, where)
        if isinstance(v, type):
            return self._class(v, where)
        if isinstance(v, (types.BuiltinFunctionType, types.BuiltinMethodType)) or _is_op(v):
            return self._builtin(v, where)
        if isinstance(v, types.CodeType):
            return ["code", _code_object(v)]
        return self._object(v, where, tname)

    # ------------------------------------------------------------------ code
    def _owner(self, module_name: str | None) -> tuple[str, Any]:
        """("user", module) | ("kladder", name) | ("installed", distribution) | ("unknown", None)."""
        mod = sys.modules.get(module_name) if isinstance(module_name, str) else None
        f = getattr(mod, "__file__", None) if mod is not None else None
        if f is None:
            if module_name in sys.builtin_module_names or module_name == "builtins":
                return "installed", "python"
            return ("unknown", None) if mod is None else ("user", mod)
        f = os.path.abspath(f)
        if f.startswith(_kladder_root()) and not f.startswith(os.path.join(_kladder_root(), "zoo") + os.sep):
            return "kladder", module_name
        top = module_name.partition(".")[0]
        if top in sys.stdlib_module_names:
            return "installed", "python"                # the toolchain part holds Python's version
        if _installed(f):
            return "installed", _distribution(top) or module_name
        return "user", mod

    def _function(self, fn: types.FunctionType, where: str) -> Any:
        kind, owner = self._owner(fn.__module__)
        if kind in ("kladder", "installed"):
            return [kind, fn.__module__, fn.__qualname__, owner]
        if kind == "user" and getattr(owner, "__file__", None):
            self.homes.add(owner.__name__)
        closure = [self(c.cell_contents, f"{where} (closure of {fn.__qualname__})") if _filled(c) else ["empty"]
                   for c in (fn.__closure__ or ())]
        g = fn.__globals__
        named = [[n, self._named(g[n], f"{fn.__qualname__}: {n}")] for n in sorted(_names(fn.__code__)) if n in g]
        return ["function", fn.__module__, fn.__qualname__, _code_object(fn.__code__), self(fn.__defaults__, where),
                self(fn.__kwdefaults__, where), closure, named]

    def _named(self, v: Any, where: str) -> Any:
        """A global a function names: a module by reference (its code closure, or its version),
        anything else by value."""
        return self._module_ref(v) if isinstance(v, types.ModuleType) else self(v, where)

    def _module_ref(self, mod: types.ModuleType) -> Any:
        kind, owner = self._owner(mod.__name__)
        if kind == "user" and getattr(mod, "__file__", None):
            return ["module", mod.__name__, self.closure.of_module(mod)]
        return [kind, mod.__name__, owner if kind != "user" else None]

    def _class(self, cls: type, where: str) -> Any:
        kind, owner = self._owner(cls.__module__)
        if kind in ("kladder", "installed") or cls.__module__ == "builtins":
            return [kind, cls.__module__, cls.__qualname__, owner if kind != "user" else None]
        members = [[k, self(x, f"{cls.__qualname__}.{k}")] for k, x in sorted(vars(cls).items())
                   if k not in _CLASS_NOISE and not k.startswith("_abc_")]
        bases = [self(b, where) for b in cls.__bases__ if b is not object]
        return ["class", cls.__module__, cls.__qualname__, bases, members]

    def _builtin(self, fn, where: str) -> Any:
        """A C function or a torch op: its module, its name and its package's version (torch's
        for torch's ops; the toolchain part of the key holds it too)."""
        mod = getattr(fn, "__module__", None) or getattr(getattr(fn, "__self__", None), "__name__", None)
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or str(fn)
        kind, owner = self._owner(mod)
        if kind == "user":
            return ["builtin", mod, name, self._module_ref(owner)]
        return ["builtin", mod, name, owner]

    # ------------------------------------------------------------------ data
    def _object(self, v: Any, where: str, tname: str) -> Any:
        state = getattr(v, "__dict__", None)
        slots = [a for c in type(v).__mro__ for a in getattr(c, "__slots__", ()) if not a.startswith("__")]
        if state is None and not slots:
            if all("__slots__" in vars(c) for c in type(v).__mro__[:-1]):
                return ["object", self._class(type(v), where), []]   # a Python class's instance with no state: its class
            text = repr(v)
            if " at 0x" in text or " object at " in text:
                raise Unsound(f"{where or 'a value'} ({tname}) cannot be keyed: it has no state kladder can read, "
                              "only an address")
            return ["repr", tname, text]
        fields_ = dict(state or {})
        fields_ |= {a: getattr(v, a) for a in slots if hasattr(v, a)}
        return ["object", self._class(type(v), where),
                [[k, self(x, f"{where}.{k}")] for k, x in sorted(fields_.items()) if not k.startswith("_abc_")]]

    def _tensor(self, t, where: str) -> Any:
        n = t.numel() * t.element_size()
        self._tensor_bytes += n
        if self._tensor_bytes > TENSOR_BYTES:
            raise Unsound(f"{where or 'a value'}: tensors of more than {TENSOR_BYTES >> 20} MiB in all cannot be keyed")
        import torch
        data = t.detach().to("cpu").contiguous()
        raw = data.view(torch.uint8).numpy().tobytes() if n else b""
        return ["tensor", str(t.dtype), list(t.shape), hashlib.sha256(raw).hexdigest()]


_CLASS_NOISE = ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__annotations__",
                "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__parameters__", "__orig_bases__",
                "__firstlineno__", "__static_attributes__")


def _names(co: types.CodeType) -> set[str]:
    """Every name a code object and the code nested in it look up (globals, attributes)."""
    out = set(co.co_names)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names(c)
    return out


def _filled(cell) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:                        # a cell not yet assigned
        return False
    return True


def _is_op(v) -> bool:
    """A torch op (torch._ops.OpOverload / OpOverloadPacket) or another callable made in C."""
    tm = type(v).__module__ or ""
    return tm.startswith("torch._ops") or type(v).__name__ in ("builtin_function_or_method", "method_descriptor",
                                                               "wrapper_descriptor", "ufunc")


# ---------------------------------------------------------------------------- a climb's key
@dataclass(frozen=True)
class ClimbKey:
    """The parts of a climb's key (each a digest) and, per point, its key (`point`). `why_not`:
    one line saying why no key could be computed (then `point` gives None)."""
    parts: dict[str, str] = field(default_factory=dict)
    why_not: str | None = None
    _dims: Any = None
    _configs: Any = field(default=None, repr=False)
    _spec: Any = field(default=None, repr=False, compare=False)
    _canon: Any = field(default=None, repr=False, compare=False)
    _files: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def base(self) -> str | None:
        return None if self.why_not else _digest(sorted(self.parts.items()))

    def point(self, point) -> str | None:
        """The key of one point's outcome, or None (why_not, or a value of its own not keyable)."""
        if self.why_not:
            return None
        spec = self._spec
        own = [spec.config_of(point.config)]
        partner = dict(point.partner)
        if "config" in partner:
            own.append(spec.config_of(partner["config"]))
        try:
            configs = self._canon(own, "configs")
            replay = _replay_files(point.replay) if point.replay else None
        except Unsound:
            return None
        d = point.to_dict()
        d.pop("why", None)                   # words about the point (a generator's), never read by its run
        return _digest(self.base, d, self._dims, configs, replay)


def _replay_files(replay: str) -> Any:
    """A replayed call's capture (DIR/entry): the manifest's bytes, each file's size and time."""
    folder = os.path.dirname(replay)
    if not os.path.isdir(folder):
        raise Unsound(f"the capture {folder!r} is not there")
    out = []
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        if os.path.isfile(p):
            st = os.stat(p)
            out.append([name, hashlib.sha256(_file_bytes(p)).hexdigest() if name.endswith(".json")
                        else f"{st.st_size} {st.st_mtime_ns}"])
    return out


# Variables the fingerprint lists that say where caches go, not what the code is: a CI job's own
# cache folder must not make every outcome of the last job unusable.
WHERE_ONLY = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "CUDA_CACHE_PATH")
SPEC_LEFT_OUT = ("kernel", "reference", "dims", "configs")   # the kernel and the reference are parts of their own


def spec_variables(spec) -> list[str]:
    """Environment variables the spec names (flags, expectations)."""
    names = set()
    for f in getattr(getattr(spec, "toolchain", None), "flags", ()) or ():
        if getattr(f, "env", None):
            names.add(f.env)
    names |= set(getattr(spec, "when_variables", ()) or ())
    return sorted(names)


def climb_key(spec, device: str, fingerprint: dict, timeout_s: float | None = None,
              env: Mapping[str, str] | None = None) -> ClimbKey:
    """The key of every point of `spec` climbed on `device` in the environment `fingerprint`
    describes (a worker's, with the device, on CUDA)."""
    from ..core.fingerprint import steering_env
    env = os.environ if env is None else env
    closure = Closure()
    canon = Canon(closure)
    parts: dict[str, str] = {}
    try:
        kernel = Canon(closure)              # its own: the modules of the kernel's functions (`homes`) are its code too
        code = kernel(spec.kernel, "the kernel")
        parts["kernel"] = _digest(code, [[m, closure.of_module(sys.modules[m])] for m in sorted(kernel.homes)])
        parts["reference"] = _digest(canon(spec.reference, "the reference"))
        decl = [[f.name, canon(getattr(spec, f.name), f.name)] for f in dataclasses.fields(spec)
                if f.name not in SPEC_LEFT_OUT]
        parts["spec"] = _digest(decl)
        dims = [[name, canon(getattr(d, "tile", None), f"dims[{name!r}].tile"),
                 canon(getattr(d, "chunks", None), f"dims[{name!r}].chunks")] for name, d in spec.dims.items()]
    except Unsound as e:
        return ClimbKey(why_not=str(e))
    if device == "cuda" and not (isinstance(fingerprint.get("device"), dict) and fingerprint["device"].get("name")):
        return ClimbKey(why_not="the CUDA device's name and capability are not known (no worker started)")
    parts["toolchain"] = _digest(TOOLCHAIN(fingerprint))
    parts["kladder"] = kladder_digest()
    steering = {k: v for k, v in steering_env(env).items() if k not in WHERE_ONLY}
    named = {k: env.get(k) for k in spec_variables(spec)}
    parts["env"] = _digest(sorted(steering.items()), sorted(named.items()))
    parts["options"] = _digest(device, timeout_s)
    return ClimbKey(parts=parts, _dims=dims, _spec=spec, _canon=canon)


PART_WORDS = ("kernel", "reference", "spec", "toolchain", "kladder", "env", "options")   # the parts, in the order reports name them
