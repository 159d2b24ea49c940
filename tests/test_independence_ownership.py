"""Reference independence by ownership, not by names (issue 38, items 3 and 4): the kernel's own
code is what its launcher owns (its Python launchers, the Triton kernels it launches, the GPU
kernels it launches outside torch's ops); torch's own kernels shared by kernel and reference say
nothing, unless the kernel under test is itself a torch op. A reference that is not independent
makes the point BROKEN (the spec's problem, naming the reference), never a FAILED point of the
kernel, and the kernel is judged on its other points."""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import kladder as kl
from kladder.checks.independence import shared_code
from kladder.gen.gaps import contracts
from kladder.report.words import note_text
from kladder.run.modes.base import Traces
from kladder.run.modes.tracing import torch_op_name
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET
from conftest import run_cli


# ------------------------------------------------------------------ the rule, on the traces alone
HIST = "void at::native::kernelHistogram1D<long, long, long, 1, 2, -1, (at::native::CUDAHistogramMemoryType)1>(...)"


def _traces(kernel_gpu, reference_gpu, **kw):
    return Traces({}, set(), set(), {}, kernel_gpu, set(reference_gpu), reference="moe_ref", **kw)


def test_torch_kernels_shared_by_kernel_and_reference_say_nothing():
    # the MoE launcher: torch.bincount (ATen's histogram) and its own Triton kernel; the float64
    # index_add_ reference runs torch.bincount too (issue 38: FAILED on the H100 by a name list)
    ran = {HIST: "aten::bincount", "_moe_kernel": "", "void at::native::index_elementwise_kernel<...>": "aten::index_add_"}
    assert shared_code(_traces(ran, [HIST, "void at::native::index_elementwise_kernel<...>"])) is None


def test_a_kernel_a_torch_op_launched_in_either_call_is_torchs():
    # on an H100 (docs/results/2026-12-06-h100-round), torch.bincount's inner min reduction came
    # back tied to no op in the launcher's profile (run under kladder's dispatch mode) and to
    # aten::min in the reference's: torch's, in both
    mn = "void at::native::reduce_kernel<512, 1, ...MinNanFunctor<long>...>(...)"
    ran = {HIST: "aten::bincount", mn: "", "_moe_kernel": ""}
    assert shared_code(Traces({}, set(), set(), {}, ran, {HIST: "aten::bincount", mn: "aten::min"},
                              reference="moe_ref")) is None
    note = shared_code(Traces({}, set(), set(), {}, ran, {mn: "aten::min", "_moe_kernel": ""}, reference="moe_ref"))
    assert note is not None and note.facts.gpu_kernels == ["_moe_kernel"]   # the launcher's own still counts
    note = shared_code(Traces({}, set(), set(), {}, ran, {mn: ""}, reference="moe_ref"))
    assert note is not None and note.facts.gpu_kernels == [mn]               # tied to no op in both: the launcher's


def test_a_gpu_kernel_the_launcher_owns_shared_by_the_reference_is_not_independent():
    ran = {HIST: "aten::bincount", "_moe_kernel": "", "ext_gemm_kernel<128>": "mylib::fused_moe"}
    note = shared_code(_traces(ran, [HIST, "_moe_kernel", "ext_gemm_kernel<128>"]))
    assert note is not None and note.kind == "reference_not_independent"
    assert note.facts.gpu_kernels == ["_moe_kernel", "ext_gemm_kernel<128>"] and note.facts.reference == "moe_ref"


def test_a_torch_op_under_test_owns_its_op():
    assert torch_op_name(torch.sin) == "sin" and torch_op_name(F.softmax) == "softmax"
    assert torch_op_name(torch.ops.aten.sin.default) == "sin" and torch_op_name(torch.Tensor.sin) == "sin"
    assert torch_op_name(lambda x: torch.sin(x)) is None          # a launcher of the user's: it owns its own code
    note = shared_code(_traces({}, [], torch_op="sin", reference_op_calls=["torch sin"]))
    assert note is not None and note.facts.torch_op == "sin"
    assert shared_code(_traces({}, [], torch_op="sin")) is None    # the reference never called it


# ------------------------------------------------------------------ the verdicts, run on the CPU
@triton.jit
def _count_scale(x_ptr, ids_ptr, counts_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    e = tl.load(ids_ptr + row)
    c = tl.load(counts_ptr + e).to(tl.float32)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + row * N + cols, x * c, mask=cols < N)


def moe_scale(x, ids):
    """A Triton launcher with a torch helper: each row scaled by its expert's token count."""
    counts = torch.bincount(ids, minlength=4)
    y = torch.empty_like(x)
    _count_scale[(x.shape[0],)](x, ids, counts, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return y


def moe_scale_ref(x, ids):
    counts = torch.bincount(ids, minlength=4).to(x.dtype)
    return torch.zeros_like(x).index_add_(0, torch.arange(x.shape[0]), x * counts[ids][:, None])


def moe_scale_via_library(x, ids):
    """A "reference" through the library's other entry point: the same Triton kernel."""
    return moe_scale(x.float(), ids).double()


def _moe(reference):
    return kl.Spec("moe_scale", kernel=moe_scale, reference=reference,
                   args={"x": kl.Tensor("T N", dtype="float32"), "ids": kl.Tensor("T", dtype="int64", range=(0, 3))},
                   returns=kl.Tensor("T N", like="x"), dims={"T": kl.Dim(1, 16), "N": kl.Dim(1, 64)})


def _independence(spec):
    p = next(p for p in contracts.points(spec, CPU_BUDGET) if p.kind == "independence")
    return run_point(spec, p, "cpu").outcome


def test_a_launcher_and_reference_sharing_torch_bincount_pass_rung_3():
    assert _independence(_moe(moe_scale_ref)).status == "passed"


def test_a_reference_launching_the_kernels_triton_kernel_is_broken_and_says_whose():
    o = _independence(_moe(moe_scale_via_library))
    assert o.status == "broken" and not o.findings
    assert o.note.facts.reference == "moe_scale_via_library"
    assert any(j.startswith("_count_scale") for j in o.note.facts.jit_kernels), o.note.facts
    text = note_text(o.note)
    assert "moe_scale_via_library is not independent" in text and "_count_scale" in text and "spec's problem" in text


def _sin_spec(reference):
    return kl.Spec("sin", kernel=torch.sin, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)})


def test_a_torch_op_whose_reference_is_the_same_op_is_broken_on_the_cpu_too():
    o = _independence(_sin_spec(lambda x: x.sin()))
    assert o.status == "broken" and o.note.facts.torch_op == "sin"
    assert "the torch op under test, sin" in note_text(o.note)
    # an independent reference of the same op: its Taylor series would do; here, the other identity
    assert _independence(_sin_spec(lambda x: torch.cos(x - torch.pi / 2))).status == "passed"


def test_the_rest_of_the_climb_is_judged_when_the_reference_is_broken():
    import os
    import sys
    from conftest import report_json
    path = os.path.join(os.path.dirname(__file__), "specs", "shared_reference.py")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"shared-{os.getpid()}.json")
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", f"{path}::spec", "--rungs", "3", "--device", "cpu",
                        "--json", out, "--no-history"], capture_output=True, text=True, timeout=600)
    doc = report_json(out)
    pts = doc["rungs"][2]["points"]
    broken = [pt for pt in pts if pt["status"] == "broken"]
    assert len(broken) == 1 and broken[0]["kind"] == "independence"          # once per climb
    assert broken[0]["note"]["kind"] == "reference_not_independent"
    judged = [pt for pt in pts if pt["kind"] != "independence"]
    assert judged and all(pt["status"] == "passed" for pt in judged)       # the kernel's other points judged
    assert doc["lowest_failing_rung"] is None and p.returncode == 1         # not a pass, not the kernel's failure
    assert "BROKEN" in p.stdout and "not independent" in p.stdout
