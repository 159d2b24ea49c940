"""The zoo's cases, found by walking kladder.zoo: every module with a CASE record."""
from __future__ import annotations

import importlib
import pkgutil


def case_modules() -> dict[str, object]:
    from .. import zoo
    found = {}
    for info in pkgutil.iter_modules(zoo.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"kladder.zoo.{info.name}")
        if hasattr(mod, "CASE"):
            found[info.name] = mod
    return dict(sorted(found.items(), key=lambda kv: (kv[1].CASE["rung"], kv[0])))


def case_ref(name: str, fixed: bool = False) -> str:
    return f"kladder.zoo.{name}::{'fixed' if fixed else 'spec'}"
