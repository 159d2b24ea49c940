"""climbing/pointcheck.py: a point a user edited, against a spec declared here, field by field:
what is accepted at each boundary and what is refused naming the field, the value and the fix
(tests/test_point_is_data.py covers rungs, modes, layouts, partners and plans on a trivial spec)."""
import pytest

import kladder as kl
from kladder.climbing.pointcheck import SEED_LIMIT, _config_values, check_point, declared_env
from kladder.core.errors import PointError
from kladder.core.point import Point


def _launch(x, w, BLOCK=64, precise=True):
    return x * w


def _ref(x, w):
    return x * w


SPEC = kl.Spec(
    "pc", kernel=_launch, reference=_ref,
    args={"x": kl.Tensor("M N", dtype=["float32", "float16"]), "w": kl.Tensor("N", like="x")},
    returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(8, 64, sizes=[8, 16, 64])},
    configs=[{"BLOCK": 64}, {"BLOCK": 128}],
    toolchain=kl.Toolchain(flags=[kl.Flag(env="MYLIB_FAST"), kl.Flag(name="precise"),
                                  kl.Flag(env="MYLIB_LATE", values=["a", "b"], set="after_import")],
                           expect=[kl.Expect("*mul*", when={"$MYLIB_MODE": ["x", None]})]))


def _point(**kw):
    d = {"spec": "pc", "rung": 1, "dims": [["M", 1], ["N", 8]], **kw}
    return Point.from_dict(d)


def _refused(words, **kw):
    with pytest.raises(PointError) as e:
        check_point(SPEC, _point(**kw))
    assert words in str(e.value), str(e.value)
    return str(e.value)


def test_a_point_of_the_spec_at_its_edges_is_accepted():
    check_point(SPEC, _point(dims=[["M", 64], ["N", 64]], dtypes=[["x", "float16"]], config=[["BLOCK", 128]]))
    check_point(SPEC, _point(seed=1))
    check_point(SPEC, _point(seed=SEED_LIMIT - 1))


@pytest.mark.parametrize("dims,words", [
    ([["M", 1], ["N", 8], ["M", 2]], "POINT dims: a dim is given twice"),
    ([["M", 1], ["N", 8], ["K", 2]], "POINT dims: 'K' is not a dim of spec 'pc'; its dims are M, N"),
    ([["M", 1]], "POINT dims: 'N' is missing (given [['M', 1]]); give every dim of spec 'pc': M, N, e.g. "
                 "[[\"M\", 1], [\"N\", 8]]"),
    ([["M", True], ["N", 8]], "POINT dims: 'M' is True, a bool; give an integer from 1 to 64"),
    ([["M", 2.0], ["N", 8]], "POINT dims: 'M' is 2.0, a float"),
    ([["M", 65], ["N", 8]], "POINT dims: 'M' is 65, outside the spec's range 1..64"),
    ([["M", 0], ["N", 8]], "outside the spec's range 1..64"),
    ([["M", 1], ["N", 32]], "POINT dims: 'N' is 32, not one of the spec's sizes [8, 16, 64]"),
])
def test_dims_refused_name_the_dim_the_value_and_the_fix(dims, words):
    _refused(words, dims=dims)


@pytest.mark.parametrize("dtypes,words", [
    ([["y", "float32"]], "POINT dtypes: 'y' is not a tensor of spec 'pc'; its tensors are"),
    ([["w", "float32"]], "POINT dtypes: 'w' takes the dtype of 'x' (like=); drop 'w' from dtypes"),
    ([["x", "bfloat16"]], "POINT dtypes: 'x' is 'bfloat16', which the spec does not declare for it; give one of "
                          "float32, float16"),
])
def test_dtypes_refused(dtypes, words):
    _refused(words, dtypes=dtypes)


def test_config_keys_and_values_come_from_the_spec():
    values = _config_values(SPEC)
    assert values["BLOCK"] == [64, 128, 64]                              # configs, then the launcher's default
    assert values["precise"] == [False, True, True]                     # a keyword flag's values, its default
    check_point(SPEC, _point(config=[["precise", False]]))
    _refused("POINT config: 'GRID' is not a config key of spec 'pc'; its keys: BLOCK, precise", config=[["GRID", 1]])
    _refused("POINT config: 'BLOCK' is 96, a value the spec never gives it (it gives 64, 128, 64)",
             config=[["BLOCK", 96]])
    _refused("POINT config: 'precise' is 1, a value the spec never gives it", config=[["precise", 1]])   # 1 is not True
    _refused("POINT config: 'BLOCK' is {'a': 1}; give a number", config=[["BLOCK", {"a": 1}]])


def test_a_model_point_takes_only_the_models_config_keys():
    check_point(SPEC, _point(rung=8, mode="model", dims=[], config=[["model_dtype", "float32"], ["problems", 4]]))
    with pytest.raises(PointError, match="POINT config: 'BLOCK' is not a config key .* its keys: model_dtype, problems"):
        check_point(SPEC, _point(rung=8, mode="model", dims=[], config=[["BLOCK", 64]]))


@pytest.mark.parametrize("seed", [-1, SEED_LIMIT, SEED_LIMIT + 5])
def test_a_seed_outside_32_bits_is_refused(seed):
    _refused(f"POINT seed: {seed} is outside 1..{SEED_LIMIT - 1}", seed=seed)


def test_declared_env_gathers_flags_and_expectations():
    assert declared_env(SPEC) == {"MYLIB_FAST": ["0", "1"], "MYLIB_LATE": ["a", "b"], "MYLIB_MODE": ["x", None]}


def test_env_only_on_dispatch_points_only_declared_variables_and_values():
    dispatch = {"rung": 7, "mode": "dispatch"}
    check_point(SPEC, _point(**dispatch, env=[["MYLIB_FAST", "1"], ["MYLIB_MODE", None]]))
    check_point(SPEC, _point(**dispatch, env=[["MYLIB_LATE", "a"]], env_set="after_import"))
    _refused("POINT env: 'LD_PRELOAD' is not a variable spec 'pc' declares", **dispatch, env=[["LD_PRELOAD", "/x.so"]])
    text = _refused("POINT env: MYLIB_FAST is '2', a value spec 'pc' does not declare for it", **dispatch,
                    env=[["MYLIB_FAST", "2"]])
    assert text.endswith("give one of '0', '1'.")
    _refused("POINT env: a variable is given twice", **dispatch, env=[["MYLIB_FAST", "1"], ["MYLIB_FAST", "0"]])
    _refused("POINT env_set: after_import for a variable the spec does not set after import", **dispatch,
             env=[["MYLIB_FAST", "1"]], env_set="after_import")


def test_an_unset_value_is_said_as_unset():
    text = _refused("POINT env: MYLIB_MODE is 'y'", rung=7, mode="dispatch", env=[["MYLIB_MODE", "y"]])
    assert text.endswith("give one of 'x', unset (null).")


def test_a_flags_point_set_after_import_names_its_variable_as_its_variant():
    check_point(SPEC, _point(rung=7, mode="flags", variant="$MYLIB_LATE", env_set="after_import"))
    _refused("POINT env_set: given without env", rung=7, mode="flags", variant="$MYLIB_FAST", env_set="after_import")


def test_variants_are_the_specs_flags_and_cachekeys_own():
    check_point(SPEC, _point(rung=7, mode="flags", variant="$MYLIB_FAST"))
    check_point(SPEC, _point(rung=7, mode="flags", variant="precise"))
    check_point(SPEC, _point(rung=7, mode="cachekey", variant="compiler"))
    _refused("POINT variant: 'compiler' is not a flag of spec 'pc' that a flags point varies", rung=7, mode="flags",
             variant="compiler")


@pytest.mark.parametrize("ranks,ok", [
    ([["world", 1], ["lag", 0], ["lag_us", 0], ["sizes", [1]]], True),
    ([["world", 1024], ["lag", 1023], ["lag_us", 5], ["sizes", [4, 8]]], True),
    ([["world", 1025], ["lag", 0], ["lag_us", 0], ["sizes", [1]]], False),
    ([["world", 2], ["lag", 2], ["lag_us", 0], ["sizes", [1]]], False),
    ([["world", 2], ["lag", 0], ["lag_us", -1], ["sizes", [1]]], False),
    ([["world", 2], ["lag", 0], ["lag_us", 0], ["sizes", []]], False),
    ([["world", 2], ["lag", 0], ["lag_us", 0], ["sizes", [0]]], False),
    ([["world", True], ["lag", 0], ["lag_us", 0], ["sizes", [1]]], False),
    ([["world", 2], ["lag", 0], ["sizes", [1]]], False),
])
def test_a_collectives_ranks_at_their_bounds(ranks, ok):
    kw = {"rung": 6, "mode": "collective", "ranks": ranks}
    if ok:
        check_point(SPEC, _point(**kw))
    else:
        _refused("POINT ranks: ", **kw)


@pytest.mark.parametrize("repeat,ok", [
    ([["calls", 10], ["seconds", 0.5], ["load", True], ["inputs", "same"]], True),
    ([["calls", True]], False),                                           # a bool is not a count
    ([["load", 1]], False),                                               # nor a count a bool
    ([["seconds", 0]], False),
    ([["seconds", 2]], True),
])
def test_a_repetition_plans_types_are_strict(repeat, ok):
    kw = {"rung": 5, "mode": "repeat", "repeat": repeat}
    if ok:
        check_point(SPEC, _point(**kw))
    else:
        _refused("POINT repeat: ", **kw)


def test_a_replay_only_on_rung_2_and_never_with_a_nul():
    check_point(SPEC, _point(rung=2, replay="/cap/0"))
    _refused("POINT replay: ", rung=2, replay="/cap\0/0")
