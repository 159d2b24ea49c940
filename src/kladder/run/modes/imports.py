"""Import contracts (rung 7): production runs someone else's copy. Downstream code imports
names from the kernel's package (`Spec(imports=["pkg.mod:name"])`); each must still resolve,
and to an object the spec tests: the kernel, or code the kernel's call runs (a function it
calls, a Triton kernel it launches, a module or class whose code runs). And a module that
catches an ImportError and takes another path says nothing (SGLang #33142: "a silent
performance regression, not a crash ... Nothing is logged"): the kernel's modules are imported
afresh in a child process under a tracer that records every ImportError raised in their code,
all of them caught, since the import succeeded. checks/imports.py judges; the call is judged
as an eager call."""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from ...core.notation import ImportName
from ...core.outcome import NoteKind, SpecBroken, error_facts
from .base import Call, Imported, Mode
from .tracing import Launches, Tracer, is_machinery


def resolve(name: str) -> tuple:
    """(name, the object, None) or (name, None, the error's facts)."""
    where = ImportName.parse(name)
    try:
        obj = importlib.import_module(where.module)
        for part in where.attr.split("."):
            obj = getattr(obj, part)
    except Exception as e:  # noqa: BLE001 - an import that fails is the finding
        return name, None, error_facts(e)
    return name, obj, None


def kernel_modules(spec) -> list[str]:
    """The modules to import afresh: those that define the kernel (a chain's links) and those
    the declared imports name, by module name, or by file for a spec loaded from a path."""
    from ...core.chain import Chain
    fns = spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]
    names = [getattr(f, "__module__", None) for f in fns] + [ImportName.parse(i).module for i in spec.toolchain.imports]
    out = []
    for name in names:
        mod = sys.modules.get(name or "")
        if mod is None:
            target = name if name and importlib.util.find_spec(name.split(".")[0]) else None
        else:
            target = mod.__file__ if name.startswith("kladder_spec_") else name
            if not getattr(mod, "__file__", None) or is_machinery(mod.__file__):
                target = None
        if target and target not in out:
            out.append(target)
    return out


def caught_imports(h, targets: list[str]) -> list[dict]:
    """The ImportErrors raised in the kernel's own code while `targets` are imported in a new
    process (torch and triton imported first, outside the trace)."""
    from ..forkserver import run
    from ..isolation import child_timeout, worker_env
    if not targets:
        return []
    with tempfile.TemporaryDirectory(prefix="kladder-imports-") as d:
        out = os.path.join(d, "caught.json")
        cmd = [sys.executable, "-m", "kladder.run.modes.imports", out, *targets]
        try:
            p = run(cmd, worker_env(h.device), child_timeout(h.spec, h.device))   # forked warm where it can be
        except subprocess.TimeoutExpired:
            raise SpecBroken(NoteKind.PROCESS_FAILED, label="import tracing",
                             text=f"did not finish within {child_timeout(h.spec, h.device):g} s") from None
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or ["exited " + str(p.returncode)])[-1]
            raise SpecBroken(NoteKind.PROCESS_FAILED, label="import tracing", text=err)
        with open(out) as f:
            return json.load(f)


class Imports(Mode):
    name = "imports"
    rungs = (7,)
    child_processes = 1
    measured_elsewhere = True

    def observe(self, h):
        prep = h.prepare()
        with Tracer() as t, Launches() as launched:
            returned = h.call(prep, "traced")
        targets = kernel_modules(h.spec)
        caught = caught_imports(h, targets)
        yield Imported([resolve(n) for n in h.spec.toolchain.imports], set(t.called), [x.fn for x in launched.seen], caught, targets)
        yield Call(prep, returned)


MODE = Imports()


# ---------------------------------------------------------------------------- the child
class ImportErrorTracer:
    """A sys.settrace tracer: every ImportError raised in, or passing through, a frame of code
    that is not kladder's machinery, torch, triton or the standard library."""

    def __init__(self):
        self.seen: list[dict] = []

    def __call__(self, frame, event, arg):
        if event == "call" and not is_machinery(frame.f_code.co_filename):
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "exception" and issubclass(arg[0], ImportError):
            text = str(arg[1]).strip().splitlines()
            seen = {"module": frame.f_globals.get("__name__", ""),
                    "where": f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}",
                    "error": arg[0].__name__, "text": text[0][:300] if text else ""}
            if all(s["text"] != seen["text"] for s in self.seen):     # once, where it was raised
                self.seen.append(seen)
        return self._local


def child(argv: list[str]) -> int:
    """python -m kladder.run.modes.imports OUT TARGET... : import each target (a module, or a
    spec file) under the tracer; write the ImportErrors it caught to OUT (JSON)."""
    for heavy in ("torch", "triton"):        # their own optional imports are not the kernel's
        if importlib.util.find_spec(heavy):
            importlib.import_module(heavy)
    from ...gen.load import load_module
    out, targets = argv[0], argv[1:]
    tracer = ImportErrorTracer()
    for target in targets:
        sys.settrace(tracer)
        try:
            load_module(target)
        except Exception:  # noqa: BLE001 - an import that fails outright is the worker's to report
            pass
        finally:
            sys.settrace(None)
    with open(out, "w") as f:
        json.dump(tracer.seen, f)
    return 0


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
