"""A malformed spec gets one SpecError naming the field, what was given, and the fix."""
import pytest

import kladder as kl


def k(x, **config):
    return x


def ref(x):
    return x


def make(**over):
    base = dict(name="norm", kernel=k, reference=ref,
                args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"])},
                dims={"M": kl.Dim(1, 64, tile=8), "N": kl.Dim(1, 4096, tile=8, widths=[2880])},
                returns=kl.Tensor("M N", like="x"))
    base.update(over)
    name = base.pop("name")
    return kl.Spec(name, **base)


def test_a_well_formed_spec_constructs():
    s = make(configs=[{"BLOCK": 64}], production=[{"M": 1, "N": 2880}], tuned=[], rows="M",
             tolerance={"bfloat16": (2e-2, 1e-5)})
    assert s.outputs == {"out": kl.Tensor("M N", like="x")}
    assert s.tolerance_for("bfloat16") == kl.Tolerance(2e-2, 1e-5)
    assert s.tolerance_for("float16") == kl.DEFAULT_TOLERANCES["float16"]


MALFORMED = [
    # (override, field named in the error, a word of the given value, a word of the fix)
    (dict(name="rms norm"), "Spec.name", "rms norm", "identifier"),
    (dict(kernel="rmsnorm"), ".kernel", "rmsnorm", "callable"),
    (dict(reference=None), ".reference", "None", "reference callable"),
    (dict(args={}), ".args", "{}", "dict of argument name"),
    (dict(args={"x": kl.Tensor("M N", dtype="bf16")}), "args['x'].dtype", "bf16", "'bfloat16'"),
    (dict(args={"x": kl.Tensor("M N", dtype="float8")}), "args['x'].dtype", "float8", "one of"),
    (dict(args={"x": kl.Tensor("M Q", dtype="float32")}), "args['x'].shape", "M Q", "declare 'Q' in dims"),
    (dict(args={"x": kl.Tensor(["M", "N"], dtype="float32")}), "args['x'].shape", "['M', 'N']", "symbols separated by spaces"),
    (dict(args={"x": kl.Tensor("M N")}), "args['x'].dtype", "None", "like="),
    (dict(returns=kl.Tensor("M N", like="y")), "returns['out'].like", "y", "name another tensor"),
    (dict(returns=kl.Tensor("M N", like="x", dtype="float32")), "returns['out']", "like", "either dtype or like"),
    (dict(returns=None), ".returns", "None", "declare the outputs"),
    (dict(dims={"M": (1, 64), "N": kl.Dim(1, 64)}), "dims['M']", "(1, 64)", "kl.Dim(min, max"),
    (dict(dims={"M": kl.Dim(64, 1), "N": kl.Dim(1, 64)}), "dims['M'].min/max", "(64, 1)", "0 <= min <= max"),
    (dict(dims={"M": kl.Dim(1, 64, tile=0), "N": kl.Dim(1, 64)}), "dims['M'].tile", "0", "positive int tile"),
    (dict(dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64, widths=[2880])}), "dims['N'].widths", "2880", "widen the range"),
    (dict(configs={"BLOCK": 64}), ".configs", "BLOCK", "list of dicts"),
    (dict(configs=[{"x": 1}]), ".configs", "x", "collide with args"),
    (dict(production=[{"M": 1}]), ".production", "{'M': 1}", "every dim: M, N"),
    (dict(production=[{"M": 1, "N": 99999}]), ".production", "99999", "within [1, 4096]"),
    (dict(tolerance=(1e-2,)), ".tolerance", "0.01", "(rtol, atol)"),
    (dict(tolerance={"bf16": (1e-2, 1e-5)}), ".tolerance", "bf16", "key by dtype names"),
    (dict(tolerance=(-1.0, 0.0)), ".tolerance", "-1.0", "finite numbers >= 0"),
    (dict(rows="R"), ".rows", "R", "name dims declared"),
    (dict(reference_dtype="float128"), ".reference_dtype", "float128", "one of"),
    (dict(build="make_inputs"), ".build", "make_inputs", "callable"),
]


@pytest.mark.parametrize("over,field,given,fix", MALFORMED, ids=[m[1] + "-" + m[2][:12] for m in MALFORMED])
def test_malformed_spec_names_field_given_and_fix(over, field, given, fix):
    with pytest.raises(kl.SpecError) as e:
        make(**over)
    text = str(e.value)
    assert field in e.value.where, text
    assert given in text, text
    assert fix in e.value.fix, text


def test_like_cycle_is_reported():
    with pytest.raises(kl.SpecError, match="break the cycle"):
        make(args={"x": kl.Tensor("M N", like="y"), "y": kl.Tensor("M N", like="x")})


def test_spec_error_is_a_value_error_and_not_an_assert():
    # argument checks must survive python -O: they raise, never assert
    with pytest.raises(ValueError):
        make(name="")


def test_tolerance_forms():
    assert make(tolerance=(1e-2, 1e-3)).tolerance_for("float32") == kl.Tolerance(1e-2, 1e-3)
    assert make(tolerance=kl.Tolerance(1e-1, 0)).tolerance_for("bfloat16") == kl.Tolerance(1e-1, 0)
