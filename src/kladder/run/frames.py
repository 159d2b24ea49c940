"""The kernel's exception in its own words: its traceback as typed frames (file, line, function,
the source line), folded to the frames that are the user's.

What is folded, and why:
- kladder's own frames (the harness, the mode, `call_once`): the same in every report, and never
  where the kernel went wrong; the zoo's kernels (kladder/zoo/) are kernels, so they stay;
- the frames of torch, Triton, numpy and Python's standard library between the user's frames
  (the interpreter's grid loop, `JITFunction.run`, functools), but not the innermost frame: the
  one that raised says which library call refused what (`semantic.py:623 in arange`), unless
  kladder's frames lie between it and the user's last (kladder's dispatch mode, which serves the
  launcher's factory ops, reaches torch's op call: that frame is kladder's doing, not the user's);
- past MAX_FRAMES kept frames, the outermost ones (a recursion).
Each fold is counted in the facts (`folded_kladder`, `folded_library`, `folded_more`).

The chain: an exception raised `from` another (Triton's interpreter raises InterpreterError from
the kernel body's own exception; a launcher may wrap what it caught) continues inside the
frame that caught it, so the cause's frames follow the outer ones: the @triton.jit body's line
under the interpreter is a frame like any other.

Two things a traceback cannot show, added from the exception and the kernel:
- a Triton compile error (CompilationError: its node's line in the @jit function's source; Triton
  strips its code generator's frames) as a `jit` frame at that line of the kernel's file, the
  call site first and the callee's line after it for an error inside a called @jit function;
- a call that never entered the launcher (its signature does not match the arguments: "takes 3
  positional arguments but 4 were given"): where the launcher is defined, its `def` line, and
  the names kladder passed (`entered` False, `launcher`, `called`)."""
from __future__ import annotations

import functools
import inspect
import linecache
import os
import sys
import sysconfig

MAX_FRAMES = 12          # frames kept, the innermost ones
CODE_CHARS = 200         # characters of a source line kept


@functools.cache
def _stdlib() -> tuple[str, ...]:
    return tuple(os.path.join(p, "") for p in sorted({sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")} - {None}))


def _ours() -> tuple[str, str]:
    """kladder's package folder, and the zoo's inside it."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, ""), os.path.join(here, "zoo", "")


def _libraries() -> tuple[str, ...]:
    """The folders of torch, Triton and numpy, as imported now."""
    out = []
    for name in LIBRARIES:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            out.append(os.path.join(os.path.dirname(os.path.abspath(mod.__file__)), ""))
    return tuple(out)


LIBRARIES = ("torch", "triton", "numpy")


def kind_of(path: str) -> str:
    """'kladder', 'library' (torch, Triton, numpy, Python's standard library) or 'user' for a
    frame's file; a package installed in site-packages other than those is the user's."""
    if path.startswith("<"):                         # <frozen importlib._bootstrap>, <string>
        return "library" if path.startswith("<frozen") else "user"
    full = os.path.abspath(path)
    ours, zoo = _ours()
    if full.startswith(ours) and not full.startswith(zoo):
        return "kladder"
    if full.startswith(_libraries()):
        return "library"
    installed = f"{os.sep}site-packages{os.sep}" in full or f"{os.sep}dist-packages{os.sep}" in full
    return "library" if full.startswith(_stdlib()) and not installed else "user"


def shown_path(path: str) -> str:
    """A path as a user clicks it: relative to the working folder when inside it; a library's
    from its package ('triton/language/semantic.py') or the standard library's folder."""
    if path.startswith("<"):
        return path
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.getcwd())
    if not rel.startswith(".."):
        return rel
    for root in (*_libraries(), *_stdlib()):
        if full.startswith(root):
            base = os.path.dirname(root.rstrip(os.sep)) if root in _libraries() else root
            return os.path.relpath(full, base)
    return full


def _frame(path: str, line: int, function: str, kind: str) -> dict:
    code = linecache.getline(path, line).strip()[:CODE_CHARS] if line else ""
    return {"file": shown_path(path), "line": line, "function": function, "kind": kind, "code": code}


def _chain(e: BaseException) -> list[BaseException]:
    """The exception, then what it was raised from (explicit causes only), outermost first."""
    out, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        e = e.__cause__
    return out


def _raw_frames(e: BaseException) -> list[tuple[object, str, int, str]]:
    """(frame object, file, line, function) of the whole chain, outermost first: a cause's frames
    replace the frame that caught it (the same frame, at the line of its `raise ... from`)."""
    frames: list[tuple[object, str, int, str]] = []
    for x in _chain(e):
        tb, mine = x.__traceback__, []
        while tb is not None:
            code = tb.tb_frame.f_code
            mine.append((tb.tb_frame, code.co_filename, tb.tb_lineno, code.co_name))
            tb = tb.tb_next
        if frames and mine:
            where = next((i for i, f in enumerate(frames) if f[0] is mine[0][0]), None)
            if where is not None:
                frames = frames[:where]
        frames += mine
    return frames


def _jit_frames(e: BaseException, raw: list) -> list[dict]:
    """Triton's compile errors as frames at their line of the @jit function's file, outermost
    first (the call site, then the callee's line)."""
    found = []
    for x in _chain(e):
        node, src = getattr(x, "node", None), getattr(x, "src", None)
        if type(x).__name__ not in _COMPILE_ERRORS or node is None or not isinstance(src, str) or not hasattr(node, "lineno"):
            continue
        fn = _jit_function(src, raw)
        if fn is None:
            continue
        path, first = getattr(fn, "file_name", None), getattr(fn, "def_file_line_number", None)
        if path and first:
            found.append(_frame(path, first + node.lineno - 1, getattr(fn, "__name__", "?"), "jit"))
    return found


_COMPILE_ERRORS = ("CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct")


def _jit_function(src: str, raw: list):
    """The @triton.jit function whose source is `src`: among the objects the traceback's frames
    hold (the launcher's globals name the kernel) and the globals of those functions (its callees)."""
    seen: set[int] = set()
    todo = [v for frame, *_ in raw for v in (*frame.f_globals.values(), *frame.f_locals.values())]
    for depth in range(3):
        more = []
        for v in todo:
            if id(v) in seen or not hasattr(v, "fn") or not hasattr(v, "def_file_line_number"):
                continue
            seen.add(id(v))
            if getattr(v, "src", None) == src:
                return v
            more += list(getattr(v.fn, "__globals__", {}).values()) if depth < 2 else []
        todo = more
    return None


def _launcher(kernel):
    """The launcher's own code object and its (file, def line, name), or None (not a Python function)."""
    fn = kernel
    for _ in range(4):
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        else:
            break
    code = getattr(fn, "__code__", None)
    if code is None and callable(fn) and not inspect.isroutine(fn):
        code = getattr(vars(type(fn)).get("__call__"), "__code__", None)      # a callable object's own __call__
    if code is None:
        return None
    return code, code.co_filename, code.co_firstlineno, getattr(fn, "__name__", code.co_name)


def trace_of(e: BaseException, kernel=None, args: list | None = None, kwargs: list | None = None) -> dict | None:
    """The facts of facts.TraceFacts for the kernel's exception `e` (None without a traceback).
    `kernel`: the launcher kladder called, `args` the names it passed in order, `kwargs` the
    keywords (the point's config)."""
    raw = _raw_frames(e)
    if not raw:
        return None
    kinds = [kind_of(path) for _, path, _, _ in raw]
    last_user = max((i for i, k in enumerate(kinds) if k == "user"), default=-1)
    # the raising frame is a library's own word only when the user's code called into it; reached
    # through kladder's frames (its dispatch mode serving the launcher's torch ops), it is kladder's
    raising_shown = kinds[-1] == "library" and "kladder" not in kinds[last_user + 1:]
    kept, folded = [], {"kladder": 0, "library": 0}
    for i, ((_, path, line, function), kind) in enumerate(zip(raw, kinds, strict=True)):
        if kind == "user" or (i == len(raw) - 1 and raising_shown):
            kept.append(_frame(path, line, function, kind))
        else:
            folded[kind] += 1
    jit = _jit_frames(e, raw)
    if jit:                                          # the kernel's lines go just before the frame that raised
        at = len(kept) - 1 if kept and kept[-1]["kind"] == "library" else len(kept)
        kept[at:at] = jit
    more = max(0, len(kept) - MAX_FRAMES)
    facts = {"frames": kept[more:], "folded_kladder": folded["kladder"], "folded_library": folded["library"]}
    if more:
        facts["folded_more"] = more
    launcher = _launcher(kernel) if kernel is not None else None
    if launcher is not None and kind_of(launcher[1]) != "kladder":
        code, path, line, name = launcher
        entered = any(frame.f_code is code for frame, *_ in raw)
        facts["entered"] = entered
        if not entered:
            def_line = _def_line(path, line)
            facts["launcher"] = _frame(path, def_line, name, "user")
            facts["called"] = [*(args or []), *(f"{k}=" for k in (kwargs or []))]
    return facts


def _def_line(path: str, first: int) -> int:
    """The `def` line of a function whose code starts at `first` (its decorators come first)."""
    for k in range(first, first + 20):
        text = linecache.getline(path, k).lstrip()
        if text.startswith(("def ", "async def ", "class ")):
            return k
        if not text:
            break
    return first
