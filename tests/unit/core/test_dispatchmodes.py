"""core/dispatchmodes.py: a TorchDispatchMode's first call without importing torch._dynamo, and
the modes kladder enters in a worker hooked so (the guarded allocations, the peer's backward rounding)."""
import sys
import types

import torch

from kladder.core import dispatchmodes
from kladder.core.dispatchmodes import dynamo_disable_when_imported


def test_dynamo_disable_when_imported_leaves_a_class_without_a_wrapped_dispatch_alone():
    class Plain:
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func
    before = dict(vars(Plain.__torch_dispatch__))
    dynamo_disable_when_imported(Plain)
    assert dict(vars(Plain.__torch_dispatch__)) == before


def test_dynamo_disable_when_imported_calls_the_function_directly_while_dynamo_is_absent(monkeypatch):
    calls = []

    def fn(*a):
        calls.append(("fn", a))
        return "direct"

    def raw(*a):
        calls.append(("raw", a))
        return "disabled"
    raw.__wrapped__ = fn
    cls = type("Mode", (), {"__torch_dispatch__": raw})
    dynamo_disable_when_imported(cls)
    hook = getattr(fn, "__dynamo_disable")
    modules = {k: v for k, v in sys.modules.items() if k != "torch._dynamo"}
    monkeypatch.setattr(sys, "modules", modules)
    assert hook(1) == "direct" and calls == [("fn", (1,))]
    modules["torch._dynamo"] = types.ModuleType("torch._dynamo")
    assert hook(2) == "disabled" and calls[-1] == ("raw", (2,))
    assert getattr(fn, "__dynamo_disable", None) is None     # torch's own path from then on
    dynamo_disable_when_imported(cls)               # a second call on an already hooked one: a new hook
    assert getattr(fn, "__dynamo_disable") is not hook



def test_the_peers_backward_rounding_is_hooked_and_rounds_as_before():
    from kladder.checks import peer
    mode = peer.backward_rounding(torch.Generator().manual_seed(0), 2.0 ** -8)
    fn = type(mode).__dict__["__torch_dispatch__"].__wrapped__
    if "torch._dynamo" not in sys.modules:                 # hooked until dynamo is imported, then torch's own
        assert getattr(fn, "__dynamo_disable", None) is not None
    x = torch.full((64,), 3.0)
    with mode:
        y = x * 1.0
    assert not torch.equal(y, x) and torch.allclose(y, x, rtol=0.05)     # moved, by about its unit
    assert dispatchmodes.dynamo_disable_when_imported is dynamo_disable_when_imported
