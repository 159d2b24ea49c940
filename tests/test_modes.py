"""Rung 4 on the CPU: the generator, the A-B-A and reused-buffer executors, CUDA modes skipped."""
import os

import pytest
import torch

import kladder as kl
from kladder.checks import Judge
from kladder.gen.gaps import modes
from kladder.gen.gaps.common import base_shapes
from kladder.core.point import Point
from kladder.report.words import reason
from kladder.run.harness import Harness
from kladder.run.modes.base import Call
from kladder.run.trial import judge_call
from kladder.core.sizes import CPU_BUDGET

HERE = os.path.dirname(__file__)


def _spec(**over):
    base = dict(kernel=lambda x, out, **kw: out.copy_(2 * x), reference=lambda x: 2 * x,
                args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "out": kl.Out("M N", like="x")},
                dims={"M": kl.Dim(1, 64, tile=8), "N": kl.Dim(1, 512, tile=64)},
                configs=[{"BLOCK": 64}, {"BLOCK": 128}])
    base.update(over)
    return kl.Spec("double", **base)


def test_mode_points_cover_every_mode_config_and_a_b_a_pair():
    pts = list(modes.points(_spec(), CPU_BUDGET))
    assert {p.mode for p in pts} == {"reused", "graph", "stream", "aba", "compiled", "jitcache"}
    jit = [p for p in pts if p.mode == "jitcache"]
    assert len(jit) == 3 and all(dict(p.partner)["config"] != p.config for p in jit)   # each config, then the next
    assert all(p.rung == 4 and p.why for p in pts)
    base = base_shapes(_spec(), CPU_BUDGET)
    assert base[0] == {"M": 17, "N": 129} and base[1] == {"M": 16, "N": 128}
    aba = [p for p in pts if p.mode == "aba"]
    configs = {(p.config, dict(p.partner)["config"]) for p in aba if dict(p.partner)["dims"] == p.dims}
    assert len(configs) == 6                              # default, 64, 128: each after each other
    assert any(dict(p.partner)["dims"] != p.dims for p in aba)
    assert Point.parse(aba[0].to_json()) == aba[0]        # the partner survives the round trip


def test_cuda_modes_are_skipped_with_a_reason_on_the_cpu(good_climb):
    # rung 4 of good.py's whole default climb through the CLI (conftest's good_climb, shared
    # with test_cli's clean climb): its report's points, each with its mode, status and reason
    _, doc, _ = good_climb
    pts = next(r for r in doc["rungs"] if r["rung"] == 4)["points"]
    by_mode = {}
    for pt in pts:
        by_mode.setdefault(pt["mode"], set()).add(pt["status"])
    assert by_mode["graph"] == {"skipped"} and by_mode["stream"] == {"skipped"}
    assert by_mode["aba"] == {"passed"}
    assert by_mode["reused"] == {"skipped"}              # softmax allocates its output: nothing to reuse
    assert doc["exit_code"] == 0 and all(pt["status"] in ("passed", "skipped") for pt in pts)
    assert all("needs CUDA" in pt["reason"] for pt in pts if pt["mode"] in ("graph", "stream"))


def test_a_b_a_catches_state_left_by_the_first_call_and_names_the_call(tmp_path):
    rep = kl.climb(os.path.join(HERE, "specs", "stateful.py"), rungs=4, device="cpu", log_path=str(tmp_path / "l"))
    bad = [o for o in rep.outcomes if o.status == "failed"]
    assert bad and all(o.point.mode == "aba" for o in bad)
    calls = {f.call for o in bad for f in o.findings}
    assert "call 2 of 3 (B)" in calls
    from kladder.report.terminal import render_text
    assert "call:     call 2 of 3 (B) (aba mode)" in render_text(rep)


def test_reused_mode_hands_call_2_the_buffers_of_call_1():
    spec = _spec()
    point = Point("double", 4, (("M", 3), ("N", 5)), (("x", "float32"),), mode="reused")
    h = Harness(spec, point, "cpu")
    first = h.prepare()
    h.call(first)
    second = h.prepare(seed=first.point.seed + 1, outs_from=first)
    assert second.inputs.outs["out"].data_ptr() == first.inputs.outs["out"].data_ptr()
    assert torch.equal(second.inputs.outs["out"], 2 * first.inputs.args[0])    # call 1's values, not poison
    assert not torch.equal(second.inputs.args[0], first.inputs.args[0])         # new inputs
    judge = Judge(spec, point, "cpu")
    judge_call(h, judge, Call(second, h.call(second), "call 2 of 2"))
    assert judge.findings == []


def test_a_rung_1_failure_that_passes_alone_says_it_depends_on_state(tmp_path):
    rep = kl.climb(os.path.join(HERE, "specs", "stateful.py"), rungs=1, device="cpu", log_path=str(tmp_path / "l"))
    failed = [o for o in rep.outcomes if o.status == "failed"]
    assert failed, "the first point sets the factor; later widths fail in the same worker"
    assert reason(failed[0]).startswith("passes when run alone in a fresh process")
    from kladder.report.terminal import render_text
    assert "state:    passes when run alone" in render_text(rep)


def test_every_mode_declares_its_traits_and_they_are_the_old_tables():
    """One class a notation.Mode member (run/modes/), its traits the climb, the pool, the harness
    and the trial read: the values the nine tables held before the modes declared them."""
    from kladder.core.notation import Mode as Name
    from kladder.run import modes as run_modes
    reg = run_modes.registry()
    assert set(reg) == {str(m) for m in Name}

    def having(trait):
        return {n for n, cls in reg.items() if getattr(cls, trait)}
    assert having("needs_cuda") == {"graph", "stream", "sanitize"}
    assert {n: cls.child_processes for n, cls in reg.items() if cls.child_processes} == \
        {"jitcache": 2, "cachekey": 3, "flags": 3, "imports": 1, "dispatch": 1}
    assert having("fresh_process") == {"aba"} and having("own_processes") == {"collective"}
    assert having("starts_child") == {"sanitize"}
    assert {n: cls.start_order for n, cls in reg.items() if cls.start_order != 2} == \
        {"sanitize": 0, "jitcache": 0, "cachekey": 0, "flags": 0, "aba": 1}
    assert having("backward") == {"eager", "reused", "aba", "accumulate", "graph", "jitcache", "repeat", "sanitize",
                                  "calls", "compiled"}
    assert having("measured_elsewhere") == {"repeat", "calls", "sanitize", "collective", "model", "jitcache", "cachekey",
                                            "flags", "imports", "dispatch"}
    assert having("judges_mutations") == {"eager", "padding"}
    assert having("runs_for_a_budget") == {"repeat", "calls"}
    assert {n: cls.profiles_on for n, cls in reg.items() if cls.profiles_on} == \
        {"independence": ("cuda",), "dispatch": ("cuda",), "flags": ("cuda",)}
    assert [sorted(run_modes.of_rung(r)) for r in range(1, 9)] == [
        ["eager"], ["eager"], ["accumulate", "eager", "independence", "padding"],
        ["aba", "compiled", "graph", "jitcache", "reused", "stream"], ["calls", "repeat", "sanitize"], ["collective"],
        ["cachekey", "dispatch", "flags", "imports"], ["model"]]
    # the traits that depend on the point
    declared = Point("double", 5, (("M", 3), ("N", 5)), mode="calls", repeat=(("declared", True),))
    assert reg["calls"].starts_fresh(declared) and not reg["calls"].starts_fresh(declared.__class__(
        "double", 5, (("M", 3), ("N", 5)), mode="calls"))
    compiler = Point("double", 7, (("M", 3), ("N", 5)), mode="cachekey", variant="compiler")
    assert reg["cachekey"].children(compiler, "cpu") == 0 and reg["cachekey"].children(compiler, "cuda") == 3
    with pytest.raises(ValueError, match="no such mode"):
        run_modes.traits("nosuch")


def test_an_observation_no_check_takes_raises(monkeypatch):
    """run/trial.py judges every observation type; one it does not know is kladder's bug, raised,
    never dropped (a dropped observation is a check that silently never ran)."""
    from kladder.run import modes as run_modes
    from kladder.run.trial import run_point

    class Stray:
        pass

    class Yields(run_modes.traits("eager")):
        def observe(self, h):
            yield Stray()
    monkeypatch.setattr(run_modes, "get", lambda name: Yields())
    point = Point("double", 1, (("M", 3), ("N", 5)), (("x", "float32"),))
    with pytest.raises(TypeError, match="yielded a Stray: no check takes it"):
        run_point(_spec(), point, "cpu")
