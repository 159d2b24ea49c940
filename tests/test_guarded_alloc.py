"""The guards around the tensors a kernel allocates itself (run/guarded_alloc.py): what the
hook serves, what it catches (a write past a returned output, past a scratch buffer), and that
a correct kernel's climb is the same with it as without it."""
import contextlib
import os

import pytest
import torch

import kladder as kl
from kladder.checks import _allocation_findings
from kladder.climbing.ladder import rung_points
from kladder.core.point import Point
from kladder.report.words import message
from kladder.run import harness
from kladder.run.guarded_alloc import KERNEL_GUARD_BYTES, guarding
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET, is_big
from kladder.zoo import empty_like_overrun

from specs.torch_ops import SPECS


@pytest.fixture
def deterministic():
    """As the worker runs (run/worker.py): torch.empty comes back NaN-filled."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was)


def test_factory_ops_are_served_from_guarded_buffers(deterministic):
    x = torch.randn(4, 3)
    with guarding("cpu") as allocated:
        made = {"empty_like": torch.empty_like(x), "empty": torch.empty(5, dtype=torch.int32),
                "new_empty": x.new_empty(7), "zeros_like": torch.zeros_like(x), "full": torch.full((3,), 2.0),
                "empty_strided": torch.empty_strided((2, 3), (1, 2))}
        y = x + x                                    # a torch op's own output: allocated below the mode
    assert [a.op for a in allocated] == list(made)
    for a, t in zip(allocated, made.values(), strict=False):
        assert t._base is None and t.untyped_storage().data_ptr() == a.ptr
        assert t.data_ptr() == a.ptr + KERNEL_GUARD_BYTES        # the guard's offset, then the tensor
        assert a.g.damaged() == ([], [])
    assert made["empty_strided"].stride() == (1, 2) and made["empty_like"].shape == (4, 3)
    assert torch.isnan(made["empty_like"]).all() and (made["empty"] == 2**31 - 1).all()   # torch's own fill
    assert (made["zeros_like"] == 0).all() and (made["full"] == 2).all()
    assert y.untyped_storage().data_ptr() not in {a.ptr for a in allocated}


def test_a_write_past_a_returned_output_names_it_and_one_past_scratch_names_the_scratch():
    x = torch.randn(10)
    with guarding("cpu") as allocated:
        out = torch.empty_like(x)
        scratch = torch.empty(6, dtype=torch.float16)
        torch.as_strided(out, (13,), (1,))[10:].fill_(1.0)            # 3 floats past the end
        torch.as_strided(scratch, (1,), (1,), scratch.storage_offset() - 1).fill_(0)   # 1 half before the start
        del scratch                                                  # freed during the call: checked when freed
    found = _allocation_findings(allocated, {"out": out})
    assert [(f.output, f.facts.n_after, f.facts.n_before) for f in found] == [("out", 12, 0), ("", 0, 2)]
    assert found[0].facts.allocated.to_dict() == {"op": "empty_like", "shape": [10], "dtype": "float32", "returned": True}
    assert found[1].facts.allocated.to_dict() == {"op": "empty", "shape": [6], "dtype": "float16", "returned": False}
    assert allocated[1].freed and allocated[1].g.buf.numel() == 2 * KERNEL_GUARD_BYTES   # the buffer was let go


def test_scratch_freed_intact_during_the_call_is_not_kept():
    with guarding("cpu") as allocated:
        for _ in range(50):
            torch.empty(1 << 16).fill_(1.0)                          # a launcher's temporaries in a loop
    assert len(allocated) == 50 and all(a.freed and a.g.buf is None for a in allocated)
    assert _allocation_findings(allocated, {}) == []


def test_nothing_is_guarded_with_guard_zero_and_intact_guards_give_no_finding():
    with guarding("cpu", 0) as off:
        torch.empty(3)
    assert off == []
    with guarding("cpu") as on:
        out = torch.empty(3)
        out.fill_(1.0)
    assert _allocation_findings(on, {"out": out}) == []


def _spec(kernel):
    return kl.Spec("k", kernel=kernel, reference=lambda a: a * 2, args={"a": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="a"), dims={"N": kl.Dim(1, 64)})


def _overrun(a):
    out = torch.empty_like(a)
    torch.as_strided(out, (a.numel() + 5,), (1,)).copy_(torch.cat([a * 2, torch.zeros(5)]))
    return out


def _scratch_overrun(a):
    work = a.new_empty(a.shape)
    torch.as_strided(work, (a.numel() + 1,), (1,)).fill_(0.0)
    return a * 2


def test_a_point_fails_with_the_guard_finding_for_the_kernels_own_output_and_scratch():
    pt = Point("k", 1, (("N", 7),), (("a", "float32"),), seed=3)
    o = run_point(_spec(_overrun), pt, "cpu").outcome
    assert o.status == "failed" and [(f.check, f.output) for f in o.findings] == [("guard", "out")]
    assert o.findings[0].facts.n_after == 20
    o = run_point(_spec(_scratch_overrun), pt, "cpu").outcome
    assert o.status == "failed" and [(f.check, f.output) for f in o.findings] == [("guard", "")]
    assert o.findings[0].facts.allocated.op == "new_empty"


def test_the_zoo_kernel_is_caught_at_its_tail_and_not_elsewhere():
    spec, fixed = empty_like_overrun.spec, empty_like_overrun.fixed
    for n, dtype in ((1, "float32"), (1025, "float16"), (2048, "float32")):
        pt = Point("add", 1, (("N", n),), (("a", dtype),), seed=1)
        o = run_point(spec, pt, "cpu").outcome
        assert o.status == ("failed" if n % 1024 else "passed"), o
        if n % 1024:
            assert o.findings[0].check == "guard" and o.findings[0].output == "out"
        assert run_point(fixed, pt, "cpu").outcome.status == "passed"


@contextlib.contextmanager
def _no_hook(device, guard=0):
    yield []


def _outcomes(spec, seed=0):
    return [run_point(spec, p, "cpu").outcome for p in rung_points(spec, 1, CPU_BUDGET, seed)
            if p.needs != "cuda" and not is_big(spec, p.sizes)]


@pytest.mark.parametrize("name", ["softmax", "topk", "argmax", "layer_norm"])
def test_a_correct_torch_op_climbs_rung_1_the_same_with_and_without_the_hook(name, deterministic, monkeypatch):
    spec = SPECS[name]
    hooked = _outcomes(spec)
    monkeypatch.setattr(harness, "guarding", _no_hook)
    plain = _outcomes(spec)
    assert hooked and [o.status for o in hooked] == [o.status for o in plain]
    assert all(o.status in ("passed", "skipped") for o in hooked)
    assert [len(o.warnings) for o in hooked] == [len(o.warnings) for o in plain]


def test_the_hook_is_off_while_a_cuda_graph_is_captured(monkeypatch):
    # on the CPU nothing is ever captured: the check stands in for the GPU test below
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    with guarding("cuda") as allocated:
        pass
    assert allocated == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graph capture needs a GPU")
def test_capture_and_replay_work_with_the_hook_on_cuda():
    fixed = empty_like_overrun.fixed
    pt = Point("add", 4, (("N", 1000),), (("a", "float32"),), seed=1, mode="graph")
    assert run_point(fixed, pt, "cuda").outcome.status == "passed"
    pt = Point("add", 1, (("N", 1000),), (("a", "float32"),), seed=1)
    o = run_point(empty_like_overrun.spec, pt, "cuda").outcome
    assert o.status == "failed" and o.findings[0].check == "guard" and o.findings[0].facts.n_after == 96


HEAP = os.path.join(os.path.dirname(__file__), "specs", "heap_damage.py")


def test_a_crash_left_by_an_earlier_point_is_re_run_alone_with_malloc_checks_and_not_blamed(tmp_path):
    report = kl.climb(HEAP + "::later", rungs=1, device="cpu", log_path=str(tmp_path / "l.jsonl"))
    assert report.outcomes and all(o.status == "passed" for o in report.outcomes)
    warned = [w for o in report.outcomes for w in o.warnings if w.check == "crashed_not_alone"]
    assert warned, "every point after a worker's first crashes there"
    assert all(w.facts.earlier >= 1 and w.facts.signal == "SIGABRT" and w.facts.alone == "passed"
               and w.facts.heap_words == "free(): invalid pointer" for w in warned)
    assert "as damage to its heap does" in message(warned[0])


def test_a_crash_that_recurs_alone_with_malloc_checks_is_the_kernels():
    report = kl.climb(HEAP + "::always", rungs=1, device="cpu", log_path=os.devnull)
    o = report.outcomes[0]
    assert o.status == "failed" and o.headline.check == "crashed" and o.headline.facts.heap_checked
    assert "MALLOC_CHECK_=3" in o.output                     # the re-run's worker had the checks on
    assert "with glibc's malloc checks on" in message(o.headline)


@pytest.mark.skipif(not hasattr(torch.utils._python_dispatch.TorchDispatchMode, "ignore_compile_internals"),
                    reason="torch before ignore_compile_internals skips torch.compile under any dispatch mode")
def test_a_launchers_compiled_helper_is_still_compiled_under_the_hook():
    compiled = []

    def backend(gm, example_inputs):
        compiled.append(gm)
        return gm.forward

    @torch.compile(backend=backend)
    def helper(a):
        out = torch.empty_like(a)
        out.copy_(a * 2)
        return out

    torch._dynamo.reset()
    a = torch.randn(10)
    with guarding("cpu") as allocated:
        r = helper(a)
    assert compiled and torch.equal(r, a * 2)
    assert [x.op for x in allocated] == ["empty_like"]     # the compiled graph's own allocation, guarded as it runs


def test_an_output_resized_by_an_out_op_or_resize_is_not_judged_by_its_old_guards():
    a = torch.randn(300)
    with guarding("cpu") as allocated:
        placeholder = torch.empty(0)                  # the out= idiom: an empty tensor the op resizes
        torch.add(a, a, out=placeholder)
        grown = torch.empty(4)
        grown.resize_(600)                            # grows over its guard, inside the storage
        grown.fill_(1.0)
    assert [x.op for x in allocated] == ["empty"]     # the empty placeholder holds no bytes: not guarded
    assert _allocation_findings(allocated, {"out": placeholder, "grown": grown}) == []
    assert torch.equal(placeholder, a + a)
