"""run/modes/cachekey.py: what B changes from A for each variant (a declared config, the
compiler, a keyword flag, an environment flag), the compiler variant's skip on the CPU, and what
the mode yields for its three processes' results (run_processes standing in for them)."""
import pytest
import torch

import kladder as kl
from kladder.core.outcome import Cause, NoteKind, Skip, SpecBroken
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import cachekey
from kladder.run.modes.base import Call, Measured, Same
from kladder.run.modes.jitcache import Result


def scale(x, BLOCK=16, FAST=False):
    return torch.mul(x, 2.0)


def _spec():
    return kl.Spec("scale", kernel=scale, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", like="x"), configs=[{"BLOCK": 16}, {"BLOCK": 64}],
                   toolchain=kl.Toolchain(flags=[kl.Flag("FAST"), kl.Flag(env="MYLIB_PLAN", values=["a", None])]))


def _h(variant, partner=(), device="cpu"):
    pt = Point("scale", 7, (("N", 4),), config=(("BLOCK", 16),), mode="cachekey", variant=variant, partner=partner, seed=5)
    return Harness(_spec(), pt, device)


def test_a_config_variant_runs_b_at_the_other_config():
    a, env_a, b, env_b, changed = cachekey._variants(_h("config", (("config", (("BLOCK", 64),)),)))
    assert (a.mode, a.partner, a.variant, a.seed) == ("eager", (), "", 5)
    assert b.config == (("BLOCK", 64),) and b.dims == a.dims and env_a == env_b == {}
    assert changed == "config BLOCK=64"
    assert cachekey._variants(_h("config", (("config", ()),)))[4] == "config the launcher's own"


def test_the_compiler_variant_is_an_environment_on_a_gpu_and_skipped_under_the_interpreter():
    a, env_a, b, env_b, changed = cachekey._variants(_h("compiler", device="cuda"))
    assert a == b and env_a == {} and env_b == {"TRITON_DEFAULT_FP_FUSION": "0"}
    assert changed == "TRITON_DEFAULT_FP_FUSION=0"
    with pytest.raises(Skip) as e:
        cachekey._variants(_h("compiler"))
    assert e.value.note.kind == NoteKind.NOT_COMPILED


def test_a_keyword_flag_variant_passes_its_first_then_its_other_value():
    a, env_a, b, env_b, changed = cachekey._variants(_h("FAST"))
    assert a.config == (("BLOCK", 16), ("FAST", False)) and b.config == (("BLOCK", 16), ("FAST", True))
    assert env_a == env_b == {} and changed == "FAST=True"


def test_an_environment_flag_variant_sets_the_variable_and_unset_is_said_so():
    a, env_a, b, env_b, changed = cachekey._variants(_h("$MYLIB_PLAN"))
    assert a == b and env_a == {"MYLIB_PLAN": "a"} and env_b == {"MYLIB_PLAN": None}
    assert changed == "MYLIB_PLAN unset"


def test_a_variant_the_spec_does_not_declare_is_the_specs_error():
    with pytest.raises(SpecBroken):
        cachekey._variants(_h("SLOW"))


def test_three_processes_and_what_b_on_the_warm_cache_is_held_to(monkeypatch):
    seen = {}

    def fake(h, processes):
        seen["processes"] = processes
        return [Result({"out": torch.zeros(4)}, [], 3), Result({"out": torch.ones(4)}, [], 5),
                Result({"out": torch.full((4,), 2.0)}, [], 2)]

    monkeypatch.setattr(cachekey, "run_processes", fake)
    out = list(cachekey.MODE.observe(_h("FAST")))
    procs = seen["processes"]
    assert [p.label for p in procs] == ["cold cache: A", "warm cache: B (FAST=True)", "empty cache: B (FAST=True)"]
    assert [p.cache for p in procs] == ["shared", "shared", "empty"]
    assert [dict(p.points[0].config)["FAST"] for p in procs] == [False, True, True]
    assert [type(o) for o in out] == [Same, Call, Measured]
    same, call, note = out
    assert same.cause == Cause.CACHEKEY and same.call == "B (FAST=True) in a process on the cache A left"
    assert same.before["out"].tolist() == [2.0] * 4 and same.after["out"].tolist() == [1.0] * 4   # empty, then warm
    assert same.facts.cause == "cachekey" and same.facts.variant == "FAST=True"
    assert call.returned.tolist() == [1.0] * 4 and dict(call.prep.point.config)["FAST"] is True
    assert note.note.kind == NoteKind.CACHE_MISSED
    assert note.note.facts.to_dict() == {"variant": "FAST=True", "files_cold": 3, "files_added": 2}
