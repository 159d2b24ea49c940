"""Rung 7, the toolchain, on the CPU: the generator, each check on small kernels both ways
(in this process, through trial.run_point), the launch recorder's code identity, import
contracts, the fingerprint, and the exit status of a climb and of a pytest session that ran
nothing."""
import pathlib
import dataclasses
import json
import os
import sys

import pytest
import torch
from conftest import run_cli

import kladder as kl
from kladder.checks import dispatch as dispatch_check
from kladder.checks import flags as flags_check
from kladder.checks import imports as imports_check
from kladder.core.fingerprint import fingerprint, git_of, steering_env, target_warnings
from kladder.gen.gaps import toolchain
from kladder.core.outcome import Check, Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.core.results import NOTHING_RAN, ClimbReport, RungReport
from kladder.report.terminal import render_text
from kladder.report.words import fingerprint_text, message, note_text
from kladder.run.modes.base import Flagged, Imported, Ran
from kladder.run.modes.imports import ImportErrorTracer
from kladder.run.modes.tracing import Launches, launch_of
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "specs"))
import toolchain as fx  # noqa: E402  (tests/specs/toolchain.py: the small kernels)


def _spec(**over):
    base = dict(kernel=lambda q, k, **kw: q, reference=lambda q, k: q,
                args={"q": kl.Tensor("S D", dtype="float32"), "k": kl.Tensor("T D", like="q")},
                returns=kl.Tensor("S D", like="q"),
                dims={"S": kl.Dim(1, 256, tile=16), "T": kl.Dim(1, 256, tile=64), "D": kl.Dim(1, 64)},
                configs=[{"BLOCK": 16}, {"BLOCK": 32}])
    base.update(over)
    return kl.Spec("attn", **base)


# ---------------------------------------------------------------------------- the generator
def test_points_cover_dispatch_flags_cache_keys_and_imports():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("*decode*", when={"S": 1}, label="the decode kernel")], flags=[kl.Flag("USE_TMA"), kl.Flag(env="MYLIB_FAST")], imports=["mylib.ops:attn"]),
                  )
    pts = list(toolchain.points(spec, CPU_BUDGET))
    assert all(p.rung == 7 and p.why for p in pts)
    assert {p.mode for p in pts} == {"dispatch", "flags", "cachekey", "imports"}
    at_one = [p for p in pts if p.mode == "dispatch" and dict(p.dims)["S"] == 1]
    assert sorted(p.layouts for p in at_one) == [(), (("k", "sliced"),), (("q", "sliced"),)]
    assert all("the decode kernel must run" in p.why for p in at_one)
    assert sorted(p.variant for p in pts if p.mode == "flags") == ["$MYLIB_FAST", "USE_TMA"]
    keys = {p.variant: p for p in pts if p.mode == "cachekey"}
    assert set(keys) == {"config", "USE_TMA", "$MYLIB_FAST", "compiler"}
    assert dict(keys["config"].partner)["config"] != keys["config"].config
    assert [p.mode for p in pts].count("imports") == 1
    for p in pts:                                   # every point is its own repro
        assert Point.parse(p.to_json()) == p and Point.parse(repr(p)) == p
    assert len({p.id for p in pts}) == len(pts)


def test_a_spec_without_rung_7_fields_still_gets_dispatch_and_import_points():
    pts = list(toolchain.points(_spec(configs=[]), CPU_BUDGET))
    assert [p.mode for p in pts] == ["dispatch", "dispatch", "cachekey", "imports"]
    assert pts[2].variant == "compiler"


@pytest.mark.parametrize("over,where", [
    (dict(toolchain=kl.Toolchain(expect="*decode*")), "expect"),
    (dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"Q": 1})])), "expect[0].when"),
    (dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"S": 0})])), "expect[0].when"),
    (dict(toolchain=kl.Toolchain(expect=[kl.Expect("")])), "expect[0].kernel"),
    (dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", launch=["BLOCK"])])), "expect[0].launch"),
    (dict(toolchain=kl.Toolchain(flags=[kl.Flag("A", env="B")])), "flags['A']"),
    (dict(toolchain=kl.Toolchain(flags=[kl.Flag("q")])), "flags['q'].name"),
    (dict(toolchain=kl.Toolchain(flags=[kl.Flag("A", values=(1,))])), "flags['A'].values"),
    (dict(toolchain=kl.Toolchain(flags=[kl.Flag(env="E", values=(0, 1))])), "flags['$E'].values"),
    (dict(toolchain=kl.Toolchain(flags=[kl.Flag("A"), kl.Flag("A")])), "flags"),
    (dict(toolchain=kl.Toolchain(imports=["mylib.ops"])), "imports"),
    (dict(toolchain=kl.Toolchain(imports=["my-lib:f"])), "imports"),
])
def test_bad_rung_7_fields_name_the_field_and_the_fix(over, where):
    with pytest.raises(kl.SpecError) as e:
        _spec(**over)
    assert e.value.where == f"Spec('attn').toolchain.{where}"
    assert e.value.fix


def test_an_env_flag_compares_strings_by_default():
    assert kl.Flag(env="MYLIB_FAST").values == ("0", "1") and kl.Flag(env="MYLIB_FAST").key == "$MYLIB_FAST"


# ---------------------------------------------------------------------------- the dispatch check
def _ran(*launches, gpu=(), functions=()):
    return Ran([{"name": n, "params": p, "code": n, "how": "source", "asm": {}} for n, p in launches],
               list(gpu), list(functions))


def _pt(**dims):
    return Point("attn", 7, tuple(dims.items()))


def test_an_expectation_applies_where_its_when_matches():
    e = kl.Expect("*decode*", when={"S": [1, 2], "BLOCK": 16})
    assert dispatch_check.applies(e, dataclasses.replace(_pt(S=2, T=9), config=(("BLOCK", 16),)))
    assert not dispatch_check.applies(e, _pt(S=2, T=9))                 # the launcher's own config
    assert not dispatch_check.applies(e, dataclasses.replace(_pt(S=3, T=9), config=(("BLOCK", 16),)))
    assert not dispatch_check.applies(kl.Expect("*", when={"FLAG": 1}), dataclasses.replace(_pt(S=1), config=(("FLAG", True),)))


def test_dispatch_fails_a_point_that_ran_another_path_and_names_it():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("*decode*", when={"S": 1}, label="the decode kernel")]))
    prefill = _ran(("_attn_prefill_kernel", {"BLOCK_S": 16}), functions=["attention", "_prefill"])
    f, _ = dispatch_check.dispatch(spec, _pt(S=1, T=129, D=64), prefill)
    assert f.check == Check.DISPATCH
    text = message(f)
    assert "the decode kernel (`*decode*`)" in text and "_attn_prefill_kernel(BLOCK_S=16)" in text
    assert "Python attention, _prefill" in text
    assert dispatch_check.dispatch(spec, _pt(S=17, T=129, D=64), prefill)[0] is None     # S = 17: no expectation
    assert dispatch_check.dispatch(spec, _pt(S=1, T=129, D=64), _ran(("_attn_decode_kernel", {})))[0] is None


def test_an_expectation_holds_on_gpu_kernels_and_python_functions_too():
    spec = _spec(toolchain=kl.Toolchain(expect=["*softmax*"]))
    assert dispatch_check.dispatch(spec, _pt(S=1), _ran(gpu=["void at::native::softmax_warp_forward<float>"]))[0] is None
    assert dispatch_check.dispatch(spec, _pt(S=1), _ran(functions=["_softmax_fallback"]))[0] is None
    assert dispatch_check.dispatch(spec, _pt(S=1), _ran(functions=["attention"]))[0] is not None


def test_a_launch_expectation_needs_the_tuned_values_and_a_bool_is_not_an_int():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("_k", launch={"BLOCK_M": 16, "num_warps": 4}, label="the tuned config")]))
    assert dispatch_check.dispatch(spec, _pt(S=1), _ran(("_k", {"BLOCK_M": 16, "num_warps": 4, "X": 1})))[0] is None
    f, _ = dispatch_check.dispatch(spec, _pt(S=1), _ran(("_k", {"BLOCK_M": 64, "num_warps": 8})))
    assert "the tuned config (`_k` launched with BLOCK_M=16, num_warps=4)" in message(f)
    assert "_k(BLOCK_M=64, num_warps=8)" in message(f)
    assert dispatch_check.dispatch(spec, _pt(S=1), _ran(("_k", {"BLOCK_M": 16, "num_warps": 4.0})))[0] is None
    one = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("_k", launch={"FLAG": 1})]))
    assert dispatch_check.dispatch(one, _pt(S=1), _ran(("_k", {"FLAG": True})))[0] is not None


# ---------------------------------------------------------------------------- the flags check
def test_a_flag_whose_values_ran_the_same_code_fails():
    same = Flagged("TWICE", [(False, _ran(("_k", {"TWICE": False}))), (True, _ran(("_k", {"TWICE": False})))])
    f, note = flags_check.no_effect(same)
    assert f.check == Check.FLAG_NO_EFFECT and note.facts.codes == 1
    assert "TWICE=True ran _k(TWICE=False)" in message(f)
    other = Flagged("TWICE", [(False, _ran(("_k", {}))), (True, _ran(("_k2", {})))])
    f, note = flags_check.no_effect(other)
    assert f is None and "changes the code: 2 distinct sets" in note_text(note)


# ---------------------------------------------------------------------------- the launch recorder
def test_the_recorder_sees_launches_and_their_code_and_restores_run():
    from triton.runtime.interpreter import InterpretedFunction
    before = InterpretedFunction.run
    x = torch.arange(100, dtype=torch.float32)
    codes = {}
    for name, kw in (("plain", {}), ("twice", {"TWICE": True})):
        with Launches() as seen:
            assert torch.equal(fx.scale(x, **kw), 2 * x)
        (launch,) = seen.seen
        codes[name] = launch.code
        assert launch.name == "_scale_kernel" and launch.how == "source"
    assert launch.params == {"TWICE": True, "UNUSED": False, "BLOCK": 64}
    assert codes["plain"] != codes["twice"]                          # a constexpr the body reads
    with Launches() as seen:
        fx.scale_lost(x, TWICE=True)
    assert seen.seen[0].code == codes["plain"]                       # UNUSED is never read: same code
    assert InterpretedFunction.run is before


def test_on_a_gpu_a_launch_is_named_by_its_binary():
    class Compiled:               # what JITFunction.run returns on a GPU: the binary and its assembly
        kernel = b"\x7fELF cubin bytes"
        asm = {"ptx": ".visible .entry _k()", "cubin": b"\x7fELF cubin bytes"}
    a = launch_of(fx._scale_kernel, (None, None, 8), {"TWICE": True, "UNUSED": False, "BLOCK": 64}, Compiled())
    assert a.how == "binary" and set(a.asm) == {"ptx", "cubin"}
    Compiled.kernel = b"\x7fELF other bytes"
    b = launch_of(fx._scale_kernel, (None, None, 8), {"TWICE": True, "UNUSED": False, "BLOCK": 64}, Compiled())
    assert a.code != b.code


# ---------------------------------------------------------------------------- modes, in this process
def _run(spec, **point):
    pts = [p for p in toolchain.points(spec, CPU_BUDGET) if all(getattr(p, k) == v for k, v in point.items())]
    return [run_point(spec, p, "cpu").outcome for p in pts]


def test_a_flag_that_reaches_the_kernel_passes_and_a_lost_one_fails():
    (good,) = _run(fx.flag_reaches, mode="flags")
    assert good.status == Status.PASSED and good.note.kind == NoteKind.FLAG_CHANGED
    (bad,) = _run(fx.flag_lost, mode="flags")
    assert bad.status == Status.FAILED and bad.headline.check == Check.FLAG_NO_EFFECT
    assert [f.check for f in bad.findings] == [Check.FLAG_NO_EFFECT]   # both calls' values were right


def test_dispatch_points_show_what_ran_and_fail_another_path():
    kept = _run(fx.route_kept, mode="dispatch")
    assert kept and all(o.status == Status.PASSED and o.note.kind == NoteKind.RAN for o in kept)
    ran = {dict(o.point.dims)["N"]: note_text(o.note) for o in kept}
    assert "_short_kernel(BLOCK=64)" in ran[64] and "_long_kernel(BLOCK=128)" in ran[65]
    assert {1, 64, 65} <= set(ran)
    lost = _run(fx.route_lost, mode="dispatch")
    bad = [o for o in lost if o.status == Status.FAILED]
    assert {dict(o.point.dims)["N"] for o in bad} == {1, 64, 65}
    assert all(o.headline.check == Check.DISPATCH and "Python routed_torch" in message(o.headline) for o in bad)
    assert all(o.status == Status.PASSED for o in lost if o not in bad)   # base shapes: nothing expected


# ---------------------------------------------------------------------------- import contracts
def test_import_contracts_need_a_name_that_resolves_to_what_runs():
    spec = fx.route_kept
    called = {fx.routed.__code__}
    imported = Imported([("toolchain:routed", fx.routed, None), ("toolchain:double_ref", fx.double_ref, None),
                         ("toolchain:_short_kernel", fx._short_kernel, None), ("toolchain", fx, None),
                         ("toolchain:gone", None, {"error": "AttributeError", "text": "no attribute 'gone'"})],
                        called, [fx._short_kernel], [], [])
    found = imports_check.contracts(spec, imported)
    assert [(f.facts.name, f.facts.problem) for f in found] == [("toolchain:double_ref", "untested"),
                                                                      ("toolchain:gone", "missing")]
    assert "never runs it" in message(found[0]) and "does not resolve" in message(found[1])


def test_the_import_tracer_reports_an_import_error_that_was_caught(tmp_path, monkeypatch):
    (tmp_path / "quietlib.py").write_text(
        "try:\n    from json import no_such_name\nexcept ImportError:\n    no_such_name = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    tracer = ImportErrorTracer()
    sys.settrace(tracer)
    try:
        import quietlib  # noqa: F401
    finally:
        sys.settrace(None)
        sys.modules.pop("quietlib", None)
    (seen,) = tracer.seen
    assert seen["module"] == "quietlib" and seen["where"] == "quietlib.py:2" and "no_such_name" in seen["text"]
    (w,) = imports_check.caught(Imported([], set(), [], [seen], ["quietlib"]))
    assert w.check == Check.CAUGHT_IMPORT and "raised ImportError at quietlib.py:2" in message(w)


# ---------------------------------------------------------------------------- the fingerprint
def test_the_fingerprint_names_the_build_and_masks_secrets():
    fp = fingerprint(os.path.join(HERE, "specs", "toolchain.py"), "cpu")
    assert {"python", "torch", "cuda", "rocm", "triton", "driver", "device", "kladder", "git", "env", "warnings"} <= set(fp)
    assert fp["torch"] and fp["kladder"] == kl.__version__ and fp["device"]["kind"] == "cpu"
    assert json.loads(json.dumps(fp, allow_nan=False)) == fp
    env = steering_env({"TRITON_INTERPRET": "1", "HOME": "/root", "TORCH_CUDA_ARCH_LIST": "9.0",
                        "TRITON_REMOTE_CACHE_TOKEN": "s3cr3t"})
    assert env == {"TORCH_CUDA_ARCH_LIST": "9.0", "TRITON_INTERPRET": "1", "TRITON_REMOTE_CACHE_TOKEN": "***"}
    text = fingerprint_text(fp)
    assert text.startswith(f"python {fp['python']}, torch {fp['torch']}") and "cpu (" in text


def test_git_of_names_the_commit_of_the_repository():
    g = git_of(__file__)
    if g is None:
        pytest.skip("not a git checkout")
    assert len(g["commit"]) == 40 and os.path.exists(os.path.join(g["repo"], ".git"))


@pytest.mark.parametrize("device,env,warned", [
    ({"kind": "cuda", "name": "H200", "capability": "9.0", "arch": "sm_90"}, {"TORCH_CUDA_ARCH_LIST": "8.0;8.6+PTX"}, True),
    ({"kind": "cuda", "name": "H200", "capability": "9.0", "arch": "sm_90"}, {"TORCH_CUDA_ARCH_LIST": "8.0 9.0a"}, False),
    ({"kind": "cuda", "name": "H200", "capability": "9.0", "arch": "sm_90"}, {"CUDAARCHS": "90"}, False),
    ({"kind": "cuda", "name": "H200", "capability": "9.0", "arch": "sm_90"}, {"TORCH_CUDA_ARCH_LIST": "all"}, False),
    ({"kind": "rocm", "name": "MI355X", "capability": "9.5", "arch": "gfx950"}, {"GPU_ARCHS": "gfx942"}, True),
    ({"kind": "rocm", "name": "MI355X", "capability": "9.5", "arch": "gfx950"}, {"GPU_ARCHS": "gfx942;gfx950"}, False),
    ({"kind": "cpu", "name": "x86_64", "capability": None, "arch": None}, {"TORCH_CUDA_ARCH_LIST": "8.0"}, False),
])
def test_a_build_target_that_the_live_device_is_not_is_a_warning(device, env, warned):
    assert bool(target_warnings(device, env)) == warned


def test_every_report_header_shows_the_fingerprint_and_its_warnings():
    fp = fingerprint(None, "cpu")
    fp["warnings"] = [{"var": "GPU_ARCHS", "value": "gfx942", "device": "gfx1250", "name": "MI450"}]
    rep = ClimbReport("s", "x.py::s", "cpu", fingerprint=fp)
    text = render_text(rep)
    assert f"env: python {fp['python']}" in text
    assert "warning: GPU_ARCHS=gfx942 names a build target that the live device (MI450, gfx1250) is not" in text


# ---------------------------------------------------------------------------- runs that test nothing
def _report(*statuses):
    gpu = Note.of(NoteKind.GPU_POINT, need_bytes=1 << 30, budget=CPU_BUDGET.text())
    rr = RungReport(1, "shapes", [Outcome(Point("s", 1, (("N", i),)), s, note=gpu if s == Status.SKIPPED else None)
                                  for i, s in enumerate(statuses)])
    return ClimbReport("s", "x.py::s", "cpu", rungs=[rr])


@pytest.mark.parametrize("statuses,code", [((), NOTHING_RAN), ((Status.SKIPPED,) * 3, NOTHING_RAN),
                                           ((Status.SKIPPED, Status.PASSED), 0), ((Status.SKIPPED, Status.FAILED), 1),
                                           ((Status.SKIPPED, Status.BROKEN), 1)])
def test_a_climb_in_which_no_point_ran_exits_5(statuses, code):
    rep = _report(*statuses)
    assert rep.exit_code == code
    assert ("nothing ran" in render_text(rep)) == (code == NOTHING_RAN)


def test_the_cli_exits_5_when_every_point_is_skipped(tmp_path):
    ref = os.path.join(HERE, "specs", "toolchain.py") + "::everything_skipped"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", ref, "--rungs", "1", "--device", "cpu",
                        "--json", str(tmp_path / "r.json"), "--log", str(tmp_path / "l.jsonl")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == NOTHING_RAN, p.stdout + p.stderr
    assert "nothing ran: all" in p.stdout and "points were skipped" in p.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["nothing_ran"] is True and doc["exit_code"] == NOTHING_RAN and doc["fingerprint"]["python"]


SKIPPED_ONLY = '''
import kladder as kl

def double(x):
    return 2 * x

test_huge = kl.Spec("huge", kernel=double, reference=double, args={"x": kl.Tensor("N", dtype="float32")},
                    returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1 << 20, 1 << 21)})
'''


def test_a_pytest_session_whose_kladder_points_all_skip_fails(pytester):
    pytester.makepyfile(test_kernels=SKIPPED_ONLY)
    result = pytester.runpytest_subprocess("--kladder-device", "cpu", "--kladder-rungs", "1", "-p", "no:cacheprovider")
    assert result.ret == NOTHING_RAN
    result.stdout.fnmatch_lines(["*kladder: nothing ran: all * points were skipped*"])
    assert result.parseoutcomes()["skipped"] >= 1
    collected = pytester.runpytest_subprocess("--kladder-device", "cpu", "--kladder-rungs", "1", "--collect-only")
    assert collected.ret == 0


# ---------------------------------------------------------------------------- cache keys (child processes)
def test_a_cache_key_that_leaves_a_flag_out_hands_the_restart_the_last_processs_code(monkeypatch):
    from kladder.run.modes.jitcache import REF_ENV
    monkeypatch.setenv(REF_ENV, os.path.join(HERE, "specs", "toolchain.py") + "::disk_planned")   # as in a worker
    (point,) = [p for p in toolchain.points(fx.disk_planned, CPU_BUDGET) if p.mode == "cachekey" and p.variant == "TWICE"]
    outcome = run_point(fx.disk_planned, point, "cpu").outcome          # its three processes, from this one
    assert outcome.status == Status.FAILED
    (f,) = outcome.findings
    assert f.check == Check.NOT_BITWISE and f.facts.cause == "cachekey" and 0 < f.mismatched < f.total
    assert "B (TWICE=True) in a process on the cache A left differs from B on an empty cache" in message(f)


def test_the_modes_processes_wait_only_for_the_one_before_them_on_their_cache(monkeypatch):
    """jitcache.run_processes: a restart runs after the process whose cache it reads; a process
    on a cache of its own starts at once (cachekey's B on an empty cache runs beside A: each
    compile from nothing is seconds on a GPU). run_child stands in for the children: A waits
    until B-empty has started, which only a concurrent start allows."""
    import threading
    import types

    from kladder.run.modes import jitcache
    monkeypatch.setenv(jitcache.REF_ENV, "spec.py::s")
    started, order = {label: threading.Event() for label in ("A", "B warm", "B empty")}, []

    def child(cmd, env, timeout, where, label):
        order.append(("start", label))
        started[label].set()
        if label == "A":
            assert started["B empty"].wait(30), "B on its own cache did not start while A ran"
            assert not started["B warm"].is_set(), "the restart started before A, whose cache it reads, ended"
        order.append(("end", label))
        pathlib.Path(cmd[5] + ".json").write_text("[]")

    monkeypatch.setattr(jitcache, "run_child", child)
    monkeypatch.setattr(jitcache, "_load", lambda path: {"out": torch.zeros(1)})
    monkeypatch.setattr("kladder.run.isolation.child_timeout", lambda spec, device: 60.0)
    h = types.SimpleNamespace(spec=None, device="cpu", point=None)
    procs = [jitcache.Process("A", [], cache="shared"), jitcache.Process("B warm", [], cache="shared"),
             jitcache.Process("B empty", [], cache="empty")]
    results = jitcache.run_processes(h, procs)
    assert len(results) == 3 and order.index(("end", "A")) < order.index(("start", "B warm"))


# ---------------------------------------------------------------------------- dispatch points (issue 21 item 7)
def test_every_shape_an_expectation_names_gets_a_dispatch_point():
    widths = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 2880, 4096]      # past the old cap of 8
    spec = fx.make(fx.routed, toolchain=kl.Toolchain(expect=[kl.Expect("_long_kernel", when={"N": widths})]))
    pts = [p for p in toolchain.points(spec, CPU_BUDGET) if "must run" in p.why]
    assert [dict(p.dims)["N"] for p in pts if not p.layouts] == widths
    assert [dict(p.dims)["N"] for p in pts if p.layouts] == widths          # and each with x not contiguous


def test_a_big_named_shape_shrinks_the_other_dims_and_past_the_budget_is_a_gpu_point():
    spec = kl.Spec("rows", kernel=lambda x: x, reference=lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 4096, tile=64), "N": kl.Dim(1, 1 << 20, tile=64)},
                   toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"N": [4096, 1 << 20]})]))
    pts = {dict(p.dims)["N"]: p for p in toolchain.points(spec, CPU_BUDGET) if "must run" in p.why}
    assert set(pts) == {4096, 1 << 20}
    assert pts[4096].sizes == {"M": 1, "N": 4096} and pts[4096].needs == ""       # M at its least: it fits
    assert pts[1 << 20].needs == "cuda"                     # listed, and skipped on the CPU with its bytes
    from kladder.climbing.ladder import skip_note
    note = skip_note(spec, pts[1 << 20], "cpu", None)
    assert note.kind == NoteKind.GPU_POINT and note.facts.need_bytes == 2 * 4 << 20


def test_a_config_condition_is_met_by_the_launchers_default_and_the_named_values():
    sys.path.insert(0, os.path.join(HERE, "specs"))
    import conditions as cx
    pts = [p for p in toolchain.points(cx.precise_default, CPU_BUDGET) if p.mode == "dispatch"]
    named = {(p.why.split(" must run")[0], p.config) for p in pts if "must run" in p.why}
    assert named == {("dispatch: `_fast_kernel`", ()), ("dispatch: `_plain_kernel`", (("precise", False),))}
    assert all(p.config != (("precise", True),) for p in pts)    # rowsum(x) is that call: the base points make it
    blocks = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"BLOCK": 64})]))                 # no declared config has BLOCK=64
    assert {p.config for p in toolchain.points(blocks, CPU_BUDGET) if "must run" in p.why} == {(("BLOCK", 64),)}


def test_the_cache_key_point_pairs_two_calls_that_differ():
    sys.path.insert(0, os.path.join(HERE, "specs"))
    import conditions as cx

    def pairs(configs):
        spec = cx.make(cx.rowsum, configs=configs)
        return [(p.config, dict(p.partner)["config"]) for p in toolchain.points(spec, CPU_BUDGET)
                if p.mode == "cachekey" and p.variant == "config"]
    assert pairs([{"precise": True}, {"precise": False}]) == [((), (("precise", False),))]   # True is rowsum's default
    assert pairs([{"precise": True}]) == []                  # the one config is the launcher's own call: no pair
    assert pairs([{"precise": False}]) == [((), (("precise", False),))]
