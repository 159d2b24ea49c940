"""gen/gaps/toolchain.py: rung 7's dispatch points (each named shape inside and just outside a
predicate, each dtype row, each config and environment a `when` names), flag and cache-key
points, the words for a variable set at start or after import."""
import torch

import kladder as kl
from kladder.core.notation import EnvSet, Mode, Needs
from kladder.core.point import Point
from kladder.core.sizes import CPU_BUDGET, Budget
from kladder.gen.gaps import toolchain
from kladder.gen.gaps.toolchain import env_text


def kernel(x, BLOCK=32, precise=True):
    return x


def spec(expect=(), flags=(), configs=(), dtype="float32", layouts=None, **over):
    return kl.Spec("rows", kernel, lambda x: x, args={"x": kl.Tensor("M N", dtype=dtype, layouts=layouts)},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 4096), "N": kl.Dim(1, 8192, tile=64)},
                   configs=list(configs), toolchain=kl.Toolchain(expect=list(expect), flags=list(flags)), **over)


def points(s, budget=CPU_BUDGET):
    return list(toolchain.points(s, budget))


def named(pts):
    """The dispatch points an expectation put there (the base shapes' say 'which kernels ran')."""
    return [p for p in pts if p.mode == Mode.DISPATCH and "which kernels ran" not in p.why]


# ---------------------------------------------------------------------------- dispatch
def test_the_base_shapes_run_every_config_that_is_another_call_once():
    pts = points(spec(configs=[{"BLOCK": 32}, {"BLOCK": 64}]))
    base = [(p.sizes, p.config) for p in pts if p.mode == Mode.DISPATCH]
    # {"BLOCK": 32} is the launcher's own call: no point of its own
    assert base == [({"M": 17, "N": 129}, ()), ({"M": 17, "N": 129}, (("BLOCK", 64),)),
                    ({"M": 16, "N": 128}, ()), ({"M": 16, "N": 128}, (("BLOCK", 64),))]


def test_a_named_shape_runs_contiguous_then_with_its_first_non_contiguous_layout():
    pts = named(points(spec(expect=[kl.Expect("*decode*", when={"M": 1})], layouts=["transposed", "offset"])))
    assert [(p.sizes, p.layouts) for p in pts] == [({"M": 1, "N": 129}, ()), ({"M": 1, "N": 129}, (("x", "transposed"),))]
    assert pts[0].why == "dispatch: `*decode*` must run at M=1, N=129, the launcher's own config; inputs contiguous"
    only_offset = named(points(spec(expect=[kl.Expect("*", when={"M": 1})], layouts=["offset"])))
    assert [p.layouts for p in only_offset] == [()]                  # an offset view is still contiguous


def test_a_predicate_puts_points_inside_and_just_outside_its_edge():
    pts = named(points(spec(expect=[kl.Expect("*short*", when={"N": range(1, 257)})], layouts=["sliced"])))
    flat = [p for p in pts if not p.layouts]
    assert sorted(p.sizes["N"] for p in flat) == [1, 256, 257]
    outside = [p for p in flat if p.sizes["N"] == 257][0]
    assert "just outside where `*short*` must run" in outside.why
    assert all("must run at" in p.why for p in flat if p.sizes["N"] != 257)


def test_runs_false_says_must_not_run_and_a_refusal_passes():
    p = named(points(spec(expect=[kl.Expect("*", when={"M": 2}, runs=False)])))[0]
    assert "`*` must not run (a call that raises passes) at M=2" in p.why


def test_a_repeated_named_shape_is_one_point():
    s = spec(expect=[kl.Expect("a", when={"M": 17}), kl.Expect("b", when={"M": 1}), kl.Expect("c", when={"M": 1})])
    pts = [p for p in points(s) if p.mode == Mode.DISPATCH]
    keys = [(p.dims, p.layouts, p.config) for p in pts]
    assert len(keys) == len(set(keys))
    assert sum(p.sizes == {"M": 17, "N": 129} and not p.layouts for p in pts) == 1   # the base shape already ran it
    assert sum(p.sizes == {"M": 1, "N": 129} and not p.layouts for p in pts) == 1


def test_a_production_shape_is_a_dispatch_point_where_it_fits():
    s = spec(production=[{"M": 8, "N": 4096}, {"M": 4096, "N": 8192}])
    prod = [p for p in points(s) if "production shape" in p.why]
    assert [p.sizes for p in prod] == [{"M": 8, "N": 4096}]


def test_a_dtype_condition_names_every_row_where_it_holds_and_one_where_it_does_not():
    s = spec(expect=[kl.Expect("*bf16*", when={"M": 1, "dtype": "bfloat16"})], dtype=["float32", "float16", "bfloat16"])
    pts = named(points(s))
    assert [(dict(p.dtypes)["x"], "just outside" not in p.why) for p in pts if not p.layouts] == [
        ("bfloat16", True), ("float32", False)]
    assert "x bfloat16" in pts[0].why


def test_an_environment_condition_sets_the_variable_and_after_import_too_when_a_flag_says_so():
    flag = kl.Flag(env="MYLIB_FAST", set="after_import")
    s = spec(expect=[kl.Expect("*fast*", when={"$MYLIB_FAST": ["1", None]})], flags=[flag])
    pts = named(points(s))
    assert [(p.env, p.env_set, p.layouts) for p in pts] == [
        ((("MYLIB_FAST", "1"),), "", ()), ((("MYLIB_FAST", "1"),), EnvSet.AFTER_IMPORT, ()),
        ((("MYLIB_FAST", None),), "", ()), ((("MYLIB_FAST", None),), EnvSet.AFTER_IMPORT, ())]
    assert all(Point.parse(repr(p)) == p for p in pts)


def test_a_config_condition_met_by_no_declared_config_names_the_values_themselves():
    s = spec(expect=[kl.Expect("*", when={"BLOCK": [64, 128]})], configs=[{"BLOCK": 16}])
    assert sorted(p.config for p in named(points(s)) if not p.layouts) == [(("BLOCK", 64),), (("BLOCK", 128),)]


def test_a_bool_condition_is_not_met_by_an_int_default():
    keys = {"precise": 1}
    assert toolchain._config_choices(spec(), keys, {"precise": True}) == [(("precise", 1),)]
    assert toolchain._config_choices(spec(), {"precise": True}, {"precise": True}) == [()]
    assert toolchain._config_choices(spec(), {}, {}) == [()]


def test_a_named_shape_over_the_budget_shrinks_the_rest_then_becomes_a_gpu_point():
    s = spec(expect=[kl.Expect("*", when={"N": 8192})])
    small = Budget(8192 * 2, 4096, "cpu")
    pts = named(points(s, small))
    assert pts[0].sizes == {"M": 1, "N": 8192} and pts[0].needs == Needs.NOTHING
    tiny = Budget(4096, 4096, "cpu")
    assert named(points(s, tiny))[0].needs == Needs.CUDA


# ---------------------------------------------------------------------------- flags and cache keys
def test_a_keyword_flag_is_one_flag_point_and_one_cache_key_point():
    pts = points(spec(flags=[kl.Flag("precise")]))
    flags = [p for p in pts if p.mode == Mode.FLAGS]
    assert [(p.variant, p.env_set) for p in flags] == [("precise", "")]
    assert "the launcher keyword precise must change the code: run with each of False, True" in flags[0].why
    keys = [p for p in pts if p.mode == Mode.CACHEKEY]
    assert [p.variant for p in keys] == ["precise", "compiler"]          # no second config: no config pair
    assert "B = A with precise=True" in keys[0].why


def test_an_after_import_variable_gets_a_second_flag_point():
    pts = points(spec(flags=[kl.Flag(env="MYLIB_FAST", values=[None, "1"], set="after_import")]))
    flags = [p for p in pts if p.mode == Mode.FLAGS]
    assert [(p.variant, p.env_set) for p in flags] == [("$MYLIB_FAST", ""), ("$MYLIB_FAST", EnvSet.AFTER_IMPORT)]
    assert "each of unset, '1'" in flags[0].why and flags[1].why.endswith("all started with MYLIB_FAST unset")
    key = [p for p in pts if p.mode == Mode.CACHEKEY and p.variant == "$MYLIB_FAST"][0]
    assert "B = A with MYLIB_FAST=1" in key.why


def test_the_cache_key_pair_is_the_first_config_that_is_another_call():
    pts = points(spec(configs=[{"BLOCK": 32}, {"precise": True}, {"BLOCK": 128}]))
    pair = [p for p in pts if p.mode == Mode.CACHEKEY and p.variant == "config"]
    assert [(p.config, dict(p.partner)["config"]) for p in pair] == [((), (("BLOCK", 128),))]


def test_one_import_point_last_naming_the_imports():
    pts = points(spec())
    assert pts[-1].mode == Mode.IMPORTS and "(none declared)" in pts[-1].why
    s = kl.Spec("rows", kernel, lambda x: x, args={"x": kl.Tensor("M N", dtype="float32")},
                returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)},
                toolchain=kl.Toolchain(imports=["mylib.ops:rows"]))
    assert "(mylib.ops:rows)" in points(s)[-1].why


# ---------------------------------------------------------------------------- words
def test_env_text_at_start_and_after_import():
    assert env_text(spec(), (("A", "1"), ("B", None)), "") == "with A=1, B unset in the environment from the process's start"
    s = spec(flags=[kl.Flag(env="F", values=["0", "1"], set="after_import")])
    assert env_text(s, (("F", "1"),), EnvSet.AFTER_IMPORT) == (
        "with F=1 set after the kernel's module was imported and the kernel called once (the process started with F=0)")
    s2 = spec(flags=[kl.Flag(env="F", values=[None, "1"], set="after_import")])
    assert "F removed after" in env_text(s2, (("F", None),), EnvSet.AFTER_IMPORT)
    assert "started with F unset" in env_text(s2, (("F", "1"),), EnvSet.AFTER_IMPORT)


def test_toolchain_text_says_whether_this_process_meets_a_version():
    met = toolchain.toolchain_text(kl.Expect("*", when={"torch": ">=2.0"}))
    assert met == f", where torch >=2.0 (here {torch.__version__}: met),"
    unmet = toolchain.toolchain_text(kl.Expect("*", when={"torch": ">=999"}))
    assert "not met, so not judged here" in unmet
    assert "(judged where the point runs)" in toolchain.toolchain_text(kl.Expect("*", when={"cuda": ">=12"}))
    assert toolchain.toolchain_text(kl.Expect("*", when={"M": 1})) == ""
