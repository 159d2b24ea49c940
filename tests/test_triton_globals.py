"""Every Triton kernel kladder ships (the zoo, examples/) compiles on a GPU as far as its globals
go: compiled Triton lets a @triton.jit function read a module global only when it is a
tl.constexpr (or a module, another jit function, a triton.language object, a builtin), while
Triton's interpreter, the CPU's, reads any global. Two zoo cases (router_lanes_256,
active_count_full_width) passed every CPU test and raised CompilationError at every point on
the H200 (`LANES = 256`, a plain int; docs/results/2026-12-02-h200-session7). This mirrors
triton/compiler/code_generator.py's global_lookup on the source of each kernel, no GPU needed."""
import ast
import builtins
import importlib
import inspect
import pkgutil
import sys
import textwrap
import types
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.runtime.jit import KernelInterface  # noqa: E402  (JITFunction's base and, under TRITON_INTERPRET=1, InterpretedFunction's)

ROOT = Path(__file__).resolve().parents[1]


def _modules():
    import kladder.zoo as zoo
    for m in pkgutil.iter_modules(zoo.__path__):
        yield f"kladder.zoo.{m.name}", lambda n=m.name: importlib.import_module(f"kladder.zoo.{n}")
    for path in sorted((ROOT / "examples").rglob("*.py")):
        if path.name.startswith("test_"):
            continue
        def load(path=path):
            sys.path.insert(0, str(path.parent))
            try:
                return importlib.import_module(path.stem)
            finally:
                sys.path.remove(str(path.parent))
        yield f"examples/{path.relative_to(ROOT / 'examples')}", load


def allowed(val) -> bool:
    """triton's global_lookup, one test each (3.6 and 3.9 agree on these)."""
    return (isinstance(val, (types.ModuleType, KernelInterface))
            or getattr(val, "__triton_builtin__", False) or getattr(val, "__triton_aggregate__", False)
            or getattr(val, "__module__", "").startswith("triton.language")
            or isinstance(val, (tl.dtype, tl.constexpr)))


def bad_globals(fn) -> list[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn.fn)))
    local = {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    local |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    g = fn.fn.__globals__
    bad = set()
    for n in ast.walk(tree.body[0]):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local and n.id in g:
            if hasattr(builtins, n.id) and g[n.id] is getattr(builtins, n.id):
                continue
            if g[n.id] is None:      # a guarded optional import (silent_fallback): the launcher never compiles it then
                continue
            if not allowed(g[n.id]):
                bad.add(f"{n.id} ({type(g[n.id]).__name__})")
    # decorators are evaluated by Python, not by Triton
    return sorted(bad)


MODULES = dict(_modules())


@pytest.mark.parametrize("name", list(MODULES))
def test_every_kernel_reads_only_globals_that_compiled_triton_allows(name):
    mod = MODULES[name]()
    kernels = [v for v in vars(mod).values() if isinstance(v, KernelInterface) and getattr(v, "fn", None) is not None
               and v.fn.__module__ == mod.__name__]
    if not kernels:
        pytest.skip(f"{name} defines no Triton kernel")
    wrong = {k.fn.__name__: b for k in kernels if (b := bad_globals(k))}
    assert not wrong, (f"{name}: a @triton.jit function reads a plain global (compiled Triton raises "
                       f"CompilationError NameError; the interpreter does not): {wrong}; pass it as a `NAME: tl.constexpr` parameter (a tl.constexpr global compiles, but the interpreter keeps it a constexpr object in arithmetic)")


def test_the_check_sees_a_plain_int_global(tmp_path):
    src = "import triton, triton.language as tl\nW = 8\nC = tl.constexpr(8)\n" \
          "@triton.jit\ndef k(p):\n    tl.store(p + tl.arange(0, W), 0)\n" \
          "@triton.jit\ndef ok(p):\n    tl.store(p + tl.arange(0, C), 0)\n"
    path = tmp_path / "kladder_globals_probe.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("kladder_globals_probe", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert bad_globals(mod.k) == ["W (int)"]
    assert bad_globals(mod.ok) == []
    # and compiled Triton agrees (its frontend, for an sm_90 target: no GPU needed)
    errors = compile_errors(path, ("k", "ok"))
    assert errors["k"] is not None and "NameError" in errors["k"]["text"]
    assert errors["ok"] is None


COMPILE = """
import importlib.util, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kladder.core.outcome import error_facts
spec = importlib.util.spec_from_file_location("kladder_globals_probe", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
out = {}
for name in sys.argv[2:]:
    try:
        triton.compile(ASTSource(fn=getattr(mod, name), signature={"p": "*fp32"}, constexprs={}),
                       target=GPUTarget("cuda", 90, 32))
        out[name] = None
    except Exception as e:
        if type(e).__name__ != "CompilationError":
            out = {"skip": f"{type(e).__name__}: {str(e)[:200]}"}
            break
        out[name] = error_facts(e)
print(json.dumps(out))
"""


def compile_errors(path, names):
    """{name: error_facts of compiling that kernel of the module at `path` (one pointer argument)
    with Triton's compiler for sm_90, or None when it compiles}. In a fresh process, without
    TRITON_INTERPRET: this process has run interpreted kernels, and Triton's interpreter may leave
    triton.language patched after one that raised (in the merged suite, under Triton 3.9, the
    probe's correct kernel failed to compile here: "'block_argument' object has no attribute
    'dtype'")."""
    import json
    import os
    import subprocess
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", COMPILE, str(path), *names], capture_output=True, text=True,
                       timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(f"Triton cannot compile for sm_90 here: {out['skip']}")
    return out
