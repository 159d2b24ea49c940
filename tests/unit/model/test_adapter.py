"""model/adapter.py: a target resolved to (owner, attribute) or refused with the form expected;
a patch undone on error, an inherited method deleted again; the Adapter's checks and scores."""
import sys
import types

import pytest

from kladder.model.adapter import Adapter, TargetError, patched, resolve_target


class Base:
    def hello(self):
        return "base"


class Child(Base):
    def own(self):
        return "own"


class Outer:
    class Inner:
        @staticmethod
        def deep():
            return "deep"


def greet():
    return "hi"


@pytest.fixture
def mod():
    m = types.ModuleType("kl_adapter_fixture")
    m.Base, m.Child, m.Outer, m.greet = Base, Child, Outer, greet
    sys.modules[m.__name__] = m
    yield m
    del sys.modules[m.__name__]


def test_resolve_target_walks_the_attribute_path(mod):
    assert resolve_target("kl_adapter_fixture:greet") == (mod, "greet")
    assert resolve_target("kl_adapter_fixture:Outer.Inner.deep") == (Outer.Inner, "deep")


@pytest.mark.parametrize("target,words", [
    ("kl_adapter_fixture", "write 'package.module:function'"),
    (":greet", "write 'package.module:function'"),
    ("kl_adapter_fixture:", "write 'package.module:function'"),
    ("no_such_module_kl:f", "cannot import 'no_such_module_kl'"),
    ("kl_adapter_fixture:Nope.f", "has no attribute 'Nope'"),
    ("kl_adapter_fixture:Child.nope", "has no attribute 'nope'"),
])
def test_a_bad_target_is_a_target_error_naming_it(mod, target, words):
    with pytest.raises(TargetError, match=words) as e:
        resolve_target(target)
    assert repr(target) in str(e.value) and isinstance(e.value, ValueError)


def test_patched_replaces_inside_the_block_and_restores_after_an_error(mod):
    with pytest.raises(RuntimeError), patched("kl_adapter_fixture:greet", lambda: "patched"):
        assert mod.greet() == "patched"
        raise RuntimeError
    assert mod.greet is greet


def test_patching_an_inherited_method_leaves_no_copy_behind(mod):
    with patched("kl_adapter_fixture:Child.hello", lambda self: "patched"):
        assert Child().hello() == "patched" and Base().hello() == "base"
    assert "hello" not in vars(Child) and Child().hello() == "base"
    own = vars(Child)["own"]
    with patched("kl_adapter_fixture:Child.own", lambda self: "patched"):
        assert Child().own() == "patched"
    assert vars(Child)["own"] is own and Child().own() == "own"


def test_the_adapter_checks_its_arguments_when_made(mod):
    with pytest.raises(TypeError, match=r"Adapter\(evaluate=3\): give a callable"):
        Adapter("kl_adapter_fixture:greet", 3)
    with pytest.raises(TypeError, match=r"Adapter\(wrap='x'\): give a callable kernel -> replacement"):
        Adapter("kl_adapter_fixture:greet", lambda: 1.0, wrap="x")
    with pytest.raises(TargetError):
        Adapter("kl_adapter_fixture:nothing", lambda: 1.0)


def test_score_takes_a_score_or_a_score_and_samples_and_keeps_the_samples(mod):
    a = Adapter("kl_adapter_fixture:greet", lambda: (1 if mod.greet() == "hi" else 0, iter(["s1", "s2"])))
    assert a.score() == 1.0 and isinstance(a.score(), float) and a.samples == ["s1", "s2"]
    assert a.score(lambda: "bye") == 0.0 and mod.greet is greet
    plain = Adapter("kl_adapter_fixture:greet", lambda: 0.5)
    plain.samples = ["old"]
    assert plain.score() == 0.5 and plain.samples == []


def test_without_wrap_the_kernel_is_the_replacement():
    a = Adapter("os.path:join", lambda: 1.0)
    assert a.wrap(len) is len
    b = Adapter("os.path:join", lambda: 1.0, wrap=lambda k: (lambda *a: k(a)))
    assert b.wrap(len)(1, 2, 3) == 3
