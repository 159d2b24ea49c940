"""run/modes/dispatch.py: the child a point with environment variables gets (its label, the
variables, what a declared after-import flag starts with), how many processes a point starts,
and one traced call in this process: what it ran, the `when` variables as the call had them, and
no values to judge where the launcher is documented to refuse."""
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import dispatch
from kladder.run.modes.base import Call, Ran


def dot_launcher(x, BLOCK=16):
    return _dot_path(x)


def _dot_path(x):
    return torch.mul(x, 3.0)


def _spec(*expect, fl=()):
    return kl.Spec("dot", kernel=dot_launcher, reference=lambda x: 3 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", like="x"),
                   toolchain=kl.Toolchain(expect=list(expect), flags=list(fl)))


def _point(env=(), env_set=""):
    return Point("dot", 7, (("N", 4),), mode="dispatch", env=env, env_set=env_set, seed=4)


def test_a_point_starts_a_process_only_with_environment_variables():
    assert dispatch.Dispatch.children(_point(), "cpu") == 0
    assert dispatch.Dispatch.children(_point((("MYLIB_FAST", "1"),)), "cuda") == 1


def test_variables_from_the_start_are_said_with_their_values_and_unset_ones():
    run = dispatch._env_run(Harness(_spec(), _point((("MYLIB_FAST", "1"), ("MYLIB_OLD", None))), "cpu"))
    assert run.label == "MYLIB_FAST=1, MYLIB_OLD unset from its start"
    assert run.env == {"MYLIB_FAST": "1", "MYLIB_OLD": None}
    assert run.point.mode == "eager" and run.point.seed == 4 and not run.after_import and run.started is None


def test_after_import_a_declared_flag_starts_with_its_other_value_and_an_undeclared_unset():
    spec = _spec(fl=[kl.Flag(env="MYLIB_FAST", values=["0", "1"], set="after_import")])
    run = dispatch._env_run(Harness(spec, _point((("MYLIB_FAST", "1"), ("OTHER", "x")), "after_import"), "cpu"))
    assert run.label == "MYLIB_FAST=1, OTHER=x set after import and one call"
    assert run.after_import and run.started == {"MYLIB_FAST": "0", "OTHER": None}


def test_a_traced_call_yields_what_ran_with_the_when_variables_then_the_call(monkeypatch):
    monkeypatch.setenv("MYLIB_FAST", "1")
    monkeypatch.delenv("MYLIB_PLAN", raising=False)
    spec = _spec(kl.Expect("_dot_path", when={"$MYLIB_FAST": "1"}), kl.Expect("*dot*", when={"$MYLIB_PLAN": None}))
    out = list(dispatch.MODE.observe(Harness(spec, _point(), "cpu")))
    assert [type(o) for o in out] == [Ran, Call]
    ran, call = out
    assert ran.functions[:2] == ["dot_launcher", "_dot_path"] and ran.launches == []
    assert ran.env == {"MYLIB_FAST": "1", "MYLIB_PLAN": None}
    assert torch.equal(call.returned, 3 * call.prep.inputs.args[0])


def test_where_the_launcher_is_documented_to_refuse_no_values_are_judged():
    spec = _spec(kl.Expect("*", runs=False, when={"N": 4}))
    out = list(dispatch.MODE.observe(Harness(spec, _point(), "cpu")))
    assert [type(o) for o in out] == [Ran]
    elsewhere = Point("dot", 7, (("N", 5),), mode="dispatch")
    assert [type(o) for o in dispatch.MODE.observe(Harness(spec, elsewhere, "cpu"))] == [Ran, Call]


def test_a_point_with_variables_runs_its_call_in_a_child(monkeypatch):
    got = {}

    def run_env(h, runs):
        got["runs"] = runs
        return [({"out": torch.full((4,), 7.0)}, Ran([], label="child"))]

    monkeypatch.setattr(dispatch, "run_env", run_env)
    out = list(dispatch.MODE.observe(Harness(_spec(), _point((("MYLIB_FAST", "0"),)), "cpu")))
    (run,) = got["runs"]
    assert run.env == {"MYLIB_FAST": "0"}
    assert [type(o) for o in out] == [Ran, Call]
    assert out[1].label == "a process with MYLIB_FAST=0 from its start" and out[1].returned.tolist() == [7.0] * 4
