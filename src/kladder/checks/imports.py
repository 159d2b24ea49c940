"""Import contracts (rung 7): every name downstream code imports must resolve, to an object
the spec tests (the kernel, or code its call runs); an ImportError the kernel's modules caught
while importing is a warning (the other path it took shows through dispatch)."""
from __future__ import annotations

import inspect

from ..core.outcome import Check, Finding
from ..core.facts import CaughtImportFacts, ImportContractFacts


def _kernels(spec) -> list:
    from ..core.chain import Chain
    return spec.kernel.functions() if isinstance(spec.kernel, Chain) else [spec.kernel]


def _code(obj):
    obj = inspect.unwrap(obj) if callable(obj) else obj
    obj = getattr(obj, "func", obj)                       # functools.partial
    return getattr(obj, "__code__", None) or getattr(getattr(obj, "__func__", None), "__code__", None)


def tested(spec, obj, imported) -> bool:
    """Whether the kernel's call runs `obj`: it is the kernel, a function or method it called,
    a @triton.jit kernel it launched (through any wrapper) or whose body ran, or a module or
    class whose code ran."""
    if any(obj is k for k in _kernels(spec)):
        return True
    called = imported.called
    if _code(obj) in called:
        return True
    inner = obj
    for _ in range(4):                                    # autotune / heuristics wrap a JITFunction
        if any(inner is f for f in imported.launched):
            return True
        inner = getattr(inner, "fn", None)
        if inner is None:
            break
        code = getattr(inner, "__code__", None)
        if code is not None and any((c.co_filename, c.co_name) == (code.co_filename, code.co_name) for c in called):
            return True                                   # the interpreter runs a rewritten copy of the body
    if inspect.ismodule(obj):
        files = {c.co_filename for c in called} | {f.fn.__code__.co_filename for f in imported.launched}
        return getattr(obj, "__file__", None) in files
    if inspect.isclass(obj):
        prefix = obj.__qualname__ + "."
        return any(getattr(c, "co_qualname", "").startswith(prefix) for c in called)
    return False


def contracts(spec, imported) -> list[Finding]:
    found = []
    for name, obj, error in imported.resolved:
        if error is not None:
            found.append(Finding(Check.IMPORT_CONTRACT, facts=ImportContractFacts(name=name, problem="missing", **error)))
        elif not tested(spec, obj, imported):
            found.append(Finding(Check.IMPORT_CONTRACT, facts=ImportContractFacts(name=name, problem="untested",
                                                                              object=repr(obj)[:120])))
    return found


def caught(imported) -> list[Finding]:
    return [Finding(Check.CAUGHT_IMPORT, facts=CaughtImportFacts(**c)) for c in imported.caught]
