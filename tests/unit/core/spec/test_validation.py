"""core/spec/validation.py, directly: its Rule and _Found machinery, the helpers that judge one
value (tolerances, shape symbols, declared writes, plain configs, representable ranges) and the
rules tests/test_malformed_specs.py does not reach (Dim(sizes=), collectives, flags, kl.Calls
budgets, `when` keys, grads, kl.Config, kl.Size, grad_overwritten, the early exit on a part that
is not one). Each refusal is checked for its exact location, the value it shows and its fix."""
from __future__ import annotations

import bisect
import math
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings, strategies as st

import kladder as kl
from kladder.core.problems import SpecError, where_text
from kladder.core.spec import validation as v

def _k(x, w, **kw):
    return x


def _ref(x, w):
    return x


def make(**over):
    d = dict(kernel=_k, reference=_ref,
             args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32")},
             returns=kl.Tensor("M N", like="x"),
             dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=8)})
    d.update(over)
    return kl.Spec(d.pop("name", "t"), **d)


def problems(**over) -> list[tuple[str, object, str]]:
    with pytest.raises(SpecError) as e:
        make(**over)
    return [(where_text(p.where), p.given, p.fix) for p in e.value.problems]


def one(**over) -> tuple[str, object, str]:
    found = problems(**over)
    assert len(found) == 1, found
    return found[0]


def args(**over):
    d = {"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", dtype="float32")}
    d.update(over)
    return {k: t for k, t in d.items() if t is not None}


# ---------------------------------------------------------------------------- Rule and _Found
def test_a_rule_returns_the_value_and_its_fix_or_none():
    r = v.Rule(lambda x: x > 0, "give a positive number.")
    assert r.problem(3, None) is None
    assert r.problem(-1, None) == (-1, "give a positive number.")


def test_a_rule_with_each_shows_the_first_bad_element_and_a_callable_fix_sees_it_and_the_spec():
    r = v.Rule(lambda x: x > 0, lambda bad, spec: f"{bad} is not above 0 in {spec}", each=True)
    assert r.problem((1, 2, 3), "S") is None
    assert r.problem((1, -2, -3), "S") == (-2, "-2 is not above 0 in S")
    assert r.problem((), "S") is None                      # nothing to be wrong


def test_found_clean_is_nothing_at_the_location_or_under_it():
    f = v._Found(SimpleNamespace(name="t"))
    assert f.head == ("Spec", "t") and f.clean("args")
    f.add(("args", "x", "dtype"), "bf16", "use 'bfloat16'.")
    assert not f.clean("args") and not f.clean("args", "x") and not f.clean("args", "x", "dtype")
    assert f.clean("args", "w") and f.clean("dims") and f.clean("args", "x", "shape")
    assert f.problems[0].where == (("Spec", "t"), "args", "x", "dtype")


def test_found_head_has_no_name_when_the_name_is_not_an_identifier():
    assert v._Found(SimpleNamespace(name="my norm")).head == ("Spec", None)
    assert v._Found(SimpleNamespace(name=5)).head == ("Spec", None)


def test_found_fields_reports_only_a_fields_first_failed_rule():
    f = v._Found(SimpleNamespace(name="t"))
    part = SimpleNamespace(expect=(), flags=(), imports="mylib.ops:rmsnorm")    # a string, not a list
    f.fields(part, v.TOOLCHAIN_FIELDS, ("toolchain",))
    assert [(p.where[1:], p.given) for p in f.problems] == [(("toolchain", "imports"), "mylib.ops:rmsnorm")]
    assert f.problems[0].fix == "give a list of 'pkg.mod:name' strings."
    f = v._Found(SimpleNamespace(name="t"))
    f.fields(SimpleNamespace(expect=(), flags=(), imports=["a.b:c", "nocolon", "x"]), v.TOOLCHAIN_FIELDS, ("toolchain",))
    assert [(p.where[1:], p.given) for p in f.problems] == [(("toolchain", "imports"), "nocolon")]


def test_found_fields_reads_a_slash_row_as_a_tuple_of_the_fields():
    f = v._Found(SimpleNamespace(name="t"))
    f.fields(SimpleNamespace(min=9, max=3, tile=(), widths=(), chunks=(), sizes=()), v.DIM_FIELDS, ("dims", "N"))
    assert [(p.where[1:], p.given) for p in f.problems] == [(("dims", "N", "min/max"), (9, 3))]


# ---------------------------------------------------------------------------- helpers judging one value
@pytest.mark.parametrize("tol", [None, kl.Tolerance(0.0, 0.0), (1e-3, 0), (0, 1e-5), {"float32": (1e-3, 1e-5)},
                                 {"bfloat16": kl.Tolerance(1e-2, 0)}, {"out": (1e-3, 0)}, {"out": {"float32": (1e-3, 0)}},
                                 {"grad of x": (1e-3, 0)}])
def test_tolerances_a_spec_may_write(tol):
    assert v._tolerance_problem(tol, make(grads=["x"])) is None


@pytest.mark.parametrize("tol,words", [
    ([1e-3, 1e-5], "give (rtol, atol), kl.Tolerance"),                 # a list is not one of the forms
    (1e-3, "give (rtol, atol), kl.Tolerance"),
    ((True, 0), "two finite numbers >= 0"),                             # a bool is not a number
    ((math.nan, 0), "two finite numbers >= 0"),
    ((0, -0.0 - 1e-300), "two finite numbers >= 0"),
    (kl.Tolerance(1e-3, math.inf), "two finite numbers >= 0"),
    ({"float32": (1e-3,)}, "two finite numbers >= 0"),
    ({"out": {"out": (1e-3, 0)}}, "'out': key by dtype names"),        # by output only at the top
    ({"float33": (1e-3, 0)}, "did you mean 'float32'? key by dtype names"),
    ({1: (1e-3, 0)}, "[1] is not one."),
])
def test_tolerances_refused_say_why(tol, words):
    given, fix = v._tolerance_problem(tol, make())
    assert given is tol and words in fix, fix


def test_a_tolerance_by_output_names_only_outputs_the_spec_can_read():
    s = make(returns={"y": kl.Tensor("M N", like="x"), "lse": kl.Tensor("M", dtype="float32")})
    assert v._output_names(s) == ["y", "lse"]
    given, fix = v._tolerance_problem({"z": (1e-3, 0)}, s)
    assert fix.endswith("or by output names (y, lse); ['z'] is not one.")
    unreadable = SimpleNamespace(args=["x"], returns=None, outputs={}, grad_outputs={})
    assert v._output_names(unreadable) == []


@pytest.mark.parametrize("sym", ["N", "64", "M*N", "2*N", "N*2*M"])
def test_a_shape_symbol_of_declared_dims_literals_and_products_is_fine(sym):
    assert v._symbol_problem(sym, ("M", "N")) is None


def test_a_shape_symbol_that_is_none_says_what_to_declare():
    assert v._symbol_problem("Q", ("M", "N")) == ("declare 'Q' in dims, e.g. dims={'Q': kl.Dim(1, 4096, tile=64)}, "
                                                 "or use a literal size.")
    assert v._symbol_problem("n", ("M", "N")).startswith("did you mean 'N'? declare 'n'")
    assert v._symbol_problem("M*Q", ("M", "N")).startswith("'M*Q' is a product of dims: declare 'Q' in dims")
    for sym in ("M+N", "M**N", "*N", "M*", "-1"):
        assert v._symbol_problem(sym, ("M", "N")).startswith(f"{sym!r}: a dim of a shape is a declared dim"), sym


@pytest.mark.parametrize("cond,words,ok", [
    (True, (), True), (False, (), True), (lambda p: True, (), True), ({"in_place": True}, (), True),
    ("backward", ("backward", "gradient"), True), ("gradient", ("backward", "gradient"), True),
    ("backward", (), False), ("yes", ("backward",), False), ({}, (), False), ({"in-place": 1}, (), False),
    ({1: True}, (), False), (1, (), False), (None, (), False),
])
def test_a_declared_writes_condition(cond, words, ok):
    assert v._write_condition(cond, words) is ok


@pytest.mark.parametrize("value,ok", [
    (1, True), (True, True), (None, True), ("a", True), (1.5, True), ([1, [2, "a"]], True), ((1, None), True),
    (math.nan, False), (-math.inf, False), ({"a": 1}, False), (torch.float16, False), ([1, math.nan], False),
    (b"x", False),
])
def test_a_plain_config_value(value, ok):
    assert v._plain(value) is ok


def test_corners_take_each_dims_ends_or_its_first_and_last_size():
    dims = {"M": kl.Dim(2, 9), "E": kl.Dim(sizes=[16, 8, 64]), "K": kl.Dim(4, 4)}
    assert v._corners([], dims) == [{}]
    assert v._corners(["M"], dims) == [{"M": 2}, {"M": 9}]
    assert v._corners(["E", "K"], dims) == [{"E": 8, "K": 4}, {"E": 64, "K": 4}]
    many = {f"D{i}": kl.Dim(1, 2) for i in range(8)}
    assert len(v._corners(list(many), many)) == 64          # 2^8 corners, the first 64 kept


def test_launcher_defaults_are_the_keywords_with_a_default():
    def f(x, y=1, /, z=2, *a, k=3, **kw):
        return x
    assert v.launcher_defaults(f) == {"z": 2, "k": 3}          # positional-only y is never passed by name
    assert v.launcher_defaults(int) == {}                      # no readable signature
    assert v.launcher_defaults(len) == {}


def test_when_keys_are_configs_flags_and_launcher_keywords_but_no_arg():
    def kernel(x, w, BLOCK=64, precise=True, **kw):
        return x
    s = make(kernel=kernel, configs=[{"BLOCK": 32}, {"split": 2}],
             toolchain=kl.Toolchain(flags=[kl.Flag("USE_TMA"), kl.Flag(env="FAST")]))
    assert v.when_keys(s) == ["BLOCK", "USE_TMA", "precise", "split"]


@pytest.mark.parametrize("text,why", [(">=2.6", None), (">=2.4,<2.7", None), ("", "give a version specifier string"),
                                      ("  ", "give a version specifier string"), (None, "give a version specifier string"),
                                      (2.6, "give a version specifier string"), ("9", "'9' is not a version specifier")])
def test_specifier_problem(text, why):
    assert v.specifier_problem(text) == why


def test_defined_at_points_at_a_python_functions_file_and_line():
    at = v._defined_at(_k)
    assert at.startswith(" (defined at ") and at.endswith(f"test_validation.py:{_k.__code__.co_firstlineno})"), at
    assert v._defined_at(len) == "" and v._defined_at(object()) == ""
    assert v._fn_name(_k) == "_k" and v._fn_name(3) == "int"


# ---------------------------------------------------------------------------- representable_range
@pytest.mark.parametrize("dtype,rng,want", [
    ("float32", (0, 1), (0.0, 1.0)),
    ("bfloat16", (1.001, 1.002), None),                             # narrower than bfloat16's spacing at 1
    ("bfloat16", (1.001, 1.01), (1.0078125, 1.0078125)),            # the one value inside
    ("bfloat16", (-1.01, -1.001), (-1.0078125, -1.0078125)),
    ("float16", (0, 1e6), (0.0, 65504.0)),                          # clipped to the dtype's largest
    ("float16", (-1e6, -70000), None),                              # wholly below the dtype's least
    ("float16", (1e-9, 2e-9), None),                                # below the smallest subnormal
    ("float16", (1e-9, 1e-7), (2.0 ** -24, 2.0 ** -24)),            # the smallest subnormal
    ("float16", (-1e-7, -1e-9), (-(2.0 ** -24), -(2.0 ** -24))),
    ("float32", (2, 1), None),
    ("float32", (0, math.inf), None),
    ("float64", (0.1, 0.1), (0.1, 0.1)),
])
def test_representable_range(dtype, rng, want):
    assert v.representable_range(dtype, rng) == want


def _all_values(dtype) -> list[float]:
    """Every finite value of a 16-bit float dtype, sorted: the oracle the property checks against."""
    vals = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(getattr(torch, dtype)).double()
    return sorted(set(vals[torch.isfinite(vals)].tolist()))


_ORACLE = {d: _all_values(d) for d in ("float16", "bfloat16")}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["float16", "bfloat16"]),
       st.floats(-7e4, 7e4, allow_nan=False), st.floats(0, 7e4, allow_nan=False), st.sampled_from([1.0, 1e-3, 1e-6, 1e-42, 1e34]))
def test_representable_range_is_the_least_and_largest_value_inside(dtype, lo, width, scale):
    lo, hi = lo * scale, (lo + width) * scale
    values = _ORACLE[dtype]
    a, b = bisect.bisect_left(values, lo), bisect.bisect_right(values, hi)
    want = None if a >= b else (values[a], values[b - 1])
    assert v.representable_range(dtype, (lo, hi)) == want


# ---------------------------------------------------------------------------- validate(): rules not reached elsewhere
def test_a_part_that_is_not_one_stops_before_the_rules_that_read_its_fields():
    found = problems(modes=5, args=args(x=kl.Tensor("M N", dtype="bf16")), timeout_s=0)
    assert [w for w, _, _ in found] == ["Spec('t').timeout_s", "Spec('t').modes"]     # the dtype is not judged yet


def test_the_same_spec_gives_the_same_problems_in_the_same_order():
    over = dict(args=args(x=kl.Tensor("M Q", dtype="bf16"), w=kl.Tensor("N", dtype="float32", layouts=["x"])),
                rows="R", nonfinite="nan", configs=[{"scale": math.inf}])
    assert problems(**over) == problems(**over)


def test_dim_sizes_with_a_min_or_max_that_disagrees():
    assert one(dims={"M": kl.Dim(1, 64), "N": kl.Dim(4, 256, sizes=[8, 16])}) == (
        "Spec('t').dims['N'].sizes", "min=4, max=256, sizes=[8, 16]",
        "give either min/max or sizes: with sizes the range is the least and the largest size, e.g. kl.Dim(sizes=[8, 16]).")
    make(dims={"M": kl.Dim(1, 64), "N": kl.Dim(8, 16, sizes=[16, 8])})               # agreeing bounds are fine
    make(dims={"M": kl.Dim(1, 64), "N": kl.Dim(sizes=[8, 16])})


def test_dim_widths_must_be_among_its_sizes():
    where, given, fix = one(dims={"M": kl.Dim(1, 64), "N": kl.Dim(sizes=[8, 16], widths=[12])})
    assert (where, given) == ("Spec('t').dims['N'].widths", (12,))
    assert fix.startswith("[12] are not among the sizes [8, 16]")


def test_a_size_argument_names_a_declared_dim():
    lax = dict(kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    assert one(args=args(n=kl.Size("NN")), **lax)[:2] == ("Spec('t').args['n'].dim", "NN")
    assert one(args=args(n=kl.Size("NN")), **lax)[2].startswith("did you mean 'N'? name a dim declared in dims (M, N)")
    assert one(args=args(n=kl.Size(3)), **lax)[2] == "name a dim declared in dims (M, N)."
    where, given, fix = one(args=args(K=kl.Dim(1, 8)), **lax)
    assert where == "Spec('t').args['K']" and "kl.Size('E')" in fix
    # a dim read only through kl.Size is a used dim
    s = make(args=args(k=kl.Size("K")), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256), "K": kl.Dim(1, 8)}, **lax)
    assert "k" not in s.tensor_args


def test_a_collective_spec_and_its_refusals():
    def coll(**over):
        d = dict(kernel=lambda c, x: x, reference=None, args={"x": kl.Tensor("N", dtype="float32")},
                 returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)}, collective=kl.Collective())
        d.update(over)
        return d
    make(**coll())
    make(**coll(collective=kl.Collective(reference="all_gather", op="whatever")))      # op is all_reduce's alone
    assert one(**coll(reference=_ref))[:2] == ("Spec('t').reference", _ref)
    assert one(**coll(collective=kl.Collective(op="summ")))[1:] == (
        "summ", "did you mean 'sum'? use one of ('sum', 'max', 'min', 'product').")
    assert one(**coll(collective=kl.Collective(dim="K")))[:2] == ("Spec('t').collective.dim", "K")
    assert one(**coll(collective=kl.Collective(world_dim="n")))[2].startswith("did you mean 'N'?")
    assert one(**coll(collective=kl.Collective(world=[1, 2])))[:2] == ("Spec('t').collective.world", (1, 2))
    assert one(**coll(collective=kl.Collective(switches=[4, 4])))[0] == "Spec('t').collective.switches"
    assert one(**coll(collective=kl.Collective(switches=[8, 4])))[0] == "Spec('t').collective.switches"
    two = coll(args={"x": kl.Tensor("N", dtype="float32"), "y": kl.Tensor("N", dtype="float32")})
    assert one(**two)[:2] == ("Spec('t').args", ["x", "y"])
    scalar = coll(args={"x": kl.Tensor("4", dtype="float32"), "n": kl.Size("N")}, returns=kl.Tensor("4", like="x"))
    assert one(**scalar) == ("Spec('t').collective.dim", None, "name the dim that sets the message size: the input has "
                             "no symbolic dim.")
    assert one(**coll(grads=["x"])) == ("Spec('t').grads", ["x"], "a collective is judged on its ranks' outputs: drop grads=.")


def _flags(*flags, **over):
    return make(toolchain=kl.Toolchain(flags=list(flags)), **over)


def _flag_problems(*flags):
    with pytest.raises(SpecError) as e:
        _flags(*flags)
    return [(where_text(p.where), p.given, p.fix) for p in e.value.problems]


def test_two_flags_with_neither_a_name_nor_an_env_are_each_said_at_their_place_and_not_as_duplicates():
    with pytest.raises(SpecError) as e:
        _flags(kl.Flag("USE_TMA"), kl.Flag(), kl.Flag())
    text = str(e.value)
    assert "toolchain.flags[1]: got 'name=None, env=None'" in text and "toolchain.flags[2]:" in text
    assert "$None" not in text and "declare each flag once" not in text


def test_flags_well_formed():
    s = _flags(kl.Flag("USE_TMA"), kl.Flag(env="FAST", values=(None, "1"), set="after_import"))
    assert [f.key for f in s.toolchain.flags] == ["USE_TMA", "$FAST"]


@pytest.mark.parametrize("flag,where,given,words", [
    (kl.Flag(), "flags[0]", "name=None, env=None", "not both"),          # no key: named by its place
    (kl.Flag("A", env="B"), "flags['A']", "name='A', env='B'", "not both"),
    (kl.Flag("A", set="after_import"), "flags['A'].set", "after_import", "drop set="),
    (kl.Flag(env="E", set="at_strat"), "flags['$E'].set", "at_strat", "did you mean 'at_start'?"),
    (kl.Flag("x"), "flags['x'].name", "x", "not one of args"),
    (kl.Flag("1A"), "flags['1A'].name", "1A", "an identifier"),
    (kl.Flag(env="A=B"), "flags['$A=B'].env", "A=B", "environment variable's name"),
    (kl.Flag(env="E", values=(0, 1)), "flags['$E'].values", (0, 1), "values are strings"),
    (kl.Flag("A", values=([1], [2])), "flags['A'].values", ([1], [2]), "plain values"),
    (kl.Flag("A", values=(1,)), "flags['A'].values", (1,), "at least two distinct"),
    (kl.Flag("A", values=("x", "x")), "flags['A'].values", ("x", "x"), "at least two distinct"),
])
def test_a_flags_refusals(flag, where, given, words):
    (w, g, fix), = _flag_problems(flag)
    assert (w, g) == (f"Spec('t').toolchain.{where}", given) and words in fix, fix


def test_a_flag_declared_twice():
    assert _flag_problems(kl.Flag("A"), kl.Flag("A", values=(1, 2))) == [
        ("Spec('t').toolchain.flags", "A", "declare each flag once.")]


def _calls(calls, **over):
    return make(repetition=kl.Repetition(calls=calls), **over)


@pytest.mark.parametrize("calls,where", [
    (kl.Calls(pattern="aabb"), "pattern"), (kl.Calls(pattern=""), "pattern"), (kl.Calls(pattern="ÀB"), "pattern"),
    (kl.Calls(count=0), "count"), (kl.Calls(count=True), "count"), (kl.Calls(fresh=1), "fresh"),
    (kl.Calls(seconds=0), "seconds"),
])
def test_calls_fields(calls, where):
    with pytest.raises(SpecError) as e:
        _calls(calls)
    assert [where_text(p.where) for p in e.value.problems] == [f"Spec('t').repetition.calls.{where}"]


def test_a_calls_stream_may_take_at_most_half_the_points_timeout():
    _calls(kl.Calls(seconds=60))                             # the default timeout is 120 s
    with pytest.raises(SpecError) as e:
        _calls(kl.Calls(seconds=60.5))
    assert e.value.fix == "give at most half the point's timeout (120 s): 60, or raise Spec(timeout_s=...) to 121 or more."
    _calls(kl.Calls(seconds=5), timeout_s=10)
    with pytest.raises(SpecError) as e:
        _calls(kl.Calls(seconds=6), timeout_s=10)
    assert e.value.where == "Spec('t').repetition.calls.seconds" and "(10 s): 5," in e.value.fix


def _when(when, **over):
    return make(toolchain=kl.Toolchain(expect=[kl.Expect("*", when=when)]), **over)


def _when_problem(when, **over):
    with pytest.raises(SpecError) as e:
        _when(when, **over)
    assert len(e.value.problems) == 1 and e.value.where == "Spec('t').toolchain.expect[0].when", str(e.value)
    return e.value.given, e.value.fix


@pytest.mark.parametrize("when", [
    {"$FAST": "1"}, {"$FAST": None}, {"$FAST": [None, "0"]}, {"torch": ">=2.6"}, {"capability": ">=9.0"},
    {"N": 8}, {"N": [1, 256]}, {"N": range(1, 65)}, {"precise": False}, {"dtype": "bfloat16"},
    {"dtype:w": "float32"}, {"dtype:out": ["float32"]}, {"dtype": lambda d: d != "float32"},
])
def test_when_keys_a_spec_may_name(when):
    def kernel(x, w, precise=True, **kw):
        return x
    _when(when, kernel=kernel)


@pytest.mark.parametrize("when,words", [
    ({"$": "1"}, "an environment variable's condition is '$NAME'"),
    ({"$A=B": "1"}, "an environment variable's condition is '$NAME'"),
    ({"$A": 1}, "an environment variable's condition is '$NAME'"),
    ({"$A": []}, "an environment variable's condition is '$NAME'"),
    ({"torch": "banana"}, "torch='banana': 'banana' is not a version specifier; give a version specifier, e.g. {'torch': '>=2.6'}"),
    ({"capability": "9"}, "e.g. {'capability': '>=9.0'}"),
    ({"torch": ""}, "give a version specifier string"),
    ({"N": 300}, "N must be an int within [1, 256] (or a list of them)."),
    ({"N": [8, 0]}, "N must be an int within [1, 256]"),
    ({"N": True}, "N must be an int within [1, 256]"),
    ({"BLOK": 8}, "did you mean 'BLOCK'? 'BLOK' is neither a dim (M, N) nor a config key or launcher keyword (BLOCK)"),
    ({"dtype": "float64"}, "dtype='float64': x takes float32, bfloat16"),
    ({"dtype:out": "float16"}, "out takes float32, bfloat16"),           # out is like x: x's dtypes
    ({"dtype:q": "float32"}, "(NAME one of x, w, out)"),
    ({"N": lambda n: False}, "the predicate holds at no size the dim takes (an int within [1, 256])"),
])
def test_when_refusals(when, words):
    given, fix = _when_problem(when, configs=[{"BLOCK": 8}])
    assert words in fix, fix


def test_a_when_on_a_dim_of_sizes_says_its_sizes():
    given, fix = _when_problem({"N": 12}, dims={"M": kl.Dim(1, 64), "N": kl.Dim(sizes=[8, 16])})
    assert fix == "N must be one of its sizes [8, 16] (or a list of them)."


def test_a_when_predicate_shows_as_text_in_the_given_value():
    given, fix = _when_problem({"N": range(300, 400)})
    assert given == {"N": "range(300, 400)"}


@pytest.mark.parametrize("expect,where,words", [
    (kl.Expect(""), "kernel", "give a glob"),
    (kl.Expect("*", when={}), "when", "give a dict of dims"),
    (kl.Expect("*", launch={1: 2}), "launch", "constexpr and launch-option"),
    (kl.Expect("*", label=3), "label", "give a short name"),
    (kl.Expect("*", runs=False, raises=(ValueError, "x")), "raises", "exception class"),
    (kl.Expect("*", runs=False, raises=()), "raises", "exception class"),
])
def test_an_expects_fields(expect, where, words):
    with pytest.raises(SpecError) as e:
        make(toolchain=kl.Toolchain(expect=[expect]))
    assert e.value.where == f"Spec('t').toolchain.expect[0].{where}" and words in e.value.fix, str(e.value)


def test_an_expect_that_refuses_with_exception_classes_is_fine():
    make(toolchain=kl.Toolchain(expect=[kl.Expect("*", runs=False, raises=(ValueError, KeyError), when={"N": 1})]))


def test_grads_refusals_name_what_the_name_is():
    lax = dict(kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    assert one(grads=["out"])[1:] == ("out", "'out' is an output; name the tensor inputs whose gradients the kernel's "
                                      "backward computes, e.g. grads=['x', 'w'] (the tensor inputs: x, w).")
    assert one(grads=["n"], args=args(n=kl.Size("N")), **lax)[2].startswith("'n' is a scalar argument; ")
    assert one(grads=["xx"])[2].startswith("did you mean 'x'? name the tensor inputs")
    assert one(grads=["x", "x"])[1:] == (["x", "x"], "name each input once.")
    assert one(grads=[1]) == ("Spec('t').grads", (1,), v.GRADS_FIX + ".")
    assert one(grads=["i"], args=args(i=kl.Tensor("N", dtype="int32")), **lax)[2] == (
        "'i' is not of a floating dtype: no gradient flows to it; drop it from grads.")
    make(grads=["y"], args=args(y=kl.Tensor("N", like="w")), **lax)        # floating through its like model
    assert make(grads="x").grads == ("x",)


def test_a_config_whose_values_are_not_a_dict_or_whose_tolerance_is_bad():
    assert one(configs=[kl.Config([1, 2])])[:2] == ("Spec('t').configs.0.values", [1, 2])
    assert one(configs=[{"a": 1}, kl.Config({"b-c": 1})])[0] == "Spec('t').configs.1.values"
    where, given, fix = one(configs=[kl.Config({"b": 1}, tolerance=(1e-3,))])
    assert (where, given, fix) == ("Spec('t').configs.0.tolerance", (1e-3,), "each tolerance is (rtol, atol): two finite "
                                   "numbers >= 0.")


@pytest.mark.parametrize("config", [{"b-c": 1}, {1: 2}, {"\x1b[31m": 1}, {"": 0}])
def test_a_plain_config_dicts_keys_are_names_as_a_kl_configs_are(config):
    assert one(configs=[{"BLOCK": 8}, config]) == (
        "Spec('t').configs.1", config, "name each key as the launcher's keyword argument it is, an identifier, e.g. "
        "{'BLOCK': 64}.")


def test_grad_overwritten_is_an_outputs_and_needs_grads():
    assert one(args=args(w=kl.Tensor("N", dtype="float32", grad_overwritten=True)))[2].startswith(
        "grad_overwritten= marks an output whose upstream gradient")
    assert one(returns=kl.Tensor("M N", like="x", grad_overwritten=True))[2].startswith(
        "a backward overwrites the upstream gradient: declare the inputs")
    make(returns=kl.Tensor("M N", like="x", grad_overwritten=True), grads=["x"])


def test_a_write_condition_by_keywords_names_the_configs_keys():
    where, given, fix = one(configs=[{"in_place": True}], args=args(w=kl.Tensor("N", dtype="float32", mutated={"in_plac": True})))
    assert (where, given) == ("Spec('t').args['w'].mutated", {"in_plac": True})
    assert fix == "did you mean 'in_place'? name the launcher's keywords its configs set (in_place): ['in_plac'] is in none of them."
    make(args=args(w=kl.Tensor("N", dtype="float32", mutated={"anything": 1})))       # no configs: not judged


def test_mutated_backward_needs_the_input_in_grads():
    where, given, fix = one(args=args(w=kl.Tensor("N", dtype="float32", mutated="backward")))
    assert (where, given) == ("Spec('t').args['w'].mutated", "backward") and "add 'w' to Spec(grads=[...])" in fix
    make(args=args(w=kl.Tensor("N", dtype="float32", mutated="backward")), grads=["w"])


def test_a_three_tensor_like_cycle_is_one_problem():
    found = problems(args=args(x=kl.Tensor("M N", like="w"), w=kl.Tensor("N", like="y"), y=kl.Tensor("N", like="x")),
                     kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    assert [(w, g) for w, g, _ in found] == [("Spec('t').args['x'].like", "w")]     # x's own like, as written
    found = problems(args=args(x=kl.Tensor("M N", like="w"), w=kl.Tensor("N", like="x")))
    assert [(w, g) for w, g, _ in found] == [("Spec('t').args['x'].like", "w")]


@pytest.mark.parametrize("dtype,ignore,ok", [("int8", -128, True), ("int8", -129, False), ("int8", 127, True),
                                             ("int8", 128, False), ("uint8", 0, True), ("int64", -100, True),
                                             ("bool", 0, False)])
def test_a_sentinel_id_at_the_edges_of_its_dtype(dtype, ignore, ok):
    over = dict(args=args(t=kl.Tensor("M", dtype=dtype, range=(0, 1), ignore=ignore)),
                kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    if ok:
        make(**over)
    else:
        assert one(**over)[:2] == ("Spec('t').args['t'].ignore", ignore)


def test_a_sentinel_on_a_like_input_takes_its_models_dtype():
    over = dict(kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    make(args=args(i=kl.Tensor("M", dtype="int8", range=(0, 1)), t=kl.Tensor("M", like="i", range=(0, 1), ignore=-100)),
         **over)
    assert one(args=args(i=kl.Tensor("M", dtype="int8", range=(0, 1)), t=kl.Tensor("M", like="i", range=(0, 1), ignore=-200)),
               **over)[2].startswith("int8 holds no -200 (its values are -128..127)")


def test_a_range_is_judged_at_every_corner_of_the_dims_it_reads():
    over = dict(kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    make(args=args(t=kl.Tensor("M", dtype="int32", range=(0, "N-1"))), **over)       # N >= 1: (0, 0) at worst
    where, given, fix = one(args=args(t=kl.Tensor("M", dtype="int32", range=("M", "N-1"))), **over)
    assert fix.startswith("lo > hi at M = 1, N = 1 (1 > 0)")
    # a dim of sizes is read at its least and largest size, not at min/max it never had
    make(args=args(t=kl.Tensor("M", dtype="int32", range=(0, "E-8"))), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256),
                                                                            "E": kl.Dim(sizes=[8, 64])}, **over)


@pytest.mark.parametrize("dtype,rng,at,words", [
    ("int32", (0.5, 0.7), "", "int32 values are whole numbers, and [0.5, 0.7] has a bound that is not"),
    ("int32", (-1.5, -0.5), "", "has a bound that is not"),       # holds -1, but a draw truncates -0.5 to 0
    ("int8", (0, 1000), "", "int8 holds -128..127, and [0, 1000] goes beyond it"),
    ("uint8", (-5, 3), "", "uint8 holds 0..255"),
    ("int16", (0, "N*200"), " at N = 256", "int16 holds -32768..32767, and [0, 51200] goes beyond it"),
])
def test_an_integer_inputs_range_has_whole_bounds_its_dtype_holds(dtype, rng, at, words):
    lax = dict(kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])
    where, given, fix = one(args=args(t=kl.Tensor("M", dtype=dtype, range=rng)), **lax)
    assert (where, given) == ("Spec('t').args['t'].range", rng)
    assert words in fix and fix.endswith(f"{at}."), fix


@pytest.mark.parametrize("dtype,rng", [("int8", (-128, 127)), ("uint8", (0, 255)), ("int32", (0.0, 1e3)),
                                       ("int64", (-(1 << 62), 1 << 62)), ("int16", (0, "N*127")), ("bool", (0, 1))])
def test_an_integer_range_at_its_dtypes_edges_is_fine(dtype, rng):
    make(args=args(t=kl.Tensor("M", dtype=dtype, range=rng)), kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0])


def test_a_callable_without_a_readable_signature_is_not_bound():
    assert v._signature(int) is None and v._signature(_k) is not None
    make(kernel=int, reference=int)                      # nothing to bind against: not refused for its signature
    assert one(kernel=len)[0] == "Spec('t').kernel"      # len(obj, /) is read, and takes no second arg


# ---------------------------------------------------------------------------- chains, dims in use, invariants
def test_a_chains_links_are_fed_by_args_config_keys_and_earlier_outputs():
    from kladder.core.chain import Chain

    def quant(x):
        return x, x

    def gemm(xq, xs, w, BLOCK, alpha=1.0):
        return xq
    make(kernel=kl.chain(kl.Link(quant, outputs=("xq", "xs")), kl.Link(gemm, outputs=("y",))), configs=[{"BLOCK": 8}])
    where, given, fix = one(kernel=kl.chain(kl.Link(gemm, outputs=("y",)), kl.Link(quant, outputs=("xq", "xs"))),
                            configs=[{"BLOCK": 8}])
    assert (where, given) == ("Spec('t').kernel.links.0", "gemm")
    assert fix.startswith("nothing provides 'xq', 'xs': a link's parameters are the spec's args (w, x)")
    # the reference's links get no config keys and no Out args
    assert one(reference=kl.chain(kl.Link(lambda x, BLOCK: x)), configs=[{"BLOCK": 8}])[0] == "Spec('t').reference.links.0"
    out = dict(args=args(o=kl.Out("M N", like="x")), returns=None, kernel=lambda *a, **kw: None)
    assert one(reference=kl.chain(kl.Link(lambda x, o: x)), **out)[2].startswith("nothing provides 'o': ")
    assert one(kernel=kl.chain(kl.Link(quant, outputs="xq")))[:2] == ("Spec('t').kernel.links.0.outputs", "xq")
    bad = kl.Link(3)                                    # kl.chain refuses it; a Chain made by hand reaches the spec
    assert one(kernel=Chain((bad,)))[:2] == ("Spec('t').kernel.links.0", bad)


@pytest.mark.parametrize("over", [
    dict(args=args(w=kl.Tensor("N", dtype="float32", valid="V"))),                         # valid= reads V
    dict(args=args(i=kl.Tensor("M", dtype="int32", range=(0, "V-1")))),                    # a range reads V
    dict(rows="V", args=args(w=kl.Tensor("V", dtype="float32"))),
    dict(args=args(w=kl.Tensor("V*N", dtype="float32"))),                                  # a product reads V
])
def test_a_dim_is_in_use_when_anything_reads_it(over):
    make(dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256), "V": kl.Dim(1, 8)},
         kernel=lambda *a, **kw: a[0], reference=lambda *a, **kw: a[0], **over)


def test_an_unused_dim_lists_the_shapes():
    where, given, fix = one(dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256), "V": kl.Dim(1, 8)})
    assert where == "Spec('t').dims['V']" and given == kl.Dim(1, 8)
    assert fix.endswith("(shapes: x='M N', w='N', out='M N').")


def test_an_invariants_values_name_inputs_and_value_kinds():
    inv = lambda **kw: kl.Invariant("sums", check=lambda i, o: True, **kw)
    make(invariants=[inv(values={"x": "ones"})])
    assert one(invariants=[inv(values={"out": "ones"})])[:2] == ("Spec('t').invariants['sums'].values", {"out": "ones"})
    assert one(invariants=[inv(values=["x"])])[0] == "Spec('t').invariants['sums'].values"


def test_a_nul_in_an_expects_variable_value():
    where, given, fix = one(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"$FAST": ["0", "1\x00"]})]))
    assert (where, given) == ("Spec('t').toolchain.expect[0].when", {"$FAST": ["0", "1\x00"]}) and "NUL byte" in fix


ESC = "\x1b[31mX"


@pytest.mark.parametrize("over", [
    dict(name=ESC),
    dict(args=args(x=kl.Tensor("M " + ESC, dtype="float32"))),
    dict(args=args(x=kl.Tensor("M N", dtype=ESC))),
    dict(args=args(x=kl.Tensor("M N", dtype="float32", range=(0, "N+" + ESC)))),
    dict(returns=kl.Tensor("M N", like=ESC)),
    dict(rows=ESC),
    dict(toolchain=kl.Toolchain(flags=[kl.Flag(env=ESC + "=")])),
    dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={ESC: 1})])),
    dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"torch": ESC})])),
    dict(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"dtype:" + ESC: "float32"})])),
    dict(toolchain=kl.Toolchain(imports=[ESC])),
    dict(tolerance={ESC: (1, 1)}),
    dict(grads=[ESC]),
    dict(configs=[{ESC: 1}]),
    dict(production=[{"M": 1, ESC: 2}]),
    {ESC: 1},
], ids=lambda o: next(iter(o)).encode("unicode_escape").decode())
def test_no_refusal_passes_a_control_character_the_user_wrote_to_the_terminal(over):
    with pytest.raises(SpecError) as e:
        make(**over)
    assert "\x1b" not in str(e.value), str(e.value)
