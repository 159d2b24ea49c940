"""kladder/__init__.py: the public names, imported at their first use (PEP 562), and the thin
wrappers that forward to their homes."""
import importlib

import pytest

import kladder
from kladder.core import chain as chain_module


@pytest.mark.parametrize("name", sorted(kladder._HOME))
def test_each_lazy_name_is_its_homes_object_and_is_kept_after_its_first_use(name, monkeypatch):
    home = importlib.import_module(f"kladder.{kladder._HOME[name]}")
    monkeypatch.delitem(kladder.__dict__, name, raising=False)        # as before its first use
    assert name not in kladder.__dict__
    assert getattr(kladder, name) is getattr(home, name)
    assert kladder.__dict__[name] is getattr(home, name)                # cached: __getattr__ is not asked again


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="module 'kladder' has no attribute 'Nope'"):
        kladder.Nope                                                     # noqa: B018
    assert not hasattr(kladder, "spec_of")


def test_dir_lists_the_lazy_names_before_their_use():
    names = dir(kladder)
    assert names == sorted(names)
    assert set(kladder._HOME) <= set(names) and {"climb", "chain", "__version__"} <= set(names)


def test_every_name_in_all_resolves():
    for name in kladder.__all__:
        assert getattr(kladder, name) is not None, name
    assert len(kladder.__all__) == len(set(kladder.__all__))
    from kladder import Spec, Tensor  # noqa: F401 - the from-import path goes through __getattr__ too


def test_chain_is_the_function_not_its_submodule():
    assert kladder.chain is chain_module.chain and kladder.Link is chain_module.Link
    assert callable(kladder.chain)


def test_capture_forwards_its_arguments(monkeypatch):
    import kladder.gen.capturing as capturing
    seen = []
    monkeypatch.setattr(capturing, "capture", lambda target, to, **kw: seen.append((target, to, kw)) or "ctx")
    assert kladder.capture("pkg.mod:fn", to="caps", limit=3) == "ctx"
    assert seen == [("pkg.mod:fn", "caps", {"limit": 3})]


def test_climb_forwards_every_option(monkeypatch):
    import kladder.tools.api as api
    seen = {}
    monkeypatch.setattr(api, "climb_spec", lambda spec, **kw: seen.update(spec=spec, **kw) or "report")
    assert kladder.climb("s.py::x", rungs="1-2", device="cpu", timeout_s=5.0, jobs=2, seed=7) == "report"
    assert seen == {"spec": "s.py::x", "rungs": "1-2", "device": "cpu", "timeout_s": 5.0, "log_path": None, "jobs": 2,
                    "seed": 7}


def test_assert_close_forwards_to_the_judge():
    import torch
    kladder.assert_close(torch.ones(3), torch.ones(3, dtype=torch.float64))
    with pytest.raises(AssertionError, match="head line"):
        kladder.assert_close(torch.ones(3), torch.zeros(3, dtype=torch.float64), msg="head line")


def test_inputs_forwards_spec_point_and_device(monkeypatch):
    import kladder.tools.testing as testing
    seen = []
    monkeypatch.setattr(testing, "inputs", lambda spec, point, device: seen.append((spec, point, device)) or {"x": 1})
    assert kladder.inputs("s.py::x", "{...}") == {"x": 1}
    assert kladder.inputs("s.py::x", "{...}", device="cpu") == {"x": 1}
    assert seen == [("s.py::x", "{...}", None), ("s.py::x", "{...}", "cpu")]
