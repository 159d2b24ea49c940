"""run/modes/imports.py: a declared 'pkg.mod:name' resolved or its error, the modules to import
afresh (not torch's or the standard library's), the import-tracing child's exits read by the
mode (forkclient.run standing in for the process), the tracer's records (once, where raised,
ImportErrors only), the child's function run in this process, and what the mode yields."""
import json
import os
import subprocess
import sys
import types

import pytest
import torch

import kladder as kl
from kladder.core.outcome import NoteKind, SpecBroken
from kladder.core.point import Point
from kladder.run.forkclient import Children
from kladder.run.harness import Harness
from kladder.run.modes import imports
from kladder.run.modes.base import Call, Imported


def test_a_name_resolves_through_dotted_attributes():
    assert imports.resolve("os:path.join") == ("os:path.join", os.path.join, None)


@pytest.mark.parametrize("name, error", [("json:no_such_name", "AttributeError"), ("os:path.nope", "AttributeError"),
                                         ("kladder_no_such_pkg.mod:f", "ModuleNotFoundError")])
def test_a_name_that_does_not_resolve_is_its_errors_facts(name, error):
    got, obj, facts = imports.resolve(name)
    assert got == name and obj is None and facts["error"] == error and facts["text"]


def my_launcher(x):
    return torch.neg(x)


def _spec(kernel=my_launcher, imp=()):
    return kl.Spec("neg", kernel=kernel, reference=torch.neg, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 8)}, returns=kl.Tensor("N", like="x"), toolchain=kl.Toolchain(imports=list(imp)))


def test_the_modules_to_import_afresh_are_the_kernels_and_the_declared_ones_not_machinery():
    assert imports.kernel_modules(_spec()) == [__name__]
    assert imports.kernel_modules(_spec(imp=[f"{__name__}:my_launcher", "json:dumps"])) == [__name__]   # once
    assert imports.kernel_modules(_spec(kernel=torch.neg)) == []                   # torch's own code
    assert imports.kernel_modules(_spec(kernel=torch.neg, imp=["kladder_no_such_pkg.m:f"])) == []


def test_a_spec_loaded_from_a_file_is_imported_afresh_by_its_path(monkeypatch, tmp_path):
    mod = types.ModuleType("kladder_spec_abc")
    mod.__file__ = str(tmp_path / "myspec.py")
    exec("def launcher(x):\n    return x\n", mod.__dict__)
    monkeypatch.setitem(sys.modules, "kladder_spec_abc", mod)
    assert imports.kernel_modules(_spec(kernel=mod.launcher)) == [mod.__file__]


# ---------------------------------------------------------------------------- the child's exits
def _h():
    return Harness(_spec(), Point("neg", 7, (("N", 3),), mode="imports"), "cpu", children=Children("s.py::spec"))


def test_no_modules_start_no_process(monkeypatch):
    monkeypatch.setattr("kladder.run.forkclient.run", lambda *a: pytest.fail("a process for nothing"))
    assert imports.caught_imports(_h(), []) == []


def test_the_childs_record_is_read_back(monkeypatch):
    def run(cmd, env, timeout, children):
        assert cmd[1:4] == ["-m", "kladder.run.modes.imports", cmd[3]] and cmd[4:] == ["mylib", "/x/spec.py"]
        with open(cmd[3], "w") as f:
            json.dump([{"module": "mylib", "where": "mylib.py:3", "error": "ImportError", "text": "t"}], f)
        return subprocess.CompletedProcess(cmd, 0, "", "")
    monkeypatch.setattr("kladder.run.forkclient.run", run)
    assert imports.caught_imports(_h(), ["mylib", "/x/spec.py"])[0]["where"] == "mylib.py:3"


@pytest.mark.parametrize("outcome, text", [
    (subprocess.CompletedProcess([], 1, "", "Traceback\nSyntaxError: bad\n"), "SyntaxError: bad"),
    (subprocess.CompletedProcess([], -9, "", ""), "exited -9"),
    (subprocess.TimeoutExpired("cmd", 1.0), "did not finish within"),
])
def test_a_child_that_fails_is_the_specs_problem_never_the_kernels(monkeypatch, outcome, text):
    def run(cmd, env, timeout, children):
        if isinstance(outcome, Exception):
            raise outcome
        return outcome
    monkeypatch.setattr("kladder.run.forkclient.run", run)
    with pytest.raises(SpecBroken) as e:
        imports.caught_imports(_h(), ["mylib"])
    assert e.value.note.kind == NoteKind.PROCESS_FAILED and e.value.note.facts.label == "import tracing"
    assert text in e.value.note.facts.text


# ---------------------------------------------------------------------------- the tracer
def _quiet_import():
    try:                                           # noqa: SIM105 - the way a library takes its other path
        import kladder_no_such_module_for_the_tracer  # noqa: F401
    except ImportError:
        pass


def _passes_through():
    _quiet_import()
    try:                                           # noqa: SIM105
        _raise_import_error()
    except ImportError:
        pass
    try:
        raise KeyError("not an import")
    except KeyError:
        pass


def _raise_import_error():
    raise ImportError("cannot import name 'fast_path' from 'mylib'\nsecond line")


def _traced(fn):
    tracer = imports.ImportErrorTracer()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return tracer.seen


def test_the_tracer_records_each_import_error_once_where_it_was_raised():
    seen = _traced(_passes_through)
    assert [s["error"] for s in seen] == ["ModuleNotFoundError", "ImportError"]      # the KeyError is not one
    assert seen[0]["module"] == __name__ and seen[0]["where"].startswith("test_imports.py:")
    line = _raise_import_error.__code__.co_firstlineno + 1
    assert seen[1]["where"] == f"test_imports.py:{line}"                           # raised there, not in its caller
    assert seen[1]["text"] == "cannot import name 'fast_path' from 'mylib'"           # its first line


def test_the_text_is_cut_at_300_characters():
    def long():
        try:
            raise ImportError("x" * 500)
        except ImportError:
            pass
    assert _traced(long)[0]["text"] == "x" * 300


def test_the_child_writes_what_the_imports_caught(tmp_path):
    (tmp_path / "quiet_mod.py").write_text("try:\n    from json import nothing_here\nexcept ImportError:\n    pass\n")
    out = tmp_path / "caught.json"
    try:
        assert imports.child([str(out), str(tmp_path / "quiet_mod.py"), str(tmp_path / "missing.py")]) == 0
    finally:
        sys.settrace(None)
    (seen,) = json.loads(out.read_text())
    assert seen["where"] == "quiet_mod.py:2" and "nothing_here" in seen["text"]


# ---------------------------------------------------------------------------- the mode
def test_the_mode_yields_the_contracts_what_the_call_ran_and_the_call(monkeypatch):
    monkeypatch.setattr(imports, "caught_imports", lambda h, targets: [{"targets": targets}])
    spec = _spec(imp=[f"{__name__}:my_launcher", f"{__name__}:gone"])
    out = list(imports.MODE.observe(Harness(spec, Point("neg", 7, (("N", 3),), mode="imports"), "cpu")))
    assert [type(o) for o in out] == [Imported, Call]
    imp = out[0]
    assert imp.resolved[0] == (f"{__name__}:my_launcher", my_launcher, None)
    assert imp.resolved[1][1] is None and imp.resolved[1][2]["error"] == "AttributeError"
    assert my_launcher.__code__ in imp.called and imp.launched == []
    assert imp.caught == [{"targets": [__name__]}] and imp.traced == [__name__]
    assert torch.equal(out[1].returned, -out[1].prep.inputs.args[0])
