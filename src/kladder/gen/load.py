"""Find a spec from a reference: `path/to/file.py::name`, `package.module::name`, or a
file holding exactly one Spec. A bad reference, or a spec module that cannot be imported (a
syntax error, a missing package, an exception at import), gets one error that says which
file and line, what went wrong and what to write."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
import traceback

from ..core.errors import LoadError
from ..core.notation import SpecRef
from ..core.spec import Spec, SpecError


def split_ref(ref: str) -> tuple[str, str | None]:
    r = SpecRef.parse(ref)
    return r.target, r.name


def _is_path(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or (os.altsep or os.sep) in target


def check_ref(ref: str) -> None:
    """The checks that need no import: the file exists and is a file, the name is an identifier."""
    target, name = split_ref(ref)
    if not target:
        raise LoadError(f"spec {ref!r}: give PATH.py::NAME or module::NAME, e.g. kladder.zoo.gemm_k_tail::spec.")
    if name is not None and not name.isidentifier():
        raise LoadError(f"spec {ref!r}: {name!r} after '::' is not a Python name; write PATH.py::NAME.")
    if _is_path(target):
        path = os.path.abspath(target)
        if os.path.isdir(path):
            raise LoadError(f"spec file {target!r} is a directory; give the .py file that holds the spec, "
                            "PATH.py::NAME.")
        if not os.path.exists(path):
            raise LoadError(f"spec file {target!r} does not exist; give PATH.py::NAME or a module such as "
                            "kladder.zoo.gemm_k_tail::spec.")


_HERE = os.path.abspath(__file__)      # this module's frames are kladder's, never where a spec failed


def _import_failed(target: str, e: BaseException) -> LoadError:
    """Where in the spec's own code the import failed, and why."""
    if isinstance(e, SyntaxError):
        where = f"{e.filename}, line {e.lineno}" if e.filename else f"line {e.lineno}"
        return LoadError(f"spec {target!r} has a syntax error at {where}: {e.msg}; fix the file and climb again.")
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "importlib" not in f.filename
              and os.path.abspath(f.filename) != _HERE]
    where = f" at {frames[-1].filename}, line {frames[-1].lineno}" if frames else ""
    if isinstance(e, ModuleNotFoundError):
        return LoadError(f"importing spec {target!r} failed{where}: no module named {e.name!r}; install it, or fix "
                         "the import.")
    msg = str(e).strip().splitlines()
    return LoadError(f"importing spec {target!r} raised {type(e).__name__}{where}: {msg[0] if msg else ''}; the spec "
                     "module must import cleanly (kladder imports it in every worker).")


def load_module(target: str):
    if _is_path(target):
        check_ref(target)
        path = os.path.abspath(target)
        # the stem alone would make two spec.py files one module (the second replacing the first
        # in sys.modules): the path's digest keeps them apart, the same in every worker
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        name = f"kladder_spec_{stem}_{hashlib.sha1(path.encode()).hexdigest()[:10]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise LoadError(f"spec file {target!r} is not a Python file kladder can import; give PATH.py::NAME.")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        sys.path.insert(0, os.path.dirname(path))
        try:
            spec.loader.exec_module(mod)
        except SpecError:
            sys.modules.pop(name, None)
            raise                            # it names the field already
        except Exception as e:  # noqa: BLE001 - anything the user's module raises is theirs to fix
            sys.modules.pop(name, None)
            raise _import_failed(target, e) from None
        finally:
            sys.path.remove(os.path.dirname(path))
        return mod
    try:
        return importlib.import_module(target)
    except SpecError:
        raise
    except ModuleNotFoundError as e:
        if e.name and target.startswith(e.name):
            raise LoadError(f"cannot import {target!r} ({e}); give PATH.py::NAME or an importable module::NAME.") from None
        raise _import_failed(target, e) from None
    except Exception as e:  # noqa: BLE001
        raise _import_failed(target, e) from None


def _one_name_each(target: str, specs: dict[str, Spec], twins_allowed: bool = False) -> None:
    """Two specs of one module may not share a name: points and repro lines are named after
    it, so a failing point of one would be replayed against the other and pass. (One Spec object
    bound to two names is one spec.) The zoo's cases are the exception (`twins_allowed`): a buggy
    kernel and its fixed twin, declared identical but for the kernel, checked at the same points."""
    seen: dict[str, str] = {}
    for var, s in specs.items():
        first = specs.get(seen.get(s.name, ""))
        if first is not None and first is not s and not (twins_allowed and _same_points(first, s)):
            raise SpecError(f"{target}: specs {seen[s.name]!r} and {var!r} share one name", s.name,
                            "give each spec its own name (the first argument of kl.Spec): points and repro lines are "
                            "named after it, so a point of one would be replayed against the other.")
        seen.setdefault(s.name, var)


def _same_points(a: Spec, b: Spec) -> bool:
    fields = ("args", "dims", "returns", "configs", "production", "tuned", "rows")
    return all(_plain(getattr(a, f)) == _plain(getattr(b, f)) for f in fields)


def _plain(v):
    if isinstance(v, dict) or hasattr(v, "items"):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def load_spec(ref: str) -> Spec:
    target, name = split_ref(ref)
    check_ref(ref)
    mod = load_module(target)
    specs = {k: v for k, v in vars(mod).items() if isinstance(v, Spec)}
    _one_name_each(target, specs, twins_allowed=isinstance(getattr(mod, "CASE", None), dict))
    if name is None:
        if len(specs) != 1:
            found = ", ".join(sorted(specs)) or "none"
            raise LoadError(f"{target!r} holds {len(specs)} specs ({found}); name one: {target}::NAME.")
        return next(iter(specs.values()))
    if name not in specs:
        found = ", ".join(sorted(specs)) or "none"
        raise LoadError(f"{target!r} has no spec named {name!r}; specs there: {found}.")
    return specs[name]


# ---------------------------------------------------------------------------- many specs (`kladder climb PATH...`)
SKIPPED_FILES = ("setup.py", "conftest.py", "noxfile.py")


class ManySpecs(Exception):
    """A reference that names several specs (a folder, a package, a file or module with several):
    `refs` is one PATH::NAME a spec."""

    def __init__(self, refs: list[str]):
        super().__init__(f"{len(refs)} specs")
        self.refs = refs


def is_many(ref: str) -> bool:
    """A reference that is a folder or a package: it names every spec found under it."""
    target, name = split_ref(ref)
    if name is not None or not target:
        return False
    if _is_path(target) or os.path.isdir(target):
        return os.path.isdir(target)
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        return False
    return found is not None and found.submodule_search_locations is not None


def spec_files(folder: str) -> list[str]:
    """The .py files under `folder` that may hold specs: every one that mentions kladder, in
    sorted order, hidden folders, __pycache__, files starting with '_' and setup/conftest left out."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")) and d not in ("node_modules", "build", "dist"))
        for f in sorted(files):
            if not f.endswith(".py") or f.startswith("_") or f in SKIPPED_FILES:
                continue
            path = os.path.join(root, f)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if "kladder" in fh.read():
                        out.append(path)
            except OSError:
                continue
    return out


def refs_in(ref: str) -> list[str]:
    """Every spec a reference names, as PATH::NAME (see specs_in)."""
    return [r for r, _ in specs_in(ref)]


def specs_in(ref: str) -> list[tuple[str, Spec]]:
    """Every spec a reference names, as (PATH::NAME, Spec), NAME the variable holding it, each module
    imported once: PATH::NAME or module::NAME itself; a file or a module, each spec it holds; a
    folder, each spec of each file under it (spec_files); a package, each spec of each of its
    modules. A reference that names no spec, or a module that cannot be imported, is a LoadError
    naming it."""
    target, name = split_ref(ref)
    if not os.path.isdir(target):
        check_ref(ref)
    if name is not None:
        return [(ref, load_spec(ref))]
    if os.path.isdir(target):
        files = spec_files(target)
        found = [rs for f in files for rs in _specs_of_module(f, f)]
        if not found:
            raise LoadError(f"no kl.Spec found under {target!r} (in {len(files)} .py files that mention kladder); give "
                            "PATH.py::NAME, a file or a folder that holds specs.")
        return found
    if not _is_path(target):
        try:
            package = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            package = None
        if package is not None and package.submodule_search_locations:
            found = []
            for folder in package.submodule_search_locations:
                for f in spec_files(folder):
                    rel = os.path.relpath(os.path.splitext(f)[0], folder).replace(os.sep, ".")
                    found += _specs_of_module(f"{target}.{rel}", f"{target}.{rel}")
            if not found:
                raise LoadError(f"no kl.Spec found in the package {target!r}; give module::NAME.")
            return found
    found = _specs_of_module(target, target)
    if not found:
        raise LoadError(f"{target!r} holds no kl.Spec; give PATH.py::NAME or module::NAME.")
    return found


def _specs_of_module(target: str, shown: str) -> list[tuple[str, Spec]]:
    mod = load_module(target)
    specs = {k: v for k, v in vars(mod).items() if isinstance(v, Spec)}
    _one_name_each(shown, specs, twins_allowed=isinstance(getattr(mod, "CASE", None), dict))
    seen: set[int] = set()
    out = []
    for var, s in specs.items():
        if id(s) not in seen:                # one Spec bound to two names is one spec
            seen.add(id(s))
            out.append((f"{target}::{var}", s))
    return out
