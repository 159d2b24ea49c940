"""gen/load.py: a spec found from PATH.py::NAME, module::NAME or a file with one spec; many
specs from a folder or a package; every bad reference and every import failure one LoadError
that names the file, the line and the fix."""
import os
import sys
import textwrap

import pytest

from kladder.core.errors import LoadError
from kladder.core.spec import SpecError
from kladder.gen import load

SPEC = """
import kladder as kl
{name} = kl.Spec({title!r}, kernel=lambda x: x, reference=lambda x: x, args={{"x": kl.Tensor("N", dtype="float32")}},
                 returns=kl.Tensor("N", like="x"), dims={{"N": kl.Dim(1, {n})}})
"""


def write(path, *specs, extra=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(SPEC.format(name=name, title=title, n=n) for name, title, n in specs)
    path.write_text(textwrap.dedent(body) + extra)
    return str(path)


# ---------------------------------------------------------------------------- references
def test_split_ref_and_what_counts_as_a_path():
    assert load.split_ref("a/b.py::rms") == ("a/b.py", "rms")
    assert load.split_ref("pkg.mod") == ("pkg.mod", None)
    assert load._is_path("spec.py") and load._is_path(f"dir{os.sep}spec") and not load._is_path("pkg.mod")


@pytest.mark.parametrize("ref,words", [
    ("::rms", "give PATH.py::NAME or module::NAME"),
    ("spec.py::not-a-name", "'not-a-name' after '::' is not a Python name"),
    ("/nonexistent/spec.py::rms", "spec file '/nonexistent/spec.py' does not exist"),
])
def test_check_ref_refuses_with_the_fix(ref, words):
    with pytest.raises(LoadError, match=words):
        load.check_ref(ref)


def test_check_ref_refuses_a_folder_given_as_a_file(tmp_path):
    with pytest.raises(LoadError, match="is a directory; give the .py file"):
        load.check_ref(f"{tmp_path}{os.sep}::rms")


# ---------------------------------------------------------------------------- one spec
def test_load_spec_by_name_and_a_file_with_exactly_one(tmp_path):
    one = write(tmp_path / "one.py", ("rms", "rms", 64))
    assert load.load_spec(one).name == "rms"
    two = write(tmp_path / "two.py", ("a", "a", 8), ("b", "b", 8))
    assert load.load_spec(f"{two}::b").name == "b"
    with pytest.raises(LoadError, match=r"holds 2 specs \(a, b\); name one: .*two.py::NAME"):
        load.load_spec(two)
    with pytest.raises(LoadError, match="has no spec named 'c'; specs there: a, b"):
        load.load_spec(f"{two}::c")


def test_two_files_of_one_name_are_two_modules(tmp_path):
    a = write(tmp_path / "a" / "spec.py", ("s", "s", 8))
    b = write(tmp_path / "b" / "spec.py", ("s", "s", 16))
    assert load.load_spec(f"{a}::s").dims["N"].max == 8 and load.load_spec(f"{b}::s").dims["N"].max == 16
    assert str(tmp_path / "a") not in sys.path                  # the folder was on the path only while it imported


def test_two_specs_of_one_name_are_refused_unless_they_are_a_zoo_case_s_twins(tmp_path):
    dup = write(tmp_path / "dup.py", ("a", "same", 8), ("b", "same", 16))
    with pytest.raises(SpecError, match="specs 'a' and 'b' share one name"):
        load.load_spec(f"{dup}::a")
    twins = write(tmp_path / "twins.py", ("a", "same", 8), ("b", "same", 8), extra="CASE = {}\n")
    assert load.load_spec(f"{twins}::b").name == "same"
    unequal = write(tmp_path / "unequal.py", ("a", "same", 8), ("b", "same", 16), extra="CASE = {}\n")
    with pytest.raises(SpecError, match="share one name"):
        load.load_spec(f"{unequal}::a")
    alias = write(tmp_path / "alias.py", ("a", "same", 8), extra="b = a\n")
    assert load.load_spec(f"{alias}::b").name == "same"
    assert [r for r, _ in load.specs_in(alias)] == [f"{alias}::a"]        # one Spec bound to two names is one spec


# ---------------------------------------------------------------------------- import failures
def test_a_syntax_error_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import kladder\n\ndef f(:\n")
    with pytest.raises(LoadError, match=r"has a syntax error at .*bad.py, line 3: .*fix the file and climb again"):
        load.load_spec(f"{bad}::x")


def test_a_missing_package_names_it_and_the_failing_line(tmp_path):
    bad = tmp_path / "needs.py"
    bad.write_text("import kladder\nimport no_such_package_here\n")
    with pytest.raises(LoadError, match=r"failed at .*needs.py, line 2: no module named 'no_such_package_here'; install it"):
        load.load_spec(f"{bad}::x")
    assert not any(n.startswith("kladder_spec_needs_") for n in sys.modules)     # the half-imported module is gone


def test_an_exception_at_import_names_its_type_line_and_first_line_of_message(tmp_path):
    bad = tmp_path / "raises.py"
    bad.write_text("import kladder\nx = 1\nraise RuntimeError('no device\\nsecond line')\n")
    with pytest.raises(LoadError, match=r"raised RuntimeError at .*raises.py, line 3: no device; the spec module must"):
        load.load_spec(f"{bad}::x")


def test_a_module_that_is_not_there_and_one_whose_import_fails_inside():
    with pytest.raises(LoadError, match=r"cannot import 'no_such_mod_kl' .*give PATH.py::NAME or an importable module"):
        load.load_module("no_such_mod_kl")


def test_a_failure_inside_importlib_itself_names_no_line_of_kladder_s_own():
    """A relative module name fails in importlib, before any user code runs: the error has no
    user frame to name, and must not name kladder's own load.py as where the spec failed."""
    with pytest.raises(LoadError) as e:
        load.load_module(".relative_spec")
    msg = str(e.value)
    assert msg.startswith("importing spec '.relative_spec' raised TypeError: the 'package' argument is required")
    assert "load.py" not in msg


def test_a_spec_error_at_import_is_the_spec_s_own(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("import kladder as kl\nkl.Spec('b', kernel=None, reference=None, args={}, dims={})\n")
    with pytest.raises(SpecError):
        load.load_spec(f"{bad}::b")


# ---------------------------------------------------------------------------- many specs
def test_spec_files_are_sorted_and_leave_out_the_files_that_hold_no_spec(tmp_path):
    write(tmp_path / "b.py", ("b", "b", 8))
    write(tmp_path / "a" / "z.py", ("z", "z", 8))
    write(tmp_path / "_private.py", ("p", "p", 8))
    write(tmp_path / "conftest.py", ("c", "c", 8))
    write(tmp_path / ".hidden" / "h.py", ("h", "h", 8))
    write(tmp_path / "__pycache__" / "q.py", ("q", "q", 8))
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("kladder\n")
    assert load.spec_files(str(tmp_path)) == [str(tmp_path / "b.py"), str(tmp_path / "a" / "z.py")]   # a folder's files, then its folders


def test_a_folder_names_every_spec_under_it(tmp_path):
    write(tmp_path / "x.py", ("one", "one", 8), ("two", "two", 8))
    write(tmp_path / "sub" / "y.py", ("three", "three", 8))
    assert load.is_many(str(tmp_path)) and not load.is_many(str(tmp_path / "x.py"))
    assert load.refs_in(str(tmp_path)) == [f"{tmp_path / 'x.py'}::one", f"{tmp_path / 'x.py'}::two",
                                           f"{tmp_path / 'sub' / 'y.py'}::three"]


def test_a_folder_without_a_spec_says_how_many_files_it_read(tmp_path):
    (tmp_path / "m.py").write_text("import kladder\n")
    with pytest.raises(LoadError, match=r"no kl.Spec found under .* \(in 1 .py files that mention kladder\)"):
        load.specs_in(str(tmp_path))


def test_a_package_names_the_specs_of_its_modules(tmp_path, monkeypatch):
    pkg = tmp_path / "klpkg_unit"
    write(pkg / "rows.py", ("r", "r", 8))
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert load.is_many("klpkg_unit") and not load.is_many("klpkg_unit::r")
        assert load.refs_in("klpkg_unit") == ["klpkg_unit.rows::r"]
        assert load.refs_in("klpkg_unit.rows") == ["klpkg_unit.rows::r"]
        assert load.load_spec("klpkg_unit.rows::r").name == "r"
    finally:
        for n in [n for n in sys.modules if n.startswith("klpkg_unit")]:
            del sys.modules[n]


def test_a_module_without_a_spec_is_refused(tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("import kladder\n")
    with pytest.raises(LoadError, match=r"holds no kl.Spec; give PATH.py::NAME"):
        load.specs_in(str(empty))
