"""run/modes/tracing.py: whose code is machinery, the Python tracer (functions called, a torch
op's calls), torch ops' names, and the interpreter's model of a launch's code (what changes it and
what does not), without running a Triton kernel: plain functions stand in for @triton.jit ones."""
import functools
import json
import math
import sys

import pytest
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import tracing
from kladder.run.modes.tracing import Launch, Tracer, plain, torch_op_name


@pytest.mark.parametrize("path, machinery", [
    ("/usr/lib/python3.11/json/__init__.py", True),
    ("/site-packages/torch/nn/functional.py", True),
    ("/site-packages/triton/language/core.py", True),
    ("/site-packages/numpy/core/numeric.py", True),
    ("/work/main/src/kladder/run/harness.py", True),
    ("/work/main/src/kladder/zoo/small_overrun.py", False),     # the zoo's kernels are kernels
    ("<frozen importlib._bootstrap>", True),
    ("<string>", True),
    ("/home/me/mylib/ops.py", False),
])
def test_machinery_is_torch_triton_numpy_the_standard_library_and_kladder_but_its_zoo(path, machinery):
    assert tracing.is_machinery(path) is machinery


# ---------------------------------------------------------------------------- the tracer
def _inner(x):
    return x + 1


def _launcher(x):
    return _inner(x) * 2


def test_the_tracer_records_the_users_functions_first_called_first_and_restores_the_profiler():
    before = sys.getprofile()
    with Tracer() as t:
        (lambda: _launcher(torch.ones(2)))()
        _inner(torch.ones(1))
    assert sys.getprofile() is before
    assert t.functions() == ["_launcher", "_inner"]                  # <lambda>: no name to expect; each once
    names = set(t.called.values())
    assert any(n.startswith("_inner (test_tracing.py:") for n in names)
    assert all("functional" not in n for n in names) and not t.kernels   # torch's code is not recorded


def test_a_function_the_interpreter_calls_is_a_kernel_body_and_the_interpreter_is_not_recorded():
    namespace = {}
    exec(compile("def run(body, x):\n    return body(x)\n", "/site-packages/triton/runtime/interpreter.py", "exec"),
         namespace)
    with Tracer() as t:
        namespace["run"](_inner, 1)
        _launcher(1)
    assert t.kernels == {_inner.__code__}                              # called from Triton's frame: a body
    assert [c.co_name for c in t.called] == ["_inner", "_launcher"]     # the interpreter itself: machinery


def test_a_torch_op_is_seen_however_it_is_called_and_others_are_not():
    x = torch.ones(3)
    with Tracer("sin") as t:
        torch.sin(x)
        x.sin()
        torch.cos(x)
        math.sin(1.0)                                                # a builtin of the same name, not torch's
    assert t.op_calls == ["torch sin", "torch sin"]
    with Tracer() as t:
        torch.sin(x)
    assert t.op_calls == []                                          # no op asked: none recorded


def test_torch_op_names_through_partials_and_packets_and_none_for_the_users_or_others_code():
    assert torch_op_name(functools.partial(functools.partial(torch.add, alpha=2))) == "add"
    assert torch_op_name(torch.ops.aten.sin) == "sin"
    assert torch_op_name(_launcher) is None
    assert torch_op_name(math.sin) is None
    assert torch_op_name(object()) is None


# ---------------------------------------------------------------------------- values as JSON holds them
class constexpr:          # Triton's wrapper, recognised by its class's name
    def __init__(self, value):
        self.value = value


@pytest.mark.parametrize("value, held", [
    (constexpr(64), 64), (None, None), (True, True), (7, 7), ("ieee", "ieee"), (0.5, 0.5),
    (float("nan"), "nan"), (float("inf"), "inf"), (float("-inf"), "-inf"),
    (torch.float16, "torch.float16"), ("x" * 100, "x" * 100),
])
def test_plain_values_are_strict_json(value, held):
    assert plain(value) == held
    json.dumps(plain(value), allow_nan=False)


def test_an_objects_repr_is_cut_at_80_characters():
    class Long:
        def __repr__(self):
            return "L" * 200
    assert plain(Long()) == "L" * 80


@pytest.mark.parametrize("value, kind", [
    (torch.ones(1, dtype=torch.bfloat16), "*torch.bfloat16"), (True, "i1"), (1, "1"), (0, "i%16"), (32, "i%16"),
    (-16, "i%16"), (17, "i32"), (2**31 - 1, "i32"), (-2**31 + 1, "i32"), (2**31 + 1, "i64"), (-2**31 - 1, "i64"),
    (2.5, "fp32"), (None, "none"), ("s", "str"),
])
def test_how_an_argument_specialises(value, kind):
    assert tracing._specialize(value) == kind


# ---------------------------------------------------------------------------- a launch's code, modelled
def _kernel(x_ptr, n, BLOCK: constexpr, UNUSED: constexpr = 0, EVEN: "tl.constexpr" = False):  # noqa: F821 - a string, as Triton reads it
    offs = BLOCK + n
    if EVEN:
        offs = offs + 1
    return x_ptr, offs


class _Jit:
    fn = staticmethod(_kernel)


def _code(*args, **kwargs):
    return tracing.launch_of(_Jit(), args, kwargs, None)


def test_the_constexprs_and_options_are_the_params_and_only_read_ones_change_the_code():
    x = torch.ones(4)
    a = _code(x, 17, BLOCK=64, num_warps=4)
    assert (a.name, a.how, a.asm) == ("_kernel", "source", {})
    assert a.params == {"BLOCK": 64, "UNUSED": 0, "EVEN": False, "num_warps": 4}   # defaults applied
    assert _code(x, 17, BLOCK=64, UNUSED=9, num_warps=4).code == a.code              # never read: same code
    assert _code(x, 17, BLOCK=128, num_warps=4).code != a.code
    assert _code(x, 17, BLOCK=64, EVEN=True, num_warps=4).code != a.code
    assert _code(x, 17, BLOCK=64, num_warps=8).code != a.code                       # a launch option
    assert _code(x, 19, BLOCK=64, num_warps=4).code == a.code                       # both plain i32
    assert _code(x, 32, BLOCK=64, num_warps=4).code != a.code                       # divisible by 16
    assert _code(x.half(), 17, BLOCK=64, num_warps=4).code != a.code                # another pointer dtype
    d = a.to_dict()
    assert set(d) == {"name", "params", "code", "how", "asm"}
    json.dumps(d, allow_nan=False)


def test_the_names_a_body_reads():
    assert {"BLOCK", "n", "EVEN", "offs", "x_ptr"} <= tracing.used_names(_kernel)
    assert "UNUSED" not in tracing.used_names(_kernel)
    assert tracing.used_names(len) == {"obj"}                        # no source: every parameter counts


def test_arguments_bind_to_their_names_with_defaults_and_too_many_still_bind_in_order():
    assert tracing._bound(_kernel, (1, 2), {"BLOCK": 3, "num_warps": 4}) == {
        "x_ptr": 1, "n": 2, "BLOCK": 3, "UNUSED": 0, "EVEN": False}
    assert tracing._bound(_kernel, (1, 2, 3, 4, 5, 6), {}) == {"x_ptr": 1, "n": 2, "BLOCK": 3, "UNUSED": 4, "EVEN": 5}


def test_a_binary_and_its_assembly_are_digested_and_what_a_backend_lacks_is_left_out():
    class Compiled:
        kernel = bytearray(b"cubin")
        asm = {"ptx": "text", "cubin": b"cubin"}
    assert len(tracing._binary_digest(Compiled())) == 32
    assert tracing._binary_digest(object()) == "" and tracing._asm_digests(object()) == {}
    digests = tracing._asm_digests(Compiled())
    assert set(digests) == {"ptx", "cubin"} and all(len(v) == 16 for v in digests.values())
    assert tracing.launch_of(_Jit(), (None, 1), {"BLOCK": 2}, Compiled()).how == "binary"


def test_without_triton_imported_nothing_is_patched(monkeypatch):
    monkeypatch.delitem(sys.modules, "triton", raising=False)
    assert tracing._launch_classes() == []
    with tracing.Launches() as seen:
        pass
    assert seen.seen == [] and seen._patched == []


def test_a_launch_equals_another_whatever_its_function_object():
    assert Launch("k", {}, "c", "source", fn=1) == Launch("k", {}, "c", "source", fn=2)


# ---------------------------------------------------------------------------- one traced call
def test_a_traced_call_on_the_cpu_returns_the_value_and_what_it_ran():
    spec = kl.Spec("add1", kernel=_launcher, reference=lambda x: (x + 1) * 2, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", like="x"))
    h = Harness(spec, Point("add1", 7, (("N", 5),)), "cpu")
    prep = h.prepare()
    returned, ran = tracing.traced_call(h, prep, "traced once")
    assert torch.equal(returned, (prep.inputs.args[0] + 1) * 2)
    assert (ran.launches, ran.gpu, ran.label) == ([], [], "traced once")
    assert ran.functions[:2] == ["_launcher", "_inner"]
