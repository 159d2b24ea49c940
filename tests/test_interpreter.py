"""Triton's interpreter defects are named, never blamed on the kernel (run/interpreter.py): a
worker probes them once; a point whose kernel touched one is not judged on the CPU."""
import os

import pytest
import torch

from kladder.gen.gaps import shapes
from kladder.gen.load import load_spec
from kladder.report.words import reason
from kladder.run import interpreter
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET

pytest.importorskip("triton")
SPECS = os.path.join(os.path.dirname(__file__), "specs", "interp_kernels.py")


def _points(name, n=6):
    spec = load_spec(f"{SPECS}::{name}")
    return spec, [p for p in shapes.points(spec, CPU_BUDGET) if not p.needs][:n]


def test_the_probe_names_what_this_interpreter_gets_wrong_with_its_evidence():
    load_spec(f"{SPECS}::double_bf16")                   # imports triton: the interpreter is live
    found = interpreter.run_probes()                     # the probe itself, not the cached answer
    assert found["bf16_arithmetic"]["got"] != found["bf16_arithmetic"]["want"]
    assert "bf16_rounding" in found and "libdevice" in found
    assert interpreter.probe() == found                  # what workers read (cached per Triton, numpy, Python)


def test_a_bfloat16_double_is_not_judged_on_the_cpu_never_failed():
    spec, pts = _points("double_bf16")
    outs = [run_point(spec, p, "cpu").outcome for p in pts]
    assert {o.status for o in outs} == {"skipped"}
    assert all(o.note.kind == "interpreter_defect" and o.note.facts.feature == "bf16_arithmetic" for o in outs)
    assert reason(outs[0]).startswith("not judged on the CPU: the Triton interpreter computes bfloat16 arithmetic")


def test_truncation_is_not_blamed_and_a_real_error_past_it_fails():
    # truncating to bfloat16 is within twice a correct rounding's error: no narrowing kernel fails
    spec, pts = _points("narrow_bf16", 8)
    assert "failed" not in {run_point(spec, p, "cpu").outcome.status for p in pts}
    spec, pts = _points("narrow_wrong", 8)
    assert any(run_point(spec, p, "cpu").outcome.status == "failed" for p in pts)


def test_a_failure_within_truncations_reach_that_no_peer_excuses_is_not_judged():
    import torch

    from kladder.checks import Judge
    from kladder.run.harness import Harness
    from kladder.run.modes.base import Call
    spec, pts = _points("narrow_bf16", 12)
    evidence = interpreter.probe()["bf16_rounding"]
    unjudged = 0
    for p in pts:
        h = Harness(spec, p, "cpu")
        prep = h.prepare()
        seen = Call(prep, h.call(prep))
        judge = Judge(spec, p, "cpu", interpreted=True)
        needs = judge.call(prep, h.outputs(prep, seen.returned), seen.returned, h.expected(prep), "", evidence)
        judge.settle({})                                   # as if no peer could run
        assert not judge.findings
        unjudged += needs != {} and judge.unjudged is not None
    assert unjudged and torch.is_tensor(seen.returned)


def test_an_interpreter_error_is_the_interpreters_with_its_message():
    spec, pts = _points("exp_libdevice", 2)
    o = run_point(spec, pts[0], "cpu").outcome
    assert o.status == "skipped" and o.note.kind == "interpreter_error"
    assert o.note.facts.error == "InterpreterError" and o.note.facts.probe == "libdevice"
    assert "raised InterpreterError" in reason(o) and "(its probe of a libdevice call raised the same)" in reason(o)


def test_an_interpreter_error_in_a_modes_own_process_is_the_interpreters_too(monkeypatch):
    """jitcache's (and the flag modes') own processes send the kernel's error back as data, its
    type's name and message: an InterpreterError there is not judged on the CPU, as in the worker
    (before, the child's stderr came back as the kernel's RuntimeError: FAILED, a false alarm)."""
    import dataclasses

    from kladder.run.forkclient import Children
    spec, pts = _points("exp_libdevice", 2)
    pt = dataclasses.replace(pts[0], rung=4, mode="jitcache", partner=(("dims", pts[0].dims),))
    o = run_point(spec, pt, "cpu", children=Children(f"{SPECS}::exp_libdevice")).outcome
    assert o.status == "skipped" and o.note.kind == "interpreter_error", (o.status, o.findings, o.note)
    assert o.note.facts.error == "InterpreterError" and o.note.facts.probe == "libdevice"


# ---------------------------------------------------------------------------- the dead overflow checks
import triton  # noqa: E402 - after the importorskip above
import triton.language as tl  # noqa: E402


@triton.jit
def _hash_mix(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    h = x * 1103515245 + 12345                  # int32 wrap-around on purpose (an LCG): every checked op overflows
    h = (h - (h >> 7)) * 31
    tl.store(y_ptr + i, h, mask=i < N)


def _launched(kernel, x, block: int):
    """y = kernel over x, one program a `block` of elements."""
    y = torch.empty_like(x)
    kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y


def _mixed(x):
    return _launched(_hash_mix, x, 64)


def test_the_interpreters_dead_overflow_checks_are_turned_off_and_change_nothing(monkeypatch):
    import dataclasses

    def again():                                     # as in a new process: the options not looked at yet
        monkeypatch.setattr(interpreter, "_options_seen", False)
        return interpreter.without_dead_checks()

    from triton.runtime import interpreter as ti
    kept = ti.interpreter_builder.options
    x = torch.arange(-300, 700, dtype=torch.int32) * 7919
    try:
        ti.interpreter_builder.options = dataclasses.replace(kept, sanitize_overflow=True, debug=False)
        checked = _mixed(x)
        assert again() is True
        assert ti.interpreter_builder.options.sanitize_overflow is False
        assert torch.equal(_mixed(x), checked)                                  # the same wrapped values, no error
        assert interpreter.without_dead_checks() is False                      # looked at once a process
        assert again() is False                                                 # already off: nothing to do
        # debug on (an assert would read the check): left as it is
        ti.interpreter_builder.options = dataclasses.replace(kept, sanitize_overflow=True, debug=True)
        assert again() is False
        assert ti.interpreter_builder.options.sanitize_overflow is True
    finally:
        ti.interpreter_builder.options = kept


def test_before_triton_is_imported_the_options_are_looked_at_again_later(monkeypatch):
    monkeypatch.setattr(interpreter, "_options_seen", False)
    monkeypatch.setattr(interpreter, "active", lambda: False)         # a launcher that imports Triton at its first call
    assert interpreter.without_dead_checks() is False and interpreter._options_seen is False


@triton.jit
def _scaled(x, k):
    return x * k + tl.full(x.shape, 1, x.dtype)


@triton.jit
def _helpers(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i, mask=i < N)
    for k in range(3):                          # a helper called in a loop: each call patched triton.language again
        x = _scaled(x, k + 2)
    tl.store(y_ptr + i, x, mask=i < N)


def _helped(x):
    return _launched(_helpers, x, 32)


def test_the_language_is_patched_once_a_launch_not_again_at_every_helper_call(monkeypatch):
    from triton.runtime import interpreter as ti
    triton_own, calls = _unwrapped(ti), []

    def counting(fn):
        calls.append(fn.__name__)
        return triton_own(fn)
    monkeypatch.setattr(ti, "_patch_lang", counting)
    x = torch.arange(100, dtype=torch.float32)
    want = x * 2 * 3 * 4 + (1 * 3 * 4 + 1 * 4 + 1)
    assert torch.equal(_helped(x), want)
    assert calls.count("_scaled") == 3 * 4 and calls.count("_helpers") == 1      # Triton's own: a patch a helper call (4 programs)
    calls.clear()
    monkeypatch.setattr(interpreter, "_lang_seen", False)                         # as in a new process
    assert interpreter.patch_lang_once() is True
    assert torch.equal(_helped(x), want)                                          # the same values
    assert calls == ["_helpers"]                                                  # the launch patched; no helper call did
    assert tl.core.is_builtin(tl.load)                                            # and the launch's patch was undone
    assert interpreter.patch_lang_once() is False                                 # installed once a process


def _unwrapped(ti):
    """Triton's own _patch_lang, under kladder's once-patched one if a worker installed it here."""
    f = ti._patch_lang
    while getattr(f, "kladder", False):
        f = f.original
    return f
