"""Find a spec from a reference: `path/to/file.py::name`, `package.module::name`, or a
file holding exactly one Spec. A bad reference gets one error that says what to write."""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys

from .spec import Spec


class LoadError(ValueError):
    pass


def split_ref(ref: str) -> tuple[str, str | None]:
    target, _, name = ref.partition("::")
    return target, (name or None)


def load_module(target: str):
    if target.endswith(".py") or os.sep in target:
        path = os.path.abspath(target)
        if not os.path.exists(path):
            raise LoadError(f"spec file {target!r} does not exist; give PATH.py::NAME or a module such as kladder.zoo.gemm_k_tail::spec.")
        name = "kladder_spec_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        sys.path.insert(0, os.path.dirname(path))
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(os.path.dirname(path))
        return mod
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        raise LoadError(f"cannot import {target!r} ({e}); give PATH.py::NAME or an importable module::NAME.") from None


def load_spec(ref: str) -> Spec:
    target, name = split_ref(ref)
    mod = load_module(target)
    specs = {k: v for k, v in vars(mod).items() if isinstance(v, Spec)}
    if name is None:
        if len(specs) != 1:
            found = ", ".join(sorted(specs)) or "none"
            raise LoadError(f"{target!r} holds {len(specs)} specs ({found}); name one: {target}::NAME.")
        return next(iter(specs.values()))
    if name not in specs:
        found = ", ".join(sorted(specs)) or "none"
        raise LoadError(f"{target!r} has no spec named {name!r}; specs there: {found}.")
    return specs[name]
