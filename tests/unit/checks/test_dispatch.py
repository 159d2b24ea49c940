"""checks/dispatch.py directly, beside what tests/test_rung7.py and test_conditions.py cover: an
expectation's `when` over dtypes, lists and unset variables, toolchain conditions judged apart,
what must not run (runs=False), a documented refusal, the facts kept (bounded, strict JSON), and
how a point set its environment."""
import json

import pytest

import kladder as kl
from kladder.checks import dispatch
from kladder.core.outcome import Check, Finding
from kladder.core.point import Point
from kladder.run.modes.base import Ran


def kernel(x, w, BLOCK=64, precise=True):
    return x


def ref(x, w):
    return x


def _spec(expect=(), flags=(), **kw):
    return kl.Spec("k", kernel=kernel, reference=ref,
                   args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256)},
                   toolchain=kl.Toolchain(expect=list(expect), flags=list(flags)), **kw)


def _pt(dtype="float32", env=(), env_set="", **dims):
    return Point("k", 7, tuple((dims or {"M": 4, "N": 8}).items()), dtypes=(("x", dtype),), env=env, env_set=env_set)


def _ran(*names, gpu=(), functions=(), env=None, **params):
    return Ran([{"name": n, "params": dict(params), "code": n, "how": "source", "asm": {}} for n in names],
               list(gpu), list(functions), env=env or {})


def test_a_dtype_condition_reads_the_points_dtype_of_that_tensor():
    spec = _spec([kl.Expect("_bf16", when={"dtype": "bfloat16"}), kl.Expect("_w32", when={"dtype:w": ["float32"]})])
    bf16, w32 = spec.expectations
    assert dispatch.applies(bf16, _pt("bfloat16"), spec=spec)
    assert not dispatch.applies(bf16, _pt("float32"), spec=spec)
    assert dispatch.applies(w32, _pt("bfloat16"), spec=spec)                 # w's own dtype, whatever x's
    f, _ = dispatch.dispatch(spec, _pt("bfloat16"), _ran("_w32"))
    assert [e["kernel"] for e in f.facts.expected] == ["_bf16"]
    assert dispatch.dispatch(spec, _pt("float32"), _ran("_w32"))[0] is None


def test_an_environment_condition_matches_any_listed_value_and_none_is_unset():
    e = kl.Expect("_fast", when={"$LIB_FAST": ["1", "2"]})
    assert dispatch.applies(e, _pt(env=(("LIB_FAST", "2"),)))
    assert not dispatch.applies(e, _pt(env=(("LIB_FAST", "0"),)))
    assert not dispatch.applies(e, _pt())                                  # not set at all: None
    assert dispatch.applies(e, _pt(env=(("LIB_FAST", "0"),)), env={"LIB_FAST": "1"})    # as the call had it
    unset = kl.Expect("_slow", when={"$LIB_FAST": None})
    assert dispatch.applies(unset, _pt()) and not dispatch.applies(unset, _pt(env=(("LIB_FAST", "1"),)))


def test_a_config_key_with_no_default_and_not_set_does_not_match():
    e = kl.Expect("_k", when={"SPLIT": 2})
    assert not dispatch.applies(e, _pt())
    assert dispatch.applies(e, _pt(), defaults={"SPLIT": 2})
    assert dispatch.applies(kl.Expect("_k"), _pt())                        # no `when`: everywhere


def test_toolchain_conditions_are_left_to_unmet_which_names_each_that_fails():
    e = kl.Expect("_sm90", when={"torch": ">=2.6", "capability": ">=9.0", "M": 4})
    assert dispatch.applies(e, _pt())                                      # only M is read here
    have = {"torch": "2.13.0", "capability": None}
    assert dispatch.unmet(e, have) == [{"key": "capability", "want": ">=9.0", "have": None}]
    assert dispatch.unmet(e, {"torch": "2.5.1", "capability": "9.0"}) == [{"key": "torch", "want": ">=2.6", "have": "2.5.1"}]
    assert dispatch.unmet(e, {"torch": "2.6.0", "capability": "9.0"}) == []
    assert dispatch.unmet(kl.Expect("_k"), {}) == []


def test_an_expectation_not_judged_for_its_toolchain_is_listed_and_fails_nothing():
    spec = _spec([kl.Expect("_sm90", when={"capability": ">=9.0"}, label="Hopper's kernel")])
    assert dispatch.names_toolchain(spec) and not dispatch.names_toolchain(_spec([kl.Expect("_k", when={"M": 4})]))
    f, skipped = dispatch.dispatch(spec, _pt(), _ran("_generic"), {"capability": None})
    assert f is None and skipped == [{"kernel": "_sm90", "label": "Hopper's kernel",
                                      "unmet": [{"key": "capability", "want": ">=9.0", "have": None}]}]
    f, skipped = dispatch.dispatch(spec, _pt(), _ran("_generic"), {"capability": "9.0"})
    assert f is not None and skipped == []


def test_what_must_not_run_fails_where_it_ran_and_passes_where_it_did_not():
    spec = _spec([kl.Expect("*fallback*", runs=False, label="the slow path")])
    f, _ = dispatch.dispatch(spec, _pt(), _ran("_fallback_kernel"))
    assert f.check == Check.DISPATCH and f.facts.expected == [] and [e["label"] for e in f.facts.forbidden] == ["the slow path"]
    assert dispatch.dispatch(spec, _pt(), _ran("_fast_kernel"))[0] is None
    ok, _ = dispatch.dispatch(_spec([kl.Expect("_fast_kernel")]), _pt(), _ran("_fast_kernel"))
    assert ok is None


def test_a_documented_refusal_holds_for_any_call_that_returned():
    refuse = kl.Expect("*", when={"M": 1}, runs=False, raises=ValueError)
    assert dispatch.holds(refuse, _ran())                                  # a call that returned ran something
    spec = _spec([refuse])
    f, _ = dispatch.dispatch(spec, _pt(M=1, N=8), _ran())
    assert f is not None and f.facts.forbidden[0]["kernel"] == "*"
    assert dispatch.dispatch(spec, _pt(M=2, N=8), _ran())[0] is None


def test_refusal_is_the_expectation_whose_raises_the_error_is_where_it_applies():
    refuse = kl.Expect("*", when={"M": 1}, runs=False, raises=ValueError)
    spec = _spec([kl.Expect("_k"), refuse])
    assert dispatch.refusal(spec, _pt(M=1, N=8), ValueError("M = 1 unsupported"), "cpu") is refuse
    assert dispatch.refusal(spec, _pt(M=1, N=8), TypeError("other"), "cpu") is None        # not its exception
    assert dispatch.refusal(spec, _pt(M=2, N=8), ValueError("x"), "cpu") is None           # not where it applies
    anything = _spec([kl.Expect("*", when={"M": 1}, runs=False)])
    assert dispatch.refusal(anything, _pt(M=1, N=8), RuntimeError("x"), "cpu") is not None   # raises=None: any
    hopper = _spec([kl.Expect("*", when={"M": 1, "capability": ">=9.0"}, runs=False)])
    assert dispatch.refusal(hopper, _pt(M=1, N=8), RuntimeError("x"), "cpu") is None         # no capability on a CPU


def test_refusing_is_a_star_expectation_that_applies_here():
    spec = _spec([kl.Expect("*", when={"M": 1}, runs=False), kl.Expect("_slow", runs=False)])
    assert dispatch.refusing(spec, _pt(M=1, N=8))
    assert not dispatch.refusing(spec, _pt(M=3, N=8))                     # `_slow` is not a refusal
    assert not dispatch.refusing(_spec(), _pt(M=1, N=8))


def test_a_launch_expectation_needs_every_value_and_the_kernels_name():
    e = kl.Expect("_k*", launch={"BLOCK": 64, "FAST": True})
    assert dispatch.holds(e, _ran("_k2", BLOCK=64, FAST=True, X=3))
    assert not dispatch.holds(e, _ran("_k2", BLOCK=64))                    # a value missing
    assert not dispatch.holds(e, _ran("_k2", BLOCK=64, FAST=1))            # 1 is not True
    assert not dispatch.holds(e, _ran("_other", BLOCK=64, FAST=True))
    assert not dispatch.holds(e, _ran(functions=["_k2"]))                  # a launch's values: only launches carry them


def test_ran_facts_keep_the_first_twelve_of_each_and_count_them_all():
    ran = _ran(*[f"_k{i}" for i in range(20)], gpu=[f"g{i}" for i in range(13)], functions=["f"], BLOCK=8)
    facts = dispatch.ran_facts(ran)
    assert (facts["n_launches"], facts["n_gpu"], facts["n_functions"]) == (20, 13, 1)
    assert len(facts["launches"]) == dispatch.SHOWN and facts["launches"][0] == {"name": "_k0", "params": {"BLOCK": 8}}
    assert facts["gpu"] == [f"g{i}" for i in range(12)] and facts["functions"] == ["f"]


def test_expect_facts_write_a_when_as_json():
    def mult16(n):
        return n % 16 == 0
    facts = dispatch.expect_facts(kl.Expect("_k", when={"N": range(1, 257), "M": 1, "K": mult16, "S": (1, 2)},
                                            launch={"B": 2}, label="L"))
    assert facts["kernel"] == "_k" and facts["launch"] == {"B": 2} and facts["label"] == "L"
    assert facts["when"] == {"N": "range(1, 257)", "M": 1, "K": "a predicate (test_expect_facts_write_a_when_as_json."
                                                               "<locals>.mult16)", "S": [1, 2]}
    assert dispatch.expect_facts(kl.Expect("_k"))["when"] == {} and dispatch.expect_facts(kl.Expect("_k"))["launch"] == {}
    assert json.loads(json.dumps(facts, allow_nan=False)) == facts


def test_env_facts_say_how_the_point_set_its_environment_and_what_it_started_with():
    spec = _spec([kl.Expect("_fast", when={"$LIB_FAST": "1"})], flags=[kl.Flag(env="LIB_FAST")])
    assert dispatch.env_facts(spec, _pt()) == {}
    assert dispatch.env_facts(spec, _pt(env=(("LIB_FAST", "1"),))) == {"env": {"LIB_FAST": "1"}, "env_set": "at_start"}
    after = _pt(env=(("LIB_FAST", "1"), ("OTHER", "x")), env_set="after_import")
    assert dispatch.started_env(spec, after) == {"LIB_FAST": "0"}          # the flag's other value; OTHER is no flag
    assert dispatch.env_facts(spec, after) == {"env": {"LIB_FAST": "1", "OTHER": "x"}, "env_set": "after_import",
                                               "started": {"LIB_FAST": "0"}}
    f, _ = dispatch.dispatch(spec, after, _ran("_plain", env={"LIB_FAST": "1"}))
    assert f.facts.env_set == "after_import" and f.facts.started == {"LIB_FAST": "0"}
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict(), allow_nan=False))) == f


@pytest.mark.parametrize("a,b,same", [(1, 1, True), (True, 1, False), (1, True, False), (True, True, True),
                                      (4, 4.0, True), ("a", "a", True), (0, False, False)])
def test_same_is_equal_and_a_bool_only_equals_a_bool(a, b, same):
    assert dispatch._same(a, b) is same
