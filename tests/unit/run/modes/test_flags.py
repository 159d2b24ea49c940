"""run/modes/flags.py: the flag a point names (or the spec's error when it names none it
declares), the "not visible" skip where a call launches nothing kladder can see (a torch op on
the CPU), one call a value of a launcher keyword, and the child processes an environment flag
gets (labels, variables, after-import starts) with run_env standing in for them."""
import pytest
import torch

import kladder as kl
from kladder.core.outcome import NoteKind, Skip, SpecBroken
from kladder.core.point import Point
from kladder.run.harness import Harness
from kladder.run.modes import flags
from kladder.run.modes.base import Call, Flagged, Ran


def scale(x, FAST=False):
    return torch.mul(x, 2.0)


def _spec(*fl):
    return kl.Spec("scale", kernel=scale, reference=lambda x: 2 * x, args={"x": kl.Tensor("N", dtype="float32")},
                   dims={"N": kl.Dim(1, 16)}, returns=kl.Tensor("N", like="x"), toolchain=kl.Toolchain(flags=list(fl)))


def _point(variant, env_set=""):
    return Point("scale", 7, (("N", 4),), mode="flags", variant=variant, seed=9, env_set=env_set)


def test_the_flag_a_point_names_is_found_by_its_key():
    spec = _spec(kl.Flag("FAST"), kl.Flag(env="MYLIB_FAST"))
    assert flags.declared_flag(spec, "FAST").name == "FAST"
    assert flags.declared_flag(spec, "$MYLIB_FAST").env == "MYLIB_FAST"


@pytest.mark.parametrize("declared, said", [((kl.Flag("FAST"), kl.Flag(env="MYLIB_FAST")), "(FAST, $MYLIB_FAST)"),
                                            ((), "(no flags)")])
def test_a_flag_the_spec_does_not_declare_is_the_specs_error_naming_what_it_declares(declared, said):
    with pytest.raises(SpecBroken) as e:
        flags.declared_flag(_spec(*declared), "SLOW")
    assert e.value.note.kind == NoteKind.INPUTS_FAILED
    assert e.value.note.facts.text == f"the point names the flag 'SLOW', which the spec does not declare {said}"


def test_a_call_that_launches_nothing_visible_is_skipped_naming_the_flag():
    with pytest.raises(Skip) as e:
        list(flags.MODE.observe(Harness(_spec(kl.Flag("FAST")), _point("FAST"), "cpu")))
    assert e.value.note.kind == NoteKind.FLAG_NOT_VISIBLE and e.value.note.facts.flag == "FAST"


def test_a_keyword_flag_runs_one_call_a_value_here_with_that_value_passed(monkeypatch):
    seen = []

    def traced(h, prep, label=""):
        seen.append(prep.point.kwargs)
        return h.call(prep, label), Ran([{"name": "k", "code": label}], label=label)

    monkeypatch.setattr(flags, "traced_call", traced)
    out = list(flags.MODE.observe(Harness(_spec(kl.Flag("FAST")), _point("FAST"), "cpu")))
    assert [type(o) for o in out] == [Call, Call, Flagged]
    assert seen == [{"FAST": False}, {"FAST": True}]
    assert [c.label for c in out[:2]] == ["FAST=False", "FAST=True"]
    assert all(c.prep.point.mode == "eager" and c.prep.point.variant == "" for c in out[:2])
    f = out[2]
    assert (f.flag, f.set, f.started, f.variable) == ("FAST", "", [], None)
    assert [v for v, _ in f.runs] == [False, True] and f.runs[1][1].launches[0]["code"] == "FAST=True"
    assert torch.equal(out[0].returned, out[1].returned)


def _env_runs(monkeypatch, flag, env_set=""):
    got = {}

    def run_env(h, runs):
        got["runs"] = runs
        return [({"out": torch.full((4,), float(i))}, Ran([{"name": "k", "code": str(i)}])) for i in range(len(runs))]

    monkeypatch.setattr(flags, "run_env", run_env)
    out = list(flags.MODE.observe(Harness(_spec(flag), _point(flag.key, env_set), "cpu")))
    return got["runs"], out


def test_an_environment_flag_runs_each_value_in_a_process_from_its_start(monkeypatch):
    runs, out = _env_runs(monkeypatch, kl.Flag(env="MYLIB_FAST", values=[None, "1"]))
    assert [r.label for r in runs] == ["MYLIB_FAST unset from its start", "MYLIB_FAST=1 from its start"]
    assert [r.env for r in runs] == [{"MYLIB_FAST": None}, {"MYLIB_FAST": "1"}]
    assert not any(r.after_import for r in runs) and all(r.point.mode == "eager" for r in runs)
    calls, flagged = out[:2], out[2]
    assert [c.label for c in calls] == ["a process with MYLIB_FAST unset from its start",
                                        "a process with MYLIB_FAST=1 from its start"]
    assert [c.returned.tolist() for c in calls] == [[0.0] * 4, [1.0] * 4]     # each process's own outputs
    assert (flagged.flag, flagged.set, flagged.started, flagged.variable) == ("$MYLIB_FAST", "", [], "MYLIB_FAST")


def test_set_after_import_every_process_starts_with_the_first_value(monkeypatch):
    runs, out = _env_runs(monkeypatch, kl.Flag(env="MYLIB_FAST", values=["0", "1", None], set="after_import"),
                          env_set="after_import")
    assert [r.label for r in runs] == [
        "MYLIB_FAST=0 set after import and one call (started with MYLIB_FAST=0)",
        "MYLIB_FAST=1 set after import and one call (started with MYLIB_FAST=0)",
        "MYLIB_FAST unset set after import and one call (started with MYLIB_FAST=0)"]
    assert all(r.after_import and r.started == {"MYLIB_FAST": "0"} for r in runs)
    assert all(r.point.env_set == "" for r in runs)
    flagged = out[-1]
    assert flagged.set == "after_import" and flagged.started == ["0", "0", "0"]
