"""run/settings.py: a torch setting changed for a block and put back on every path, and the
finder that runs a hook right after a module is executed (how Inductor's `deterministic` flag is
set without importing it)."""
import sys
import types

import pytest
import torch

from kladder.run import settings
from kladder.run.settings import _AfterImport, torch_setting


def test_num_threads_is_set_inside_and_put_back_after_yielding_what_it_was():
    was = torch.get_num_threads()
    with torch_setting("num_threads", 1 if was != 1 else 2) as before:
        assert before == was and torch.get_num_threads() == (1 if was != 1 else 2)
    assert torch.get_num_threads() == was


def test_fill_uninitialized_memory_is_put_back_when_the_block_raises():
    was = torch.utils.deterministic.fill_uninitialized_memory
    with pytest.raises(ZeroDivisionError), torch_setting("fill_uninitialized_memory", not was):
        assert torch.utils.deterministic.fill_uninitialized_memory is (not was)
        raise ZeroDivisionError
    assert torch.utils.deterministic.fill_uninitialized_memory is was


def test_an_unknown_setting_is_refused_before_anything_changes():
    with pytest.raises(KeyError), torch_setting("deterministic", True):
        pass


def test_after_import_runs_its_hook_once_right_after_the_module_is_executed(tmp_path, monkeypatch):
    (tmp_path / "kl_after_import_probe.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    finder = _AfterImport("kl_after_import_probe", lambda m: seen.append(m.VALUE))
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    try:
        import kl_after_import_probe  # noqa: F401
        assert seen == [1]
        assert finder not in sys.meta_path                 # it removes itself: once
        assert finder.find_spec("another_module") is None
    finally:
        sys.modules.pop("kl_after_import_probe", None)


def test_the_hook_sets_inductors_flag_from_torchs_setting():
    config = types.SimpleNamespace(deterministic=None)
    was = torch.are_deterministic_algorithms_enabled()
    try:
        # torch's own setter without torch.use_deterministic_algorithms' import of Inductor (seconds)
        torch._C._set_deterministic_algorithms(True, warn_only=True)
        settings._inductor_deterministic(config)
        assert config.deterministic is True
        torch._C._set_deterministic_algorithms(False)
        settings._inductor_deterministic(config)
        assert config.deterministic is False
    finally:
        torch._C._set_deterministic_algorithms(was, warn_only=True)


@pytest.fixture
def deterministic_back():
    was = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch._C._set_deterministic_algorithms(was, warn_only=warn)


def test_deterministic_on_sets_an_imported_inductor_configs_flag_at_once(monkeypatch, deterministic_back):
    config = types.SimpleNamespace(deterministic=False)
    monkeypatch.setitem(sys.modules, settings.INDUCTOR_CONFIG, config)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    before = list(sys.meta_path)
    settings.deterministic_on()
    assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    assert config.deterministic is True and sys.meta_path == before


def test_deterministic_on_without_inductor_waits_for_its_import_with_one_finder(monkeypatch, deterministic_back):
    modules = {k: v for k, v in sys.modules.items() if k != settings.INDUCTOR_CONFIG}
    monkeypatch.setattr(sys, "modules", modules)
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, _AfterImport)])
    settings.deterministic_on()
    settings.deterministic_on()
    hooks = [f for f in sys.meta_path if isinstance(f, _AfterImport)]
    assert len(hooks) == 1 and sys.meta_path[0] is hooks[0] and hooks[0].name == settings.INDUCTOR_CONFIG
    assert settings.INDUCTOR_CONFIG not in sys.modules          # not imported by it
