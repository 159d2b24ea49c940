"""run/modes/independence.py on the CPU: the launcher's own code objects (a chain's links too), the
Triton kernels a launch list names, how the reference is named, and the kernel and reference
each traced once with torch ops as kernels: what each called, a torch op under test and the
reference's calls of it, a reference that raises (the spec's) or runs out of memory (nobody's)."""
import functools
from types import SimpleNamespace

import pytest
import torch

import kladder as kl
from kladder.core.outcome import NoteKind, SpecBroken
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import independence as ind
from kladder.run.modes.base import Call, Traces


def add_launcher(x):
    return _add_body(x)


def _add_body(x):
    return torch.add(x, x)


def twice_reference(x):
    return 2 * x


def test_the_launchers_are_the_kernels_code_or_each_links():
    assert ind._launchers(SimpleNamespace(kernel=add_launcher)) == {add_launcher.__code__}
    assert ind._launchers(SimpleNamespace(kernel=torch.add)) == set()          # a builtin has no code of its own

    def quant(x):
        return x, x

    def gemm(xq, xs):
        return xq
    chained = kl.chain(kl.Link(quant, outputs=("xq", "xs")), kl.Link(gemm, outputs=("y",)))
    assert ind._launchers(SimpleNamespace(kernel=chained)) == {quant.__code__, gemm.__code__}


def test_a_launched_kernel_is_named_with_its_file_and_line():
    def body(x_ptr):
        return x_ptr
    jit = SimpleNamespace(fn=body)                                    # a @triton.jit object wraps its function
    launched = SimpleNamespace(seen=[SimpleNamespace(fn=jit, name="body"), SimpleNamespace(fn=len, name="native")])
    found = ind._jit(launched)
    assert found[body] == f"body (test_independence.py:{body.__code__.co_firstlineno})"
    assert found[len] == "native"


def test_the_reference_is_named_by_its_qualified_name_then_its_name_then_its_type():
    assert ind._name(twice_reference) == "twice_reference"
    assert ind._name(functools.partial(twice_reference)) == "partial"  # a partial has neither name

    class Ref:
        def __call__(self, x):
            return x
    assert ind._name(Ref()) == "Ref"


def _spec(kernel, reference):
    return kl.Spec("s", kernel=kernel, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 8)}, returns=kl.Tensor("N", like="x"))


def _observe(kernel, reference):
    return list(ind.MODE.observe(Harness(_spec(kernel, reference), Point("s", 3, (("N", 4),), mode="independence"), "cpu")))


def test_the_kernel_and_the_reference_are_each_traced_and_then_judged_as_a_call():
    traces, call = _observe(add_launcher, twice_reference)
    assert isinstance(traces, Traces) and isinstance(call, Call)
    assert {c.co_name for c in traces.kernel_called} >= {"add_launcher", "_add_body"}
    assert "twice_reference" not in {c.co_name for c in traces.kernel_called}
    assert {c.co_name for c in traces.reference_called} >= {"twice_reference"}
    assert not {"add_launcher", "_add_body"} & {c.co_name for c in traces.reference_called}
    assert traces.launchers == {add_launcher.__code__} and traces.torch_op is None
    assert (traces.kernel_gpu, traces.reference_gpu, traces.kernel_jit, traces.reference_jit) == ({}, {}, {}, {})
    assert traces.reference == "twice_reference" and traces.kernel_bodies == set()
    assert torch.equal(call.returned, 2 * call.prep.inputs.args[0])


def test_a_torch_op_under_test_counts_the_references_calls_of_it():
    def sin_reference(x):
        return torch.sin(x.double()).float()
    traces, _ = _observe(torch.sin, sin_reference)
    assert traces.torch_op == "sin" and traces.reference_op_calls == ["torch sin"]
    traces, _ = _observe(torch.sin, lambda x: x - x ** 3 / 6 + x ** 5 / 120 - x ** 7 / 5040 + x ** 9 / 362880)
    assert traces.reference_op_calls == []


def test_a_reference_that_raises_is_the_specs_and_one_out_of_memory_nobodys():
    def broken(x):
        raise ValueError("reference: bad axis")
    with pytest.raises(SpecBroken) as e:
        _observe(add_launcher, broken)
    assert e.value.note.kind == NoteKind.REFERENCE_RAISED and e.value.note.facts.error == "ValueError"

    def hungry(x):
        raise MemoryError("out of memory")
    with pytest.raises(MemoryError):
        _observe(add_launcher, hungry)
