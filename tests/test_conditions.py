"""Rung 7's conditions (issue 21 item 4): an Expect's `when` on an environment variable
("$NAME") and on the toolchain (torch, triton, cuda, capability), kl.Flag(env=..., values=(None,
...)) with None unset, and kl.Flag(..., set="after_import"): a launcher that reads its variable
once at import is caught, one that reads it at call time passes (tests/specs/conditions.py)."""
import dataclasses
import os
import sys

import pytest

import kladder as kl
from kladder.checks import dispatch as dispatch_check
from kladder.checks import flags as flags_check
from kladder.core.facts import RanFacts
from kladder.gen.gaps import toolchain
from kladder.core.notation import EnvSet
from kladder.core.outcome import Check, Note, NoteKind, Status
from kladder.core.point import Point
from kladder.report.words import message, note_text
from kladder.run.modes.base import Flagged, Ran
from kladder.run.modes.envset import with_env
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET
from kladder.core.versions import holds

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "specs"))
import conditions as cx  # noqa: E402  (tests/specs/conditions.py)


def _spec(**over):
    return cx.make(cx.fast_at_call, **over)


def _ran(*names, env=None):
    return Ran([{"name": n, "params": {"BLOCK": 64}, "code": n, "how": "source", "asm": {}} for n in names], [], [],
               env=env or {})


def _pt(n=129, **kw):
    return Point("fast_at_call", 7, (("N", n),), **kw)


# ---------------------------------------------------------------------------- the spec
@pytest.mark.parametrize("when,words", [
    ({"$KLT_FAST": 1}, ["'$NAME'", "None for unset"]),
    ({"$": "1"}, ["'$NAME'"]),
    ({"torch": "2.6"}, ["'2.6' is not a version specifier", "{'torch': '>=2.6'}"]),
    ({"capability": ">=nine"}, ["is not a version specifier", "{'capability': '>=9.0'}"]),
    ({"Q": 1}, ["'Q' is neither a dim (N) nor a config key", "'$NAME'", "torch, triton, cuda, capability"]),
])
def test_a_bad_condition_names_the_field_the_value_and_the_forms(when, words):
    with pytest.raises(kl.SpecError) as e:
        _spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when=when)], flags=[cx.FLAG]))
    assert e.value.where == "Spec('fast_at_call').toolchain.expect[0].when"
    text = str(e.value)
    assert all(w in text for w in words), text


@pytest.mark.parametrize("flag,where,words", [
    (kl.Flag("FAST", set="after_import"), "flags['FAST'].set", "a launcher keyword is passed with every call"),
    (kl.Flag(env="KLT_FAST", set="later"), "flags['$KLT_FAST'].set", "'after_import'"),
    (kl.Flag(env="KLT_FAST", values=(None, 1)), "flags['$KLT_FAST'].values", "None for unset"),
])
def test_a_bad_flag_names_the_field_and_the_fix(flag, where, words):
    with pytest.raises(kl.SpecError) as e:
        _spec(toolchain=kl.Toolchain(flags=[flag]))
    assert e.value.where == f"Spec('fast_at_call').toolchain.{where}" and words in str(e.value)


def test_good_conditions_are_accepted():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("_fast_kernel", when={"$KLT_FAST": "1", "torch": ">=2.0,<99", "capability": ">=9.0"}),
                         kl.Expect("_plain_kernel", when={"$OTHER": [None, "x"], "triton": "~=3.0", "cuda": ">=12"})], flags=[kl.Flag(env="KLT_FAST", values=(None, "1"), set="after_import")]),
                 )
    assert spec.toolchain.flags[0].set == EnvSet.AFTER_IMPORT and spec.toolchain.flags[0].values == (None, "1")
    assert spec.when_variables == ("KLT_FAST", "OTHER")
    assert kl.Flag(env="X").set == "at_start"
    cx.make(cx.rowsum, toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"precise": False})]))       # a launcher keyword, no configs


@pytest.mark.parametrize("spec,version,ok", [
    (">=2.6", "2.6.0a0+git1234", True), (">=2.6", "2.5.1+cu124", False), (">=9.0", "9.0", True), (">=9.0", "8.6", False),
    (">=2.4,<2.7", "2.5.1", True), ("~=3.1", "3.9.0", True), ("~=3.1", "4.0", False), ("==12.4", "12.4", True),
    (">=9.0", None, False),
])
def test_versions_compare_by_release(spec, version, ok):
    assert holds(spec, version) == ok


# ---------------------------------------------------------------------------- judging a point's conditions
def test_an_environment_condition_matches_the_environment_the_call_had():
    fast, plain = cx.FAST
    assert dispatch_check.applies(fast, _pt(), env={"KLT_FAST": "1"})
    assert not dispatch_check.applies(fast, _pt(), env={"KLT_FAST": None})
    assert dispatch_check.applies(plain, _pt(), env={"KLT_FAST": None})            # None: unset
    assert dispatch_check.applies(fast, _pt(env=(("KLT_FAST", "1"),)))             # as the point sets it
    spec = cx.read_at_call
    f, _ = dispatch_check.dispatch(spec, _pt(env=(("KLT_FAST", "1"),), env_set="after_import"),
                                   _ran("_plain_kernel", env={"KLT_FAST": "1"}))
    assert f.check == Check.DISPATCH and f.facts.env == {"KLT_FAST": "1"} and f.facts.started == {"KLT_FAST": None}
    text = message(f)
    assert "the fast kernel (`_fast_kernel`) to run here, with KLT_FAST=1 set after the kernel's module was imported" in text
    assert "the process started with KLT_FAST unset" in text and "reads the variable once" in text
    assert dispatch_check.dispatch(spec, _pt(), _ran("_fast_kernel", env={"KLT_FAST": "1"}))[0] is None
    assert dispatch_check.dispatch(spec, _pt(), _ran("_fast_kernel", env={"KLT_FAST": "0"}))[0] is not None


def test_an_expectation_whose_toolchain_does_not_hold_is_not_judged_and_the_note_says_why():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("_fast_kernel", when={"torch": ">=99"}, label="the new path"),
                         kl.Expect("_fast_kernel", when={"capability": ">=9.0"}), kl.Expect("_fast_kernel")]))
    have = {"torch": "2.5.1", "triton": "3.1.0", "cuda": None, "capability": None}
    f, unjudged = dispatch_check.dispatch(spec, _pt(), _ran("_plain_kernel"), have)
    assert [e["kernel"] for e in f.facts.expected] == ["_fast_kernel"] and not f.facts.expected[0]["when"]
    assert [u["unmet"] for u in unjudged] == [[{"key": "torch", "want": ">=99", "have": "2.5.1"}],
                                              [{"key": "capability", "want": ">=9.0", "have": None}]]
    note = Note(NoteKind.RAN, RanFacts(**dispatch_check.ran_facts(_ran("_plain_kernel")), unjudged=unjudged))
    text = note_text(note)
    assert "the new path (`_fast_kernel`) not judged here: torch >=99 does not hold (torch 2.5.1 here)" in text
    assert "`_fast_kernel` not judged here: capability >=9.0 does not hold (no capability here)" in text
    met = dict(have, torch="99.1", capability="9.0")
    f, unjudged = dispatch_check.dispatch(spec, _pt(), _ran("_plain_kernel"), met)
    assert len(f.facts.expected) == 3 and unjudged == []
    assert dispatch_check.toolchain_of("cpu")["capability"] is None and dispatch_check.toolchain_of("cpu")["torch"]


def test_a_config_condition_matches_a_call_that_leaves_the_keyword_at_its_default():
    spec = cx.precise_default
    precise, quick = spec.expectations
    assert dispatch_check.applies(precise, _pt(), {"precise": True})                # rowsum(x): precise defaults to True
    assert not dispatch_check.applies(quick, _pt(), {"precise": True})
    f, _ = dispatch_check.dispatch(spec, _pt(), _ran("_plain_kernel"))
    assert f is not None and [e["kernel"] for e in f.facts.expected] == ["_fast_kernel"]
    f, _ = dispatch_check.dispatch(spec, _pt(config=(("precise", False),)), _ran("_plain_kernel"))
    assert f is None


def test_an_after_import_flag_that_changes_nothing_is_a_finding_saying_so():
    same = Flagged("$KLT_FAST", [(None, _ran("_plain_kernel")), ("0", _ran("_plain_kernel")), ("1", _ran("_plain_kernel"))],
                   "after_import", [None, None, None], "KLT_FAST")
    f, note = flags_check.no_effect(same)
    assert f.check == Check.FLAG_NO_EFFECT and f.facts.set == "after_import" and f.facts.variable == "KLT_FAST"
    assert [r["started"] for r in f.facts.runs] == [None, None, None]
    text = message(f)
    assert text.startswith("the variable KLT_FAST changes nothing when it is set after the kernel's module was imported")
    assert "its values unset, '0', '1'" in text and "KLT_FAST=1 (started with KLT_FAST unset) ran _plain_kernel(BLOCK=64)" in text
    other = dataclasses.replace(same, runs=[(None, _ran("_plain_kernel")), ("0", _ran("_plain_kernel")),
                                            ("1", _ran("_fast_kernel"))])
    f, note = flags_check.no_effect(other)
    assert f is None and "each set after the kernel's module was imported" in note_text(note)


def test_none_unsets_a_variable():
    assert with_env({"A": "1", "B": "2"}, {"A": None, "C": "3"}) == {"B": "2", "C": "3"}


# ---------------------------------------------------------------------------- the points
def test_rung_7_runs_an_after_import_flag_both_ways():
    pts = list(toolchain.points(cx.read_at_call, CPU_BUDGET))
    flags = [(p.variant, p.env_set) for p in pts if p.mode == "flags"]
    assert flags == [("$KLT_FAST", ""), ("$KLT_FAST", "after_import")]
    envs = {(p.env, p.env_set) for p in pts if p.mode == "dispatch" and p.env}
    assert envs == {((("KLT_FAST", v),), s) for v in (None, "0", "1") for s in ("", "after_import")}
    late = next(p for p in pts if p.env == (("KLT_FAST", "1"),) and p.env_set == "after_import")
    assert "KLT_FAST=1 set after the kernel's module was imported" in late.why and "started with KLT_FAST unset" in late.why
    for p in pts:
        assert Point.parse(p.to_json()) == p and Point.parse(repr(p)) == p
    assert len({p.id for p in pts}) == len(pts) and len({p.seed for p in pts if p.env}) == 6
    with pytest.raises(ValueError, match="env_set"):
        Point.from_dict({"spec": "s", "rung": 7, "dims": [["N", 1]], "env_set": "later"})


def test_a_toolchain_condition_is_said_in_the_points_why():
    spec = _spec(toolchain=kl.Toolchain(expect=[kl.Expect("_fast_kernel", when={"N": 64, "torch": ">=99"}, label="the new path"),
                         kl.Expect("_fast_kernel", when={"N": 65, "capability": ">=9.0"})]))
    whys = [p.why for p in toolchain.points(spec, CPU_BUDGET) if p.mode == "dispatch" and not p.layouts]
    assert any("the new path, where torch >=99 (here 2." in w and ": not met, so not judged here), must run" in w for w in whys)
    assert any("`_fast_kernel`, where capability >=9.0 (judged where the point runs), must run at N=65" in w for w in whys)


# ---------------------------------------------------------------------------- in child processes
def _outcome(monkeypatch, name, **want):
    from kladder.run.modes.jitcache import REF_ENV
    monkeypatch.setenv(REF_ENV, os.path.join(HERE, "specs", "conditions.py") + "::" + name)   # as in a worker
    spec = getattr(cx, name)
    (p,) = [p for p in toolchain.points(spec, CPU_BUDGET) if all(getattr(p, k) == v for k, v in want.items())]
    return run_point(spec, p, "cpu").outcome


def test_a_launcher_that_reads_its_variable_at_import_fails_after_import_and_one_that_reads_it_per_call_passes(monkeypatch):
    late = dict(mode="dispatch", env=(("KLT_FAST", "1"),), env_set="after_import")
    bad = _outcome(monkeypatch, "read_at_import", **late)
    assert bad.status == Status.FAILED and [f.check for f in bad.findings] == [Check.DISPATCH]   # values right
    assert bad.headline.facts.env_set == "after_import" and "Ran instead: Triton _plain_kernel" in message(bad.headline)
    good = _outcome(monkeypatch, "read_at_call", **late)
    assert good.status == Status.PASSED and "_fast_kernel" in note_text(good.note)
    start = _outcome(monkeypatch, "read_at_import", mode="dispatch", env=(("KLT_FAST", "1"),), env_set="")
    assert start.status == Status.PASSED and "_fast_kernel" in note_text(start.note)    # set at start, it works


def test_an_after_import_flag_point_catches_a_launcher_that_reads_at_import(monkeypatch):
    bad = _outcome(monkeypatch, "lean_at_import", mode="flags", env_set="after_import")
    assert bad.status == Status.FAILED and [f.check for f in bad.findings] == [Check.FLAG_NO_EFFECT]
    assert bad.headline.facts.set == "after_import" and bad.headline.facts.values == [None, "1"]
    good = _outcome(monkeypatch, "lean_at_call", mode="flags", env_set="after_import")
    assert good.status == Status.PASSED and good.note.facts.codes == 2 and good.note.facts.set == "after_import"


def test_every_rung_7_point_of_these_specs_fits_its_spec_for_repro():
    from kladder.climbing.pointcheck import check_point
    for spec in (cx.read_at_call, cx.precise_default, cx.gated):
        for p in toolchain.points(spec, CPU_BUDGET):
            check_point(spec, Point.parse(repr(p)))
