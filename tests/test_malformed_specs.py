"""Every everyday spec mistake gets one SpecError that names the field, shows what was given
and says the fix; never a traceback from deeper in, never silent acceptance. Through the CLI,
the same mistakes (and a spec module that does not import) exit 2 with one line."""
import os
import sys

import pytest
import torch

import kladder as kl
from kladder.core import spec as kspec
from conftest import run_cli

HERE = os.path.dirname(__file__)


def _k(x, w=None, out=None, **kw):
    return x


def base(**over):
    d = dict(kernel=_k, reference=_k,
             args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]), "w": kl.Tensor("N", dtype="float32")},
             returns=kl.Tensor("M N", like="x"),
             dims={"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=8, widths=[128])})
    d.update(over)
    return d


def spec(**over):
    return kl.Spec("t", **base(**over))


def dims(**over):
    d = {"M": kl.Dim(1, 64, tile=16), "N": kl.Dim(1, 256, tile=8, widths=[128])}
    d.update(over)
    return d


def args(**over):
    d = {"x": kl.Tensor("M N", dtype=["bfloat16", "float16"]), "w": kl.Tensor("N", dtype="float32")}
    d.update(over)
    return d


# (label, a callable that builds the bad spec, a piece of the field path, a piece of the fix)
CASES = [
    # the head
    ("name not a string", lambda: kl.Spec(5, **base()), "Spec.name", "identifier"),
    ("name with a space", lambda: kl.Spec("my norm", **base()), "Spec.name", "identifier"),
    ("kernel not callable", lambda: spec(kernel="rmsnorm"), ".kernel", "callable"),
    ("reference not callable", lambda: spec(reference=None), ".reference", "callable"),
    ("args a list", lambda: spec(args=[kl.Tensor("M N", dtype="float32")]), ".args", "dict"),
    ("args empty", lambda: spec(args={}), ".args", "dict"),
    ("dims a list", lambda: spec(dims=[kl.Dim(1, 8)]), ".dims", "dict"),
    ("build not callable", lambda: spec(build=3), ".build", "callable"),
    ("reference_dtype an int dtype", lambda: spec(reference_dtype="int64"), ".reference_dtype", "use one of"),
    ("reference_dtype misspelt", lambda: spec(reference_dtype="double"), ".reference_dtype", "use one of"),
    ("no outputs", lambda: spec(returns=None), ".returns", "declare the outputs"),
    # keywords
    ("Spec keyword typo", lambda: kl.Spec("t", **{**base(), "kernal": _k}), ".kernal", "did you mean 'kernel'"),
    ("Spec keyword typo (refrence)", lambda: kl.Spec("t", **{**base(), "refrence": _k}), ".refrence", "did you mean"),
    ("Spec unknown keyword", lambda: kl.Spec("t", **{**base(), "grid": 4}), ".grid", "has no field"),
    ("Spec missing reference", lambda: kl.Spec("t", kernel=_k, args=args(), dims=dims()), ".reference", "needs"),
    ("Spec too many positionals", lambda: kl.Spec(*(["t"] + [None] * 40)), "kl.Spec", "positional"),
    ("Tensor keyword typo", lambda: kl.Tensor("M N", dtyp="float32"), "kl.Tensor.dtyp", "did you mean 'dtype'"),
    ("Tensor shape misspelt", lambda: kl.Tensor(shap="M N"), "kl.Tensor.shap", "did you mean 'shape'"),
    ("Tensor without shape", lambda: kl.Tensor(dtype="float32"), "kl.Tensor.shape", "needs"),
    ("Out keyword typo", lambda: kl.Out("M N", lik="x"), "kl.Out.lik", "did you mean 'like'"),
    ("Dim keyword typo", lambda: kl.Dim(1, 64, tiles=8), "kl.Dim.tiles", "did you mean 'tile'"),
    ("Dim width typo", lambda: kl.Dim(1, 64, width=[8]), "kl.Dim.width", "did you mean 'widths'"),
    ("Invariant keyword typo", lambda: kl.Invariant("sum", check=len, value={"x": "ones"}), "kl.Invariant.value",
     "did you mean 'values'"),
    # args
    ("the class kl.Tensor", lambda: spec(args=args(x=kl.Tensor)), "args['x']", "call it"),
    ("the class kl.Out", lambda: spec(args=args(out=kl.Out)), "args['out']", "call it"),
    ("int arg name", lambda: spec(args={0: kl.Tensor("M N", dtype="float32")}), ".args", "identifier"),
    ("arg name with a dash", lambda: spec(args={"x-in": kl.Tensor("M N", dtype="float32")}), ".args", "identifier"),
    ("dtype an int", lambda: spec(args=args(x=kl.Tensor("M N", dtype=5))), "args['x'].dtype", "dtype name"),
    ("dtype bf16", lambda: spec(args=args(x=kl.Tensor("M N", dtype="bf16"))), "args['x'].dtype", "'bfloat16'"),
    ("dtype fp16", lambda: spec(args=args(x=kl.Tensor("M N", dtype="fp16"))), "args['x'].dtype", "'float16'"),
    ("dtype half", lambda: spec(args=args(x=kl.Tensor("M N", dtype="half"))), "args['x'].dtype", "'float16'"),
    ("dtype unknown", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float8"))), "args['x'].dtype", "use one of"),
    ("dtype list with an int", lambda: spec(args=args(x=kl.Tensor("M N", dtype=["float32", 4]))), "args['x'].dtype", "dtype"),
    ("dtype empty list", lambda: spec(args=args(x=kl.Tensor("M N", dtype=[]))), "args['x'].dtype", "dtype"),
    ("no dtype and no like", lambda: spec(args=args(x=kl.Tensor("M N"))), "args['x'].dtype", "like="),
    ("dtype and like", lambda: spec(args=args(w=kl.Tensor("N", dtype="float32", like="x"))), "args['w']", "either dtype or like"),
    ("like an unknown arg", lambda: spec(returns=kl.Tensor("M N", like="y")), "returns['out'].like", "another tensor"),
    ("like itself", lambda: spec(args=args(w=kl.Tensor("N", like="w"))), "args['w'].like", "another tensor"),
    ("like a number", lambda: spec(returns=kl.Tensor("M N", like=3)), "returns['out'].like", "another tensor"),
    ("like cycle", lambda: spec(args=args(x=kl.Tensor("M N", like="w"), w=kl.Tensor("N", like="x"))), ".like", "cycle"),
    ("shape a tuple", lambda: spec(args=args(x=kl.Tensor(("M", "N"), dtype="float32"))), "args['x'].shape", "symbols"),
    ("shape an undeclared dim", lambda: spec(args=args(x=kl.Tensor("M K", dtype="float32"))), "args['x'].shape", "declare 'K'"),
    ("values on an input misspelt", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", values=["peak"]))),
     "args['x'].values", "value kinds"),
    ("values an int", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", values=3))), "args['x'].values", "list"),
    ("nonfinite values without a policy", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", values=["nonfinite"]))),
     "args['x'].values", "nonfinite="),
    ("range of one number", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", range=(1,)))), "args['x'].range", "(lo, hi)"),
    ("range an unknown dim", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", range=(1, "S")))), "args['x'].range",
     "(lo, hi)"),
    ("range a string", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", range="0..1"))), "args['x'].range", "(lo, hi)"),
    ("valid negative", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", valid=-1))), "args['x'].valid", "valid"),
    ("valid an unknown dim", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", valid="K"))), "args['x'].valid", "valid"),
    ("valid on a 0-d tensor", lambda: spec(args=args(s=kl.Tensor("", dtype="float32", valid=1))), "args['s'].valid", "0-d"),
    ("layouts misspelt", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", layouts=["strided"]))), "args['x'].layouts",
     "layouts from"),
    ("layouts an int", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", layouts=2))), "args['x'].layouts", "list"),
    ("values on an Out", lambda: spec(args=args(o=kl.Out("M N", like="x", values=["peaked"]))), "args['o'].values", "drop values"),
    ("range on an Out", lambda: spec(args=args(o=kl.Out("M N", like="x", range=(0, 1)))), "args['o'].range", "drop range"),
    ("layouts on an Out", lambda: spec(args=args(o=kl.Out("M N", like="x", layouts=["sliced"]))), "args['o'].layouts",
     "drop layouts"),
    ("values on a returned tensor", lambda: spec(returns=kl.Tensor("M N", like="x", values=["ties"])), "returns['out'].values",
     "drop values"),
    # returns
    ("returns a string", lambda: spec(returns="N"), ".returns", "kl.Tensor"),
    ("returns a list", lambda: spec(returns=[kl.Tensor("M N", like="x")]), ".returns", "dict of name"),
    ("returns the class", lambda: spec(returns=kl.Tensor), ".returns", "kl.Tensor"),
    ("returns an Out", lambda: spec(returns=kl.Out("M N", like="x")), "returns['out']", "declare it in args"),
    ("returns dict of an Out", lambda: spec(returns={"y": kl.Out("M N", like="x")}), "returns['y']", "declare it in args"),
    ("returns dict of a string", lambda: spec(returns={"y": "M N"}), "returns['y']", "kl.Tensor"),
    ("returns shadows an input", lambda: spec(returns={"x": kl.Tensor("M N", dtype="float32")}), "returns['x']", "another name"),
    ("returns an int name", lambda: spec(returns={1: kl.Tensor("M N", like="x")}), ".returns", "identifier"),
    # dims
    ("int dim name", lambda: spec(dims={1: kl.Dim(1, 8)}), ".dims", "identifier"),
    ("the class kl.Dim", lambda: spec(dims=dims(M=kl.Dim)), "dims['M']", "call it"),
    ("dim a tuple", lambda: spec(dims=dims(M=(1, 64))), "dims['M']", "kl.Dim(min, max"),
    ("dim min above max", lambda: spec(dims=dims(M=kl.Dim(64, 1))), "dims['M'].min/max", "min <= max"),
    ("dim negative min", lambda: spec(dims=dims(M=kl.Dim(-1, 64))), "dims['M'].min/max", "0 <= min"),
    ("dim max a float", lambda: spec(dims=dims(M=kl.Dim(1, 64.0))), "dims['M'].min/max", "integers"),
    ("dim max a bool", lambda: spec(dims=dims(M=kl.Dim(1, True))), "dims['M'].min/max", "integers"),
    ("tile zero", lambda: spec(dims=dims(M=kl.Dim(1, 64, tile=0))), "dims['M'].tile", "positive int"),
    ("tile a string", lambda: spec(dims=dims(M=kl.Dim(1, 64, tile="16"))), "dims['M'].tile", "positive int"),
    ("tile a float", lambda: spec(dims=dims(M=kl.Dim(1, 64, tile=16.0))), "dims['M'].tile", "positive int"),
    ("widths an int", lambda: spec(dims=dims(N=kl.Dim(1, 256, widths=32))), "dims['N'].widths", "widths=[32]"),
    ("width out of range", lambda: spec(dims=dims(N=kl.Dim(1, 256, widths=[4096]))), "dims['N'].widths", "within"),
    ("width a float", lambda: spec(dims=dims(N=kl.Dim(1, 256, widths=[128.0]))), "dims['N'].widths", "integer widths"),
    ("chunks an int", lambda: spec(dims=dims(N=kl.Dim(1, 256, chunks=64))), "dims['N'].chunks", "chunks=[64]"),
    ("chunk zero", lambda: spec(dims=dims(N=kl.Dim(1, 256, chunks=[0]))), "dims['N'].chunks", "positive int"),
    ("an unused dim", lambda: spec(dims=dims(K=kl.Dim(1, 64))), "dims['K']", "nothing uses 'K'"),
    ("a dim only in another spec's range", lambda: spec(dims=dims(K=kl.Dim(1, 64)),
                                                       args=args(w=kl.Tensor("N", dtype="float32", range=(0, 1)))),
     "dims['K']", "nothing uses 'K'"),
    ("graphs a string", lambda: spec(modes=kl.Modes(graphs="yes")), ".modes.graphs", "CUDA graphs"),
    ("mutated a string", lambda: spec(args=args(w=kl.Tensor("N", dtype="float32", mutated="yes"))), "args['w'].mutated", "True"),
    ("mutated on a returned output", lambda: spec(returns=kl.Tensor("M N", like="x", mutated=True)), "returns['out'].mutated",
     "drop mutated="),
    ("rows an undeclared dim", lambda: spec(rows="K"), ".rows", "declared in `dims`"),
    ("rows an int", lambda: spec(rows=0), ".rows", "independent"),
    # lists of shapes and configs
    ("configs a dict", lambda: spec(configs={"BLOCK": 64}), ".configs", "list of dicts"),
    ("configs of ints", lambda: spec(configs=[64, 128]), ".configs", "list of dicts"),
    ("config key an arg", lambda: spec(configs=[{"x": 1}]), ".configs", "collide"),
    ("production a dict", lambda: spec(production={"M": 1, "N": 8}), ".production", "list of dicts"),
    ("production missing a dim", lambda: spec(production=[{"M": 4}]), ".production", "every dim"),
    ("production out of range", lambda: spec(production=[{"M": 4, "N": 100000}]), ".production", "within"),
    ("tuned a string size", lambda: spec(tuned=[{"M": "4", "N": 8}]), ".tuned", "an int"),
    # tolerance
    ("tolerance a float", lambda: spec(tolerance=1e-3), ".tolerance", "(rtol, atol)"),
    ("tolerance of three", lambda: spec(tolerance=(1e-3, 1e-3, 0)), ".tolerance", "two finite numbers"),
    ("tolerance negative", lambda: spec(tolerance=(-1e-3, 0)), ".tolerance", "two finite numbers"),
    ("tolerance inf", lambda: spec(tolerance=(float("inf"), 0)), ".tolerance", "two finite numbers"),
    ("tolerance by an unknown dtype", lambda: spec(tolerance={"bf16": (1e-2, 1e-5)}), ".tolerance", "key by dtype"),
    # numbers and policies
    ("timeout a string", lambda: spec(timeout_s="10"), ".timeout_s", "above 0"),
    ("timeout negative", lambda: spec(timeout_s=-5), ".timeout_s", "above 0"),
    ("timeout zero", lambda: spec(timeout_s=0), ".timeout_s", "above 0"),
    ("nonfinite misspelt", lambda: spec(nonfinite="propogate"), ".nonfinite", "use one of"),
    ("invariants a function", lambda: spec(invariants=len), ".invariants", "kl.Invariant"),
    ("invariant check not callable", lambda: spec(invariants=[kl.Invariant("sum", check=3)]), ".check", "callable"),
    ("invariant values an unknown arg", lambda: spec(invariants=[kl.Invariant("v", check=len, values={"q": "ones"})]),
     ".values", "input args"),
    ("invariant values an unknown kind", lambda: spec(invariants=[kl.Invariant("v", check=len, values={"x": "twos"})]),
     ".values", "value kinds"),
    ("slot a number", lambda: spec(model=kl.InModel(slot=5)), ".model.slot", "slot"),
    ("model_tolerance above 1", lambda: spec(model=kl.InModel(tolerance=2)), ".model.tolerance", "between 0 and 1"),
    ("model_nll_tolerance negative", lambda: spec(model=kl.InModel(nll_tolerance=-0.1)), ".model.nll_tolerance", ">= 0"),
    # found at load, never charged to the kernel at run time (issue 34 item 4)
    ("launcher takes fewer args", lambda: spec(kernel=lambda x: x), ".kernel", "kladder calls kernel(x, w)"),
    ("launcher refuses a config key", lambda: spec(kernel=lambda x, w: x, configs=[{"BLOCK": 64}]), ".kernel",
     "BLOCK=..."),
    ("reference takes fewer args", lambda: spec(reference=lambda x: x), ".reference", "kladder calls reference(x, w)"),
    ("range lo above hi", lambda: spec(args=args(w=kl.Tensor("N", dtype="float32", range=(10, 1)))), "args['w'].range",
     "lo <= hi"),
    ("range divides by zero", lambda: spec(args=args(w=kl.Tensor("N", dtype="int32", range=(0, "N//0")))),
     "args['w'].range", "divides by zero"),
    ("range empty at the dim's min", lambda: spec(args=args(w=kl.Tensor("N", dtype="int32", range=(0, "N-6"))),
                                                  dims=dims(N=kl.Dim(4, 256))), "args['w'].range", "at N = 4"),
    ("range nan", lambda: spec(args=args(w=kl.Tensor("N", dtype="float32", range=(0, float("nan"))))), "args['w'].range",
     "finite bounds"),
    ("range inf", lambda: spec(args=args(w=kl.Tensor("N", dtype="float32", range=(0, float("inf"))))), "args['w'].range",
     "finite bounds"),
    ("range holds no bfloat16", lambda: spec(args=args(x=kl.Tensor("M N", dtype="bfloat16", range=(1.001, 1.002)))),
     "args['x'].range", "no bfloat16 value"),
    ("config value a torch dtype", lambda: spec(configs=[{"dt": torch.float16}]), ".configs.0.dt", "plain values"),
    ("config value nan", lambda: spec(configs=[{"scale": float("nan")}]), ".configs.0.scale", "plain values"),
    ("flag env with a NUL", lambda: spec(toolchain=kl.Toolchain(flags=[kl.Flag(env="MY\x00LIB", values=("0", "1"))])), ".toolchain.flags", "NUL byte"),
    ("flag env value with a NUL", lambda: spec(toolchain=kl.Toolchain(flags=[kl.Flag(env="MYLIB", values=("0", "1\x00"))])), ".toolchain.flags", "NUL byte"),
    ("expect env with a NUL", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"$MY\x00": "1"})])), ".toolchain.expect", "NUL byte"),
    # a predicate over a dim in `when` (issue 34 item 2)
    ("when predicate on a config key", lambda: spec(configs=[{"BLOCK": 8}], toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"BLOCK": range(8, 64)})])),
     ".toolchain.expect[0].when", "condition on a dim's size"),
    ("when range that misses the dim", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"N": range(300, 400)})])),
     ".toolchain.expect[0].when", "holds at no size"),
    ("when predicate that raises", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"N": lambda n: 1 // (n - 7) > 0})])),
     ".toolchain.expect[0].when", "raised ZeroDivisionError"),
    ("expect runs not a bool", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", runs="no")])), ".toolchain.expect[0].runs", "give False"),
    ("expect raises not an exception", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", runs=False, raises="ValueError")])),
     ".toolchain.expect[0].raises", "exception class"),
    ("expect raises without runs=False", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", raises=ValueError)])),
     ".toolchain.expect[0].raises", "runs=False"),
    ("reference needs a keyword a config leaves out", lambda: spec(
        kernel=lambda x, w, **kw: x, reference=lambda x, w, *, factor: x, configs=[{"factor": 3}, {"other": 1}]),
     ".reference", "each config key it takes"),
    ("when range decreasing", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"N": range(256, 1, -1)})])),
     ".toolchain.expect[0].when", "increasing range"),
    ("rows no shape uses", lambda: spec(rows="L", dims=dims(L=kl.Dim(1, 8)),
                                        args=args(w=kl.Tensor("N", dtype="int32", range=(1, "L")))), ".rows",
     "no tensor's shape uses 'L'"),
    ("grads of a mutated input", lambda: spec(grads=["x"], args=args(x=kl.Tensor("M N", dtype="float32", mutated=True))),
     ".grads", "drop it from grads"),
    ("a link nothing provides", lambda: spec(kernel=kl.chain(kl.Link(lambda x, scale: x, outputs=("y",)))),
     ".kernel.links.0", "nothing provides 'scale'"),
    ("a link's outputs not names", lambda: spec(kernel=kl.chain(kl.Link(lambda x: x, outputs=("1y",)))),
     ".kernel.links.0.outputs", "identifiers"),
    # sentinel ids (issue 34 item 2)
    ("ignore not an int", lambda: spec(args=args(t=kl.Tensor("M", dtype="int64", range=(0, "N-1"), ignore="-100"))),
     "args['t'].ignore", "as an int"),
    ("ignore without a range", lambda: spec(args=args(t=kl.Tensor("M", dtype="int64", ignore=-100))),
     "args['t'].ignore", "give the ids' range too"),
    ("ignore on a float input", lambda: spec(args=args(t=kl.Tensor("M", dtype="float32", range=(0, 5), ignore=-100))),
     "args['t'].ignore", "needs an integer input"),
    ("ignore the dtype cannot hold", lambda: spec(args=args(t=kl.Tensor("M", dtype="uint8", range=(0, 5), ignore=-100))),
     "args['t'].ignore", "uint8 holds no -100"),
    ("ignore on an output", lambda: spec(returns=kl.Tensor("M N", like="x", ignore=-100)), ".ignore", "drop ignore="),
    # a tolerance per output (issue 34 item 2)
    ("tolerance by an unknown output", lambda: spec(tolerance={"lse": (1e-3, 1e-5)}), ".tolerance", "by output names (out)"),
    ("an output's tolerance not a pair", lambda: spec(tolerance={"out": 1e-3}), ".tolerance", "'out': give the output's"),
    ("an output's tolerance by an unknown dtype", lambda: spec(tolerance={"out": {"bf16": (1e-2, 1e-5)}}), ".tolerance",
     "'out': key by dtype"),
    ("a config's tolerance by an unknown output", lambda: spec(configs=[kl.Config({"BLOCK": 8}, tolerance={"lse": (1e-3, 0)})]),
     ".configs.0.tolerance", "by output names"),
    # dims as products (issue 34 item 2)
    ("a shape dim that is a sum", lambda: spec(args=args(x=kl.Tensor("M+N N", dtype="float32"))), "args['x'].shape",
     "a product of them joined by '*'"),
    ("a product with an empty factor", lambda: spec(args=args(x=kl.Tensor("M**N", dtype="float32"))), "args['x'].shape",
     "a product of them joined by '*'"),
    ("a product of an undeclared dim", lambda: spec(args=args(x=kl.Tensor("M*NN", dtype="float32"))), "args['x'].shape",
     "'M*NN' is a product of dims: did you mean 'N'? declare 'NN'"),
    # configs bound to a stream's letters (issue 34 item 2)
    ("calls configs a list", lambda: spec(configs=[{"BLOCK": 8}], repetition=kl.Repetition(calls=kl.Calls(pattern="AB", configs=[{"BLOCK": 8}]))),
     ".repetition.calls.configs", "a dict of the pattern's letters"),
    ("calls config on no letter", lambda: spec(configs=[{"BLOCK": 8}], repetition=kl.Repetition(calls=kl.Calls(pattern="AB", configs={"C": {"BLOCK": 8}}))),
     ".repetition.calls.configs", "'C' is no letter of the pattern 'AB'"),
    ("when on a dtype the tensor does not take", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"dtype": "float64"})])),
     ".toolchain.expect[0].when", "x takes bfloat16, float16"),
    ("when on the dtype of no tensor", lambda: spec(toolchain=kl.Toolchain(expect=[kl.Expect("*", when={"dtype:q": "float32"})])),
     ".toolchain.expect[0].when", "'dtype:NAME' (NAME one of x, w, out)"),
    # an input the forward overwrites with its gradient (issue 34 item 2)
    ("mutated gradient without grads", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", mutated="gradient"))),
     "args['x'].mutated", "add 'x' to Spec(grads=[...])"),
    ("mutated an unknown word", lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", mutated="grad"))),
     "args['x'].mutated", "'gradient' when the forward overwrites"),
    ("calls config not declared", lambda: spec(configs=[{"BLOCK": 8}], repetition=kl.Repetition(calls=kl.Calls(pattern="AB", configs={"B": {"BLOCK": 16}}))),
     ".repetition.calls.configs.B", "a config the spec declares"),
]


# a case whose one mistake leaves a second real problem, reported with it: args['out'] (the class
# kl.Out) shares its name with the default name of `returns` ('out'), a clash that stays once the
# class is called.
TWO_PROBLEMS = {"the class kl.Out"}


def test_there_are_at_least_80_mistakes():
    assert len(CASES) >= 80


@pytest.mark.parametrize("label,build,where,fix", CASES, ids=[c[0] for c in CASES])
def test_each_mistake_is_one_spec_error_naming_the_field(label, build, where, fix):
    with pytest.raises(kl.SpecError) as e:
        build()
    msg = str(e.value)
    assert where in e.value.where, (e.value.where, msg)
    assert fix in msg, msg
    assert ": got " in msg
    assert len(e.value.problems) == (2 if label in TWO_PROBLEMS else 1), msg
    assert msg.count("\n") == (0 if len(e.value.problems) == 1 else len(e.value.problems)), msg


def test_every_problem_of_a_spec_is_reported_together():
    with pytest.raises(kl.SpecError) as e:
        spec(args=args(x=kl.Tensor("M N", dtype="bf16"), w=kl.Tensor("N", dtype="float32", layouts=["strided"])),
             dims=dims(M=kl.Dim(64, 1)), timeout_s=-1, nonfinite="propogate")
    err, msg = e.value, str(e.value)
    wheres = [kspec.where_text(p.where) for p in err.problems]
    assert wheres == ["Spec('t').timeout_s", "Spec('t').nonfinite", "Spec('t').dims['M'].min/max",
                      "Spec('t').args['x'].dtype", "Spec('t').args['w'].layouts"], msg
    assert msg.splitlines()[0] == "5 problems in Spec('t'):"
    for line, p in zip(msg.splitlines()[1:], err.problems, strict=True):   # each: where, given, fix, on its own line
        assert line == f"  {kspec.where_text(p.where)}: got {kspec._shown(p.given)}. {p.fix}"
    assert "'bf16'. use 'bfloat16'." in msg and "did you mean 'propagate'?" in msg
    assert (err.where, err.given, err.fix) == ("Spec('t').timeout_s", -1, err.problems[0].fix)    # the first's, as before


def test_one_mistake_does_not_report_what_it_hides():
    # a shape that cannot be read leaves its dims looking unused; a bad dim leaves the production
    # shapes unjudgeable: neither is a second problem
    with pytest.raises(kl.SpecError) as e:
        spec(args=args(x=kl.Tensor(("M", "N"), dtype="float32")))
    assert [kspec.where_text(p.where) for p in e.value.problems] == ["Spec('t').args['x'].shape"]
    with pytest.raises(kl.SpecError) as e:
        spec(dims=dims(N=(1, 256)), production=[{"M": 1, "N": 8}])
    assert [kspec.where_text(p.where) for p in e.value.problems] == ["Spec('t').dims['N']"]


def test_a_misspelt_dim_in_a_shape_says_did_you_mean():
    with pytest.raises(kl.SpecError) as e:
        spec(args=args(x=kl.Tensor("M NN", dtype="float32")))
    assert e.value.where == "Spec('t').args['x'].shape" and "'M NN'" in str(e.value)
    assert "did you mean 'N'? declare 'NN' in dims" in e.value.fix
    with pytest.raises(kl.SpecError) as e:
        spec(rows="MM")
    assert "did you mean 'M'?" in e.value.fix
    with pytest.raises(kl.SpecError) as e:
        spec(production=[{"M": 1, "n": 8}])
    assert e.value.where == "Spec('t').production" and "did you mean 'N'? give a size for every dim: M, N." in e.value.fix


def _collective_spec(**over):
    return kl.Spec("ar", kernel=lambda c, x: x, reference=None, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 64)}, collective=kl.Collective(**over))


@pytest.mark.parametrize("build,where", [
    (lambda: spec(model=kl.InModel(nll_tolerance=True)), "Spec('t').model.nll_tolerance"),
    (lambda: spec(model=kl.InModel(tolerance=False)), "Spec('t').model.tolerance"),
    (lambda: spec(timeout_s=True), "Spec('t').timeout_s"),
    (lambda: spec(dims=dims(M=kl.Dim(True, 64))), "Spec('t').dims['M'].min/max"),
    (lambda: spec(dims=dims(M=kl.Dim(1, 64, tile=True))), "Spec('t').dims['M'].tile"),
    (lambda: spec(dims=dims(M=kl.Dim(1, 64, tile=[16, True]))), "Spec('t').dims['M'].tile"),
    (lambda: spec(dims=dims(N=kl.Dim(1, 256, widths=[True]))), "Spec('t').dims['N'].widths"),
    (lambda: spec(dims=dims(N=kl.Dim(1, 256, chunks=[True]))), "Spec('t').dims['N'].chunks"),
    (lambda: spec(production=[{"M": True, "N": 8}]), "Spec('t').production"),
    (lambda: spec(tolerance=(True, 0)), "Spec('t').tolerance"),
    (lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", valid=True))), "Spec('t').args['x'].valid"),
    (lambda: spec(args=args(x=kl.Tensor("M N", dtype="float32", range=(False, 1)))), "Spec('t').args['x'].range"),
    (lambda: _collective_spec(lag_us=True), "Spec('ar').collective.lag_us"),
    (lambda: _collective_spec(watchdog_s=True), "Spec('ar').collective.watchdog_s"),
    (lambda: _collective_spec(queued=True), "Spec('ar').collective.queued"),
    (lambda: _collective_spec(world=True), "Spec('ar').collective.world"),
    (lambda: _collective_spec(world=[2, True]), "Spec('ar').collective.world"),
    (lambda: _collective_spec(switches=[True]), "Spec('ar').collective.switches"),
])
def test_a_boolean_is_not_a_number(build, where):
    with pytest.raises(kl.SpecError) as e:
        build()
    assert e.value.where == where and len(e.value.problems) == 1, str(e.value)
    assert "True" in str(e.value) or "False" in str(e.value)


@pytest.mark.parametrize("build,where,meant", [
    (lambda: kl.Spec("t", **{**base(), "dimz": {}}), "kl.Spec('t').dimz", "dims"),
    (lambda: kl.Tensor("N", dtpye="float32"), "kl.Tensor.dtpye", "dtype"),
    (lambda: kl.Out("N", like="x", mutatd=True), "kl.Out.mutatd", "mutated"),
    (lambda: kl.Dim(1, 64, chunk=[8]), "kl.Dim.chunk", "chunks"),
    (lambda: kl.Invariant("sum", chek=len), "kl.Invariant.chek", "check"),
    (lambda: kl.Expect("*", lable="the kernel"), "kl.Expect.lable", "label"),
    (lambda: kl.Flag("USE_TMA", value=(0, 1)), "kl.Flag.value", "values"),
    (lambda: kl.Collective(wrld=2), "kl.Collective.wrld", "world"),
    (lambda: kl.Tolerance(rtol=1e-3, atl=1e-5), "kl.Tolerance.atl", "atol"),
    (lambda: kl.Link(len, output=("y",)), "kl.Link.output", "outputs"),
])
def test_every_public_class_refuses_a_misspelt_keyword(build, where, meant):
    with pytest.raises(kl.SpecError) as e:
        build()
    assert e.value.where == where and len(e.value.problems) == 1, str(e.value)
    assert f"has no field {where.rsplit('.', 1)[1]!r}; did you mean {meant!r}? its fields are " in e.value.fix


def test_several_bad_keywords_are_reported_together():
    with pytest.raises(kl.SpecError) as e:
        kl.Collective(wrld=2, lag=5)
    assert [p.where for p in e.value.problems] == [(("kl.Collective", None), "wrld"), (("kl.Collective", None), "lag")]
    assert "did you mean 'lag_us'?" in str(e.value) and str(e.value).startswith("2 problems in kl.Collective:")


def test_a_tolerance_without_atol_is_a_spec_error():
    with pytest.raises(kl.SpecError) as e:
        kl.Tolerance(1e-3)
    assert e.value.where == "kl.Tolerance.atol" and "needs atol" in e.value.fix


def test_valid_fields_are_normalised_once():
    s = spec(args=args(x=kl.Tensor("M N", dtype="bfloat16", values="peaked", layouts="sliced", range=[0, 1])),
             dims=dims(M=kl.Dim(1, 64, tile=16, widths=[8, 32], chunks=[4])), rows="M", toolchain=kl.Toolchain(expect=["*k*"]),
             configs=[{"BLOCK": 8}])
    x, m = s.args["x"], s.dims["M"]
    assert (x.dtype, x.values, x.layouts, x.range) == (("bfloat16",), ("peaked",), ("sliced",), (0, 1))
    assert (m.tile, m.widths, m.chunks, m.tiles) == ((16,), (8, 32), (4,), (16,))
    assert s.rows == ("M",) and s.row_dims == ("M",) and s.toolchain.expect == (kl.Expect("*k*"),) and s.configs == ({"BLOCK": 8},)
    assert kl.Dim(1, 8).tiles == () and kl.Collective(world=4).worlds == (4,)


def test_a_torch_dtype_is_taken_as_its_name():
    s = spec(args=args(x=kl.Tensor("M N", dtype=[torch.bfloat16, torch.float16]), w=kl.Tensor("N", dtype=torch.float32)))
    assert s.args["x"].dtypes == ("bfloat16", "float16") and s.args["w"].dtypes == ("float32",)


BAD_MODULES = {
    "syntax.py": ("import kladder as kl\nspec = kl.Spec('t',\n", "syntax error at", "line 2"),
    "raises.py": ("import kladder as kl\n\nraise ValueError('no GPU configured')\n", "raised ValueError at", "line 3"),
    "missing.py": ("import kladder as kl\nimport mylib_that_is_not_installed\n", "no module named 'mylib_that_is_not_installed'",
                   "line 2"),
    "badspec.py": ("import kladder as kl\nspec = kl.Spec('t', kernel=len, reference=len, args={'x': kl.Tensor('N', dtype='bf16')},"
                   " dims={'N': kl.Dim(1, 8)}, returns=kl.Tensor('N', like='x'))\n", "args['x'].dtype", "'bfloat16'"),
    "typo.py": ("import kladder as kl\nspec = kl.Spec('t', kernal=len, reference=len, args={}, dims={})\n", "kernal",
                "did you mean 'kernel'"),
    "twonames.py": ("import kladder as kl\nA = dict(kernel=len, reference=len, args={'x': kl.Tensor('N', dtype='float32')},"
                    " dims={'N': kl.Dim(1, 8)}, returns=kl.Tensor('N', like='x'))\nspec = kl.Spec('t', **A)\n"
                    "other = kl.Spec('t', **{**A, 'dims': {'N': kl.Dim(1, 16)}})\n",
                    "'spec' and 'other'", "give each spec its own name"),
}


@pytest.mark.parametrize("name", sorted(BAD_MODULES))
def test_a_spec_module_that_does_not_load_is_one_line_and_exit_2(name, tmp_path):
    text, words, where = BAD_MODULES[name]
    path = tmp_path / name
    path.write_text(text)
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", str(path), "--device", "cpu", "--rungs", "1",
                        "--log", str(tmp_path / "l.jsonl")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert words in p.stderr and where in p.stderr, p.stderr


@pytest.mark.parametrize("argv,words", [
    (["--timeout", "0"], "--timeout: '0'"),
    (["--timeout", "-3"], "more than 0"),
    (["--timeout", "soon"], "give seconds"),
    (["--jobs", "0"], "--jobs: '0'"),
    (["--json", "/proc/kladder/r.json"], "--json '/proc/kladder/r.json': cannot write there"),
    (["--rungs", "1,,2"], "give rung numbers"),
])
def test_bad_options_are_usage_errors(argv, words, tmp_path):
    good = os.path.join(HERE, "specs", "good.py")
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", good, "--device", "cpu", *argv,
                        "--log", str(tmp_path / "l.jsonl")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_a_directory_with_no_spec_as_the_spec_path_is_a_usage_error(tmp_path):
    # a folder climbs every spec under it (tests/test_many.py); one that holds none is a usage error
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", str(tmp_path), "--device", "cpu"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "no kl.Spec found under" in p.stderr and "Traceback" not in p.stderr


def test_output_folders_are_made_before_the_climb(tmp_path):
    # trivial.py: a clean climb of 3 points (good.py's rung 1 was 65: ~19 CPU s for the same folders)
    trivial = os.path.join(HERE, "specs", "trivial.py")
    out = tmp_path / "new" / "deeper" / "r.json"
    log = tmp_path / "logs" / "l.jsonl"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", trivial, "--device", "cpu", "--rungs", "1",
                        "--json", str(out), "--log", str(log)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    assert out.exists() and log.exists()


def test_a_spec_error_survives_pickling_with_all_its_problems():
    import pickle
    with pytest.raises(kl.SpecError) as e:
        spec(timeout_s=0, nonfinite="nan")
    again = pickle.loads(pickle.dumps(e.value))                 # a worker process hands it back whole
    assert str(again) == str(e.value) and again.problems == e.value.problems and again.where == "Spec('t').timeout_s"


def test_two_spec_files_of_one_name_load_as_two_modules(tmp_path):
    """Two folders' spec.py files in one process stay two modules: neither replaces the other."""
    from kladder.gen.load import load_module
    mods = []
    for sub, value in (("a", 1), ("b", 2)):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "spec.py").write_text(f"VALUE = {value}\n")
        mods.append(load_module(str(tmp_path / sub / "spec.py")))
    assert mods[0].__name__ != mods[1].__name__
    assert (mods[0].VALUE, mods[1].VALUE) == (1, 2)
    assert sys.modules[mods[0].__name__].VALUE == 1
    assert load_module(str(tmp_path / "a" / "spec.py")).__name__ == mods[0].__name__   # the same name in every worker


# ---- the parts (kl.Modes, kl.Repetition, kl.Toolchain, kl.InModel): the flat fields they replaced ----
@pytest.mark.parametrize("old,value,part", [
    ("deterministic", True, "repetition=kl.Repetition(deterministic="),
    ("calls", kl.Calls("AABB"), "repetition=kl.Repetition(calls="),
    ("expect", ["*k*"], "toolchain=kl.Toolchain(expect="),
    ("flags", [kl.Flag("A")], "toolchain=kl.Toolchain(flags="),
    ("imports", ["m:f"], "toolchain=kl.Toolchain(imports="),
    ("slot", "rmsnorm", "model=kl.InModel(slot="),
    ("model_tolerance", 0.05, "model=kl.InModel(tolerance="),
    ("model_nll_tolerance", 0.05, "model=kl.InModel(nll_tolerance="),
    ("graphs", True, "modes=kl.Modes(graphs="),
])
def test_a_flat_field_that_moved_into_a_part_says_which_part(old, value, part):
    with pytest.raises(kl.SpecError) as e:
        spec(**{old: value})
    assert f"kl.Spec('t').{old}" == e.value.where and f"{old}= is now" in str(e.value) and part in str(e.value), str(e.value)


def test_parts_default_when_left_out_and_are_reported_at_their_path():
    s = spec()
    assert (s.modes, s.repetition, s.toolchain, s.model) == (kl.Modes(), kl.Repetition(), kl.Toolchain(), kl.InModel())
    with pytest.raises(kl.SpecError) as e:
        spec(repetition=kl.Repetition(calls=5, deterministic="yes"), toolchain=kl.Toolchain(imports=["nocolon"]))
    text = wheres = str(e.value)
    assert "Spec('t').repetition.calls" in text and "Spec('t').repetition.deterministic" in text
    assert "Spec('t').toolchain.imports" in text and len(e.value.problems) == 3, wheres


def test_a_part_that_is_not_one_is_a_spec_error():
    with pytest.raises(kl.SpecError) as e:
        spec(repetition={"deterministic": True})
    assert e.value.where == "Spec('t').repetition" and "kl.Repetition(" in str(e.value)


def test_parts_take_keywords_only():
    with pytest.raises(kl.SpecError, match="at most 0 positional"):
        kl.Repetition(True)


def test_derive_changes_fields_and_validates_the_result():
    base = spec(toolchain=kl.Toolchain(expect=["*k*"]))
    d = base.derive(name="u", repetition=kl.Repetition(deterministic=True))
    assert (d.name, d.repetition.deterministic, d.toolchain.expect, base.repetition.deterministic) == \
        ("u", True, (kl.Expect("*k*"),), False)
    assert d.args == base.args and d.kernel is base.kernel
    with pytest.raises(kl.SpecError, match="is now kl.Modes"):
        base.derive(graphs=True)
    with pytest.raises(kl.SpecError) as e:
        base.derive(model=kl.InModel(tolerance=3))
    assert e.value.where == "Spec('t').model.tolerance"
