"""core/spec/core.py, directly: kl.Spec's views (inputs, outputs, gradients, upstream gradients,
the writes a point declares, dtypes through `like`, ranges and valid lengths at sizes, the
message dim) and its lookups (tolerance_for by output and dtype, config_of, reference_keywords,
_keywords_taken, _tolerance_in). tests/test_calls.py covers tolerance_for by config; this covers
the output level, the precedence between all of them and the views no other test reads."""
from __future__ import annotations

import pytest

import kladder as kl
from kladder.core.point import Point
from kladder.core.spec import core
from kladder.core.spec.fields import DEFAULT_TOLERANCES


def _k(x, w, out, BLOCK=64, precise=True, **kw):
    return None


def _ref(x, w, precise=True):
    return x


def make(**over):
    d = dict(kernel=_k, reference=_ref,
             args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", like="x"),
                   "out": kl.Out("M N", like="x")},
             returns={"lse": kl.Tensor("M", dtype="float32")},
             dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256)})
    d.update(over)
    return kl.Spec("t", **d)


def point(**config):
    return Point("t", 1, (("M", 4), ("N", 8)), config=tuple(config.items()))


# ---------------------------------------------------------------------------- views
def test_inputs_outputs_and_all_tensors_in_their_order():
    s = make(args={"x": kl.Tensor("M N", dtype="float32"), "n": kl.Size("N"), "out": kl.Out("M N", like="x"),
                   "w": kl.Tensor("N", like="x")},
             kernel=lambda *a, **kw: None, reference=lambda *a, **kw: None, grads=["w"])
    assert list(s.tensor_args) == ["x", "out", "w"]
    assert list(s.input_args) == ["x", "w"] and list(s.out_args) == ["out"]
    assert list(s.outputs) == ["out", "lse"]                      # Out args, then returns
    assert list(s.all_tensors) == ["x", "out", "w", "lse", "grad of w"]
    assert s.grad_outputs == {"grad of w": kl.Tensor("N", like="w")}
    assert s.upstream == {"upstream out": "out", "upstream lse": "lse"}
    assert make().upstream == {}                                  # no backward, no upstream gradients


def test_a_single_returned_tensor_is_called_out():
    s = make(args={"x": kl.Tensor("M N", dtype="float32")}, returns=kl.Tensor("M N", like="x"),
             kernel=lambda x: x, reference=lambda x: x)
    assert s.returned == {"out": kl.Tensor("M N", like="x")} and list(s.outputs) == ["out"]


def test_dtype_at_follows_like_to_the_chosen_or_only_dtype():
    s = make(args={"x": kl.Tensor("M N", dtype=["float32", "bfloat16"]), "w": kl.Tensor("N", like="x"),
                   "out": kl.Out("M N", like="w"), "i": kl.Tensor("M", dtype="int32", range=(0, 3))})
    assert s.dtype_at("out", {"x": "bfloat16"}) == "bfloat16"     # out -> w -> x, chosen
    assert s.dtype_at("out", {}) == "float32"                     # x's first
    assert s.dtype_at("i", {"x": "bfloat16"}) == "int32"
    assert s.dtype_at("lse", {}) == "float32"
    assert s.dtype_choices("x") == ("float32", "bfloat16") and s.dtype_choices("w") == ()


def test_when_dtype_of_names_the_first_input_or_the_named_tensor_and_a_dim_stays_a_dim():
    s = make()
    assert s.when_dtype_of("dtype") == "x" and s.when_dtype_of("dtype:lse") == "lse"
    assert s.when_dtype_of("N") is None and s.when_dtype_of("dtypes") is None
    d = make(args={"x": kl.Tensor("dtype N", dtype="float32"), "out": kl.Out("dtype N", like="x")},
             dims={"dtype": kl.Dim(1, 4), "N": kl.Dim(1, 8)}, returns=None,
             kernel=lambda x, out: None, reference=lambda x: x)
    assert d.when_dtype_of("dtype") is None                       # a dim named 'dtype' is the dim


def test_range_and_valid_at_sizes():
    s = make(args={"x": kl.Tensor("M N", dtype="float32", valid="V"), "i": kl.Tensor("M", dtype="int64", range=(1, "2*N-1")),
                   "j": kl.Tensor("M", dtype="int64", range=(0, 5), valid=3), "out": kl.Out("M N", like="x")},
             dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256), "V": kl.Dim(1, 8)}, kernel=lambda *a, **kw: None,
             reference=lambda *a, **kw: None)
    assert s.range_of("i", {"N": 10}) == (1, 19) and s.range_of("j", {}) == (0, 5) and s.range_of("x", {}) is None
    assert s.valid_of("x", {"V": 6}) == 6 and s.valid_of("j", {}) == 3 and s.valid_of("i", {}) is None


def test_the_message_dim_is_declared_or_the_inputs_last_symbolic_dim():
    def coll(x_shape, **c):
        return kl.Spec("ar", kernel=lambda c, x: x, reference=None, args={"x": kl.Tensor(x_shape, dtype="float32")},
                       returns=kl.Tensor(x_shape, like="x"), dims={"M": kl.Dim(1, 4), "N": kl.Dim(1, 64)},
                       collective=kl.Collective(**c))
    assert coll("M N 4").message_dim == "N"
    assert coll("M N", dim="M").message_dim == "M"
    assert make().message_dim is None


def test_slot_target_is_the_slots_own_callable_or_the_kernel():
    assert make(model=kl.InModel(slot="rmsnorm")).slot_target() == ("rmsnorm", _k)
    assert make(model=kl.InModel(slot=("rmsnorm", len))).slot_target() == ("rmsnorm", len)


def test_when_variables_are_the_dollar_keys_sorted_without_the_dollar():
    s = make(toolchain=kl.Toolchain(expect=[kl.Expect("a", when={"$B": "1", "N": 8}), kl.Expect("b", when={"$A": None}),
                                            kl.Expect("c")]))
    assert s.when_variables == ("A", "B")


# ---------------------------------------------------------------------------- writes declared at a point
def test_declared_writes_at_a_point():
    s = make(args={"x": kl.Tensor("M N", dtype="float32", mutated={"in_place": True}),
                   "w": kl.Tensor("N", like="x", mutated=lambda p: "backward" if p.kwargs.get("bw") else False),
                   "g": kl.Tensor("N", like="x", mutated="gradient"),
                   "out": kl.Out("M N", like="x", grad_overwritten=True)},
             kernel=lambda *a, **kw: None, reference=lambda *a, **kw: None, grads=["w", "g"])
    assert s.mutated_at(point()) == () and s.mutated_at(point(in_place=True)) == ("x",)
    assert s.mutated_at(point(in_place=False)) == ()
    assert s.written_in_backward(point(bw=True)) == ("w", "g") and s.written_in_backward(point()) == ("g",)
    assert s.written_in_forward(point(bw=True)) == ("g",)
    assert s.overwritten_at(point()) == ("out",)
    assert s.declared_writes(point(in_place=True, bw=True)) == ["x", "w", "g", "upstream out"]
    assert list(s.mutated_args) == ["x", "w", "g"]


def test_grad_overwritten_without_grads_is_no_write():
    # the validator refuses it on a spec; the view itself answers nothing without a backward
    s = make()
    object.__setattr__(s.returns["lse"], "grad_overwritten", True)
    try:
        assert s.overwritten_at(point()) == ()
    finally:
        object.__setattr__(s.returns["lse"], "grad_overwritten", False)


# ---------------------------------------------------------------------------- tolerances
def test_tolerance_precedence_config_then_spec_output_before_dtype_then_defaults():
    fast = kl.Config({"precise": False}, tolerance={"lse": (5e-1, 0), "float32": (4e-1, 0)})
    s = make(configs=[fast, {"precise": True}],
             tolerance={"lse": {"bfloat16": (3e-1, 0)}, "out": (2e-1, 0), "float32": (1e-1, 0)})
    off = (("precise", False),)
    assert s.tolerance_for("float32", off, "lse") == kl.Tolerance(5e-1, 0)       # the config's, by output
    assert s.tolerance_for("float32", off, "out") == kl.Tolerance(4e-1, 0)       # the config's, by dtype
    assert s.tolerance_for("float32", (), "out") == kl.Tolerance(2e-1, 0)        # the spec's, by output
    assert s.tolerance_for("bfloat16", (), "lse") == kl.Tolerance(3e-1, 0)       # the spec's, an output's own by dtype
    assert s.tolerance_for("float32", (), "lse") == kl.Tolerance(1e-1, 0)        # lse names no float32: the dtype's
    assert s.tolerance_for("bfloat16", (), None) == DEFAULT_TOLERANCES["bfloat16"]
    assert s.tolerance_for("int32", ()) == kl.Tolerance(0.0, 0.0)                # no default: exact


@pytest.mark.parametrize("tol,dtype,output,want", [
    (None, "float32", None, None),
    (kl.Tolerance(1, 2), "anything", "x", kl.Tolerance(1, 2)),
    ((1, 2), "float32", None, kl.Tolerance(1, 2)),
    ({"float32": [1, 2]}, "float32", None, kl.Tolerance(1, 2)),               # a list pair is read as a pair
    ({"float32": kl.Tolerance(1, 2)}, "float32", None, kl.Tolerance(1, 2)),
    ({"float32": (1, 2)}, "float16", None, None),
    ({"y": (3, 4)}, "float32", "y", kl.Tolerance(3, 4)),
    ({"y": {"float16": (3, 4)}, "float32": (1, 2)}, "float32", "y", kl.Tolerance(1, 2)),
    ("junk", "float32", None, None),
])
def test_tolerance_in(tol, dtype, output, want):
    assert core._tolerance_in(tol, dtype, output) == want


# ---------------------------------------------------------------------------- configs and keywords
def test_config_of_matches_by_value_or_the_launchers_default_and_prefers_the_most_keys():
    a, b = {"BLOCK": 64}, {"BLOCK": 64, "precise": True}
    s = make(configs=[a, b])
    assert s.config_of({"BLOCK": 64}) is b                          # precise left at its default True: b, which has more keys
    assert s.config_of({"BLOCK": 64, "precise": False}) is a
    assert s.config_of({"BLOCK": 32}) is None
    assert s.config_of(()) is b                                    # BLOCK's default is 64 too
    assert make().config_of({"BLOCK": 64}) is None                  # no configs declared
    first = make(configs=[{"BLOCK": 64}, {"precise": True}])
    assert first.config_of({"BLOCK": 64, "precise": True}) is first.configs[0]    # equals: the first declared


def test_launcher_defaults_of_the_spec():
    assert make().launcher_defaults == {"BLOCK": 64, "precise": True}
    assert make(kernel=int, reference=int).launcher_defaults == {}


def test_reference_keywords_pass_only_what_the_reference_takes():
    s = make(configs=[{"precise": False, "BLOCK": 32}])
    assert s.reference_keywords({"precise": False, "BLOCK": 32}) == {"precise": False}
    assert s.reference_keywords(()) == {"precise": True}            # the launcher's default of a declared config key
    kw = make(reference=lambda x, w, **kw: x, configs=[{"precise": False, "BLOCK": 32}])
    assert kw.reference_keywords((("BLOCK", 16),)) == {"precise": True, "BLOCK": 16}
    assert make(reference=int).reference_keywords({"precise": False}) == {}


def test_keywords_taken_leave_out_the_positional_args():
    def f(x, w, a=1, *rest, b, **kw):
        return x
    assert core._keywords_taken(f, ("x", "w")) == frozenset({"a", "b", "**"})
    assert core._keywords_taken(lambda x, /, y: x, ()) == frozenset({"y"})
    assert core._keywords_taken(int, ()) == frozenset() and core._keywords_taken(3, ()) == frozenset()


def test_config_keys_and_expectations():
    s = make(configs=[{"BLOCK": 8}, {"precise": False, "BLOCK": 16}], toolchain=kl.Toolchain(expect=["*k*"]))
    assert s.config_keys == {"BLOCK", "precise"} and s.expectations == (kl.Expect("*k*"),)


def test_derive_validates_the_new_spec_and_leaves_the_old_one():
    s = make()
    d = s.derive(tolerance=(1e-2, 0))
    assert d.tolerance_for("float32") == kl.Tolerance(1e-2, 0) and s.tolerance is None
    with pytest.raises(kl.SpecError) as e:
        s.derive(tolerance=(1e-2,))
    assert e.value.where == "Spec('t').tolerance"
