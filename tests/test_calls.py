"""Issue 21 items 5 and 6: a tolerance per config (kl.Config) and stateful launchers (kl.Calls):
the spec's fields and their errors, the tolerance a point is judged at, rung 5's stream of calls
in the model's pattern (each call against its own reference), its facts and words, and climbs
that show a fast path judged at its documented accuracy, a precise path still at float32's, and
launchers with state caught only by the stream."""
import json
import os

import pytest

import kladder as kl
from kladder.core.budgets import COMMIT
from kladder.gen.gaps import repetition
from kladder.core.outcome import Check, NoteKind
from kladder.core.point import Point
from kladder.report.jsonout import outcome_dict
from kladder.report.words import message, note_text, pattern_label
from kladder.run.modes.calls import Plan, seed_of
from kladder.run.trial import run_point
from kladder.core.sizes import CPU_BUDGET, GPU_BUDGET

HERE = os.path.dirname(__file__)
SPECS = os.path.join(HERE, "specs", "stream_state.py")


def _rowsum(x, precise=True, BLOCK=64):
    return x.sum(-1)


def _spec(**over):
    fields = dict(kernel=_rowsum, reference=lambda x: x.sum(-1), args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"])},
                  returns=kl.Tensor("M", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256, tile=16)})
    fields.update(over)
    return kl.Spec("rowsum", **fields)


# ---------------------------------------------------------------------------- kl.Config
FAST = kl.Config({"precise": False}, tolerance={"float32": (1e-3, 1e-5)})


def test_a_config_is_the_dict_of_its_keywords_in_points_reports_and_json():
    assert dict(FAST) == {"precise": False} and FAST == {"precise": False}
    assert json.dumps(FAST) == '{"precise": false}'
    assert repr(FAST) == "kl.Config({'precise': False}, tolerance={'float32': (0.001, 1e-05)})"
    spec = _spec(configs=[FAST, {"precise": True}])
    pts = [p for p in repetition.points(spec, CPU_BUDGET)]            # any generator reads configs as dicts
    from kladder.gen.gaps import shapes
    cfg = [p for p in shapes.points(spec, CPU_BUDGET) if p.config == (("precise", False),)]
    assert cfg and pts
    assert Point.parse(repr(cfg[0])) == cfg[0] and "Config" not in cfg[0].to_json()


def test_the_tolerance_of_a_config_replaces_the_spec_s_for_the_dtypes_it_names():
    spec = _spec(configs=[FAST, {"precise": True}], tolerance={"bfloat16": (0.05, 1e-3), "float32": (1e-5, 1e-5)})
    fast = (("precise", False),)
    assert spec.tolerance_for("float32", fast) == kl.Tolerance(1e-3, 1e-5)         # the config's
    assert spec.tolerance_for("bfloat16", fast) == kl.Tolerance(0.05, 1e-3)        # not named there: the spec's
    assert spec.tolerance_for("float32", (("precise", True),)) == kl.Tolerance(1e-5, 1e-5)
    assert spec.tolerance_for("float32", ()) == kl.Tolerance(1e-5, 1e-5)           # the launcher's default is precise
    assert spec.tolerance_for("float16", fast) == kl.DEFAULT_TOLERANCES["float16"]
    # a flag's value added to the config (rung 7) keeps the config's tolerance
    assert spec.tolerance_for("float32", fast + (("USE_TMA", True),)) == kl.Tolerance(1e-3, 1e-5)


def test_a_call_that_leaves_a_key_at_the_launcher_s_default_is_that_config():
    def fast_by_default(x, precise=False):
        return x.sum(-1)
    spec = _spec(kernel=fast_by_default, configs=[FAST, {"precise": True}])
    assert spec.config_of(()) is spec.configs[0]
    assert spec.tolerance_for("float32", ()) == kl.Tolerance(1e-3, 1e-5)
    both = kl.Config({"precise": False, "BLOCK": 64}, tolerance=(1e-2, 1e-2))
    spec = _spec(configs=[FAST, both])
    assert spec.config_of({"precise": False, "BLOCK": 64}) is both               # the one with the most keys
    assert spec.config_of({"precise": False, "BLOCK": 32}) is FAST


@pytest.mark.parametrize("config, where, says", [
    (kl.Config({"precise": False}, tolerance={"f32": (1e-3, 0)}), "configs.0.tolerance", "key by dtype names"),
    (kl.Config({"precise": False}, tolerance=(1e-3, -1)), "configs.0.tolerance", "two finite numbers >= 0"),
    (kl.Config([("precise", False)]), "configs.0.values", "as a dict"),
])
def test_a_bad_config_names_its_field(config, where, says):
    with pytest.raises(kl.SpecError) as e:
        _spec(configs=[config])
    assert f"Spec('rowsum').{where}" in str(e.value) and says in str(e.value)


def test_a_misspelt_config_keyword_is_a_spec_error():
    with pytest.raises(kl.SpecError, match="did you mean 'tolerance'"):
        kl.Config({"precise": False}, tolerence=(1e-3, 1e-5))


# ---------------------------------------------------------------------------- kl.Calls
@pytest.mark.parametrize("calls, where, says", [
    (kl.Calls(pattern="aabb"), "calls.pattern", "capital letters"),
    (kl.Calls(pattern=""), "calls.pattern", "capital letters"),
    (kl.Calls(count=0), "calls.count", "an int >= 1"),
    (kl.Calls(fresh="yes"), "calls.fresh", "True when every step"),
    (kl.Calls(seconds=-1), "calls.seconds", "> 0"),
    (kl.Calls(seconds=100), "calls.seconds", "half the point's timeout (120 s)"),
    ("AABB", "calls", "kl.Calls(pattern='AABB'"),
])
def test_a_bad_calls_names_its_field(calls, where, says):
    with pytest.raises(kl.SpecError) as e:
        _spec(repetition=kl.Repetition(calls=calls))
    assert f"Spec('rowsum').repetition.{where}: got" in str(e.value) and says in str(e.value)


def test_the_pattern_names_input_sets_in_the_order_the_model_passes_them():
    aabb = Plan(100, 1.0, "AABB", True, True)
    assert [aabb.set_of(k) for k in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]        # new sets every step
    assert [aabb.where(k) for k in (0, 3, 4)] == [(1, "A"), (1, "B"), (2, "A")]
    same = Plan(100, 1.0, "ABA", False, True)
    assert [same.set_of(k) for k in range(6)] == [0, 1, 0, 0, 1, 0]              # the same sets every step
    assert len({seed_of(7, i) for i in range(1000)}) == 1000


def test_rung_5_has_one_stream_by_default_and_the_declared_one_with_calls():
    plain = [p for p in repetition.points(_spec(), CPU_BUDGET) if p.mode == "calls"]
    assert len(plain) == 1
    d = dict(plain[0].repeat)
    assert (d["pattern"], d["fresh"], d["declared"]) == ("A", True, False)
    assert (d["calls"], d["seconds"]) == (COMMIT.stream_calls["cpu"], COMMIT.stream_s["cpu"])      # --budget commit
    assert plain[0].sizes == repetition.smallest(_spec(), repetition.repetition(CPU_BUDGET))
    declared = [p for p in repetition.points(_spec(repetition=kl.Repetition(calls=kl.Calls(pattern="AABB", count=5000))), GPU_BUDGET)
                if p.mode == "calls"]
    d = dict(declared[0].repeat)
    assert (d["pattern"], d["calls"], d["seconds"], d["declared"]) == ("AABB", 5000, repetition.STREAM_DECLARED_S["cuda"], True)
    assert "'AABB'" in declared[0].why and Point.parse(repr(declared[0])) == declared[0]
    short = [p for p in repetition.points(_spec(repetition=kl.Repetition(calls=kl.Calls()), timeout_s=20), CPU_BUDGET) if p.mode == "calls"]
    assert dict(short[0].repeat)["seconds"] == 10.0                              # within half the point's timeout
    asked = [p for p in repetition.points(_spec(), CPU_BUDGET, repeat=40, repeat_s=2.0) if p.mode == "calls"]
    assert (dict(asked[0].repeat)["calls"], dict(asked[0].repeat)["seconds"]) == (40, 2.0)   # --repeat, --repeat-s


# ---------------------------------------------------------------------------- the stream, run in this process
def _stream(spec, **plan):
    pt = next(p for p in repetition.points(spec, CPU_BUDGET) if p.mode == "calls")
    if plan:
        pt = Point.from_dict({**pt.to_dict(), "repeat": [[k, v] for k, v in {**dict(pt.repeat), **plan}.items()]})
    return run_point(spec, pt, "cpu").outcome


def _load(name):
    import importlib.util
    s = importlib.util.spec_from_file_location("stream_state_t", SPECS)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return getattr(mod, name)


def test_a_ring_that_wraps_wrong_is_wrong_from_its_first_reuse_on():
    o = _stream(_load("ring_bad"), seconds=120.0)
    assert o.status == "failed", o.note
    f = o.findings[0]
    assert f.check == Check.STREAM and f.call == "call 1,025 of 3,000"
    x = f.facts
    assert (x.first_wrong, x.step, x.letter, x.calls, x.judged) == (1025, 257, "A", 3000, 2999)
    assert x.first_calls == list(range(1025, 1033)) and x.sets == 1500 and x.batched
    assert x.wrong + x.undecided == 3000 - 1024 and x.excused == 0
    assert f.mismatched == f.total == 2
    assert "of 2,999 calls of the stream wrong, the first call 1,025; call 1,025: every element" in pattern_label(f)
    text = message(f)
    assert "the first is call 1,025 (step 257, input set A)" in text and "'AABB' (kl.Repetition(calls=))" in text
    d = outcome_dict(o)
    json.dumps(d, allow_nan=False)
    assert d["findings"][0]["facts"]["first_wrong"] == 1025


def test_the_same_ring_zeroed_every_call_passes_and_says_what_it_proved():
    o = _stream(_load("ring_good"), seconds=120.0)
    assert o.status == "passed" and not o.findings
    assert o.note.kind == NoteKind.STREAM_CLEAN
    x = o.note.facts
    assert (x.calls, x.judged, x.wrong, x.stopped) == (3000, 2999, 0, "calls")
    assert note_text(o.note).startswith("0 of 2,999 calls wrong against the reference of their own inputs: p < ")


def test_a_cache_keyed_by_a_probe_is_wrong_now_and_then_on_new_inputs_and_the_right_key_passes():
    bad = _stream(_load("cache_bad"), seconds=120.0)
    assert bad.status == "failed"
    x = bad.findings[0].facts
    assert 0 < x.wrong < 40 and x.judged == 3999 and x.first_wrong > 2              # a rare collision, not the AA repeat
    assert x.first_wrong in x.first_calls
    good = _stream(_load("cache_good"), seconds=120.0)
    assert good.status == "passed", [message(f) for f in good.findings]


def test_the_stream_runs_without_a_declaration_and_its_time_budget_ends_it():
    o = _stream(_load("ring_good"), calls=10**9, seconds=0.5, pattern="A", declared=False)
    assert o.status == "passed"
    x = o.note.facts
    assert x.stopped == "seconds" and x.calls > 1 and not x.declared
    assert "the time budget ended it" in note_text(o.note)


def test_every_call_is_judged_against_the_reference_of_its_own_inputs():
    seen = []

    def kernel(x):
        seen.append(x.detach().clone())
        return x.sum(-1)
    o = _stream(_spec(kernel=kernel, args={"x": kl.Tensor("M N", dtype="float32")}, repetition=kl.Repetition(calls=kl.Calls("AB", count=9))))
    assert o.status == "passed" and o.note.facts.judged == 8
    assert len(seen) == 9 and len({t.sum().item() for t in seen}) == 9            # "AB", fresh: 9 distinct sets

    ptrs = []

    def kernel2(x):
        ptrs.append(x.data_ptr())
        return x.sum(-1)
    o = _stream(_spec(kernel=kernel2, args={"x": kl.Tensor("M N", dtype="float32")}, repetition=kl.Repetition(calls=kl.Calls("AABB", count=12))))
    assert o.status == "passed" and o.note.facts.sets == 6
    steps = [ptrs[i:i + 4] for i in range(0, 12, 4)]
    assert all(a == b and c == d and a != c for a, b, c, d in steps)             # one letter of a step: the same tensor
    assert all(p % 512 == 0 for p in ptrs[2:])                                     # each set where torch would put it

    def stale(x, _last={}):  # noqa: B006 - the shared default is the stale state: call 1's result forever
        return _last.setdefault("y", x.sum(-1)).clone()
    o = _stream(_spec(kernel=stale, args={"x": kl.Tensor("M N", dtype="float32")}, repetition=kl.Repetition(calls=kl.Calls("AA", count=9))))
    assert o.status == "failed" and o.findings[0].facts.first_wrong == 3          # call 2 is on call 1's inputs


def test_a_reference_vmap_cannot_map_is_called_once_a_set():
    def ref(x):
        return x.sum(-1) if float(x.sum()) != 12345.0 else x.sum(-1)              # .item(): data-dependent
    o = _stream(_spec(reference=ref, args={"x": kl.Tensor("M N", dtype="float32")}, repetition=kl.Repetition(calls=kl.Calls("A", count=20))))
    assert o.status == "passed" and not o.note.facts.batched and o.note.facts.judged == 19


# ---------------------------------------------------------------------------- climbs (a worker, a fresh process)
def _climb(name, rungs, tmp_path):
    return kl.climb(f"{SPECS}::{name}", rungs=rungs, device="cpu", log_path=str(tmp_path / "l.jsonl"))


def _statuses(rep, rung):
    return {o.point.id: o.status for o in rep.outcomes if o.point.rung == rung}


def test_a_fast_path_passes_at_its_config_s_tolerance_and_fails_without_it(tmp_path):
    ok = _climb("with_config_tolerance", 1, tmp_path)
    bad = _climb("without_config_tolerance", 1, tmp_path)
    assert not ok.failures, [message(f) for o in ok.outcomes for f in o.findings][:3]
    assert bad.failures
    failed = [o for o in bad.outcomes if o.status == "failed"]
    assert failed and all(o.point.config == (("precise", False),) for o in failed)


def test_the_precise_path_is_still_judged_at_float32_accuracy(tmp_path):
    rep = _climb("precise_bug", 1, tmp_path)
    failed = [o for o in rep.outcomes if o.status == "failed"]
    assert failed
    assert {o.point.config for o in failed} == {(), (("precise", True),)}          # the default and the precise path
    assert all(f.facts.rtol == kl.DEFAULT_TOLERANCES["float32"].rtol for o in failed for f in o.findings)


def test_rung_5_catches_the_ring_only_in_its_stream_and_passes_its_twin(tmp_path):
    bad = _climb("ring_bad", 5, tmp_path)
    failed = [o for o in bad.outcomes if o.status == "failed"]
    assert [o.point.mode for o in failed] == ["calls"]                             # the 100-call repeats miss it
    assert failed[0].findings[0].facts.first_wrong == 1025                          # a fresh process: call N is the Nth
    good = _climb("ring_good", 5, tmp_path)
    assert not good.failures
    assert any(o.point.mode == "calls" and o.status == "passed" for o in good.outcomes)
