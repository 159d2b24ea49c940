"""Behind kladder.climb: turn a Spec object into a reference a worker can import."""
from __future__ import annotations

import sys

from ..climbing.ladder import Options, climb
from ..climbing.session import parse_rungs
from ..gen.load import load_spec
from ..core.spec import Spec


def ref_for(spec: Spec) -> str:
    """Find the module attribute that holds this spec object: workers import it from there."""
    for modname, mod in list(sys.modules.items()):
        for attr, value in list(getattr(mod, "__dict__", {}).items()):
            if value is spec:
                if modname == "__main__":
                    return f"{mod.__file__}::{attr}"
                return f"{modname}::{attr}"
    raise ValueError(f"spec {spec.name!r} is not a module-level name of any imported module; "
                     "define it at module level (workers import it by reference), or pass 'path.py::name'.")


def climb_spec(spec, *, rungs=None, device="auto", timeout_s=None, log_path=None, jobs=1, seed=0):
    ref = spec if isinstance(spec, str) else ref_for(spec)
    obj = load_spec(ref) if isinstance(spec, str) else spec
    if isinstance(rungs, int):
        rungs = (rungs,)
    rung_t = parse_rungs(",".join(map(str, rungs)) if rungs else None)
    return climb(ref, obj, Options(rungs=rung_t, device=device, timeout_s=timeout_s, log_path=log_path, jobs=jobs,
                                   seed=seed))
