"""history/key.py: what changes an outcome's key and what must not, directly on Canon, ClimbKey
and climb_key (the whole-climb reuse is tests/test_incremental.py's)."""
import dataclasses
import enum
import functools
import math
import os

import pytest
import torch

import kladder as kl
from kladder.core.point import Point
from kladder.history import key as keymod
from kladder.history.key import PART_WORDS, Canon, Unsound, _digest, climb_key, spec_variables, toolchain_of

FP = {"torch": "2.13.0", "triton": "3.9", "python": "3.11"}


def _twice(x):
    return 2 * x


def _blocked(x, BLOCK=64):
    return 2 * x


def _spec(dims=None, configs=None, toolchain=None, name="tiny"):
    extra = {} if configs is None else {"configs": configs}
    if toolchain is not None:
        extra["toolchain"] = toolchain
    return kl.Spec(name, kernel=_twice if configs is None else _blocked, reference=_twice,
                   args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
                   dims=dims or {"N": kl.Dim(1, 8)}, **extra)


def _fn(src: str, name: str = "f", glob: dict | None = None):
    scope = {"__name__": "not_a_module", **(glob or {})}
    exec(compile(src, "<made>", "exec"), scope)
    return scope[name]


# ---------------------------------------------------------------------------- digests and the toolchain
def test_digest_separates_its_parts_and_tells_bytes_from_text():
    assert _digest("ab", "c") != _digest("a", "bc")
    assert _digest(b"x") != _digest("x")
    assert _digest({"a": 1, "b": 2}) == _digest({"b": 2, "a": 1})     # a JSON object: key order is no content
    assert len(_digest()) == 64


def test_toolchain_of_takes_the_device_from_a_dict_only():
    fp = {**FP, "cuda": "12.4", "driver": "550", "device": {"name": "H100", "capability": "9.0", "arch": "sm_90",
                                                            "count": 2}, "git": {"commit": "abc"}}
    t = toolchain_of(fp)
    assert t == {"torch": "2.13.0", "triton": "3.9", "cuda": "12.4", "rocm": None, "driver": "550", "python": "3.11",
                 "device": "H100", "capability": "9.0", "arch": "sm_90", "count": 2}
    assert toolchain_of({"device": "cpu"})["device"] is None


# ---------------------------------------------------------------------------- Canon: values
def test_floats_nan_and_inf_are_kept_apart_and_strict_json_ready():
    c = Canon()
    assert c(1.5) == 1.5
    assert c(math.nan) == ["float", "nan"] and c(math.inf) == ["float", "inf"] and c(-math.inf) == ["float", "-inf"]
    assert _digest(c(1)) != _digest(c(1.0))                              # an int and a float stay what they are
    import json
    json.dumps(c([math.nan, math.inf, {"a": -math.inf}]), allow_nan=False)


def test_a_mapping_keeps_its_declared_order_a_set_does_not():
    c = Canon()
    assert c({"a": 1, "b": 2}) != c({"b": 2, "a": 1})
    assert c({1, 2, 3}) == c({3, 1, 2}) and c(frozenset({"x", "y"})) == c(frozenset({"y", "x"}))
    assert c((1, 2)) != c([1, 2])                                        # a tuple is not a list
    assert c(b"ab") == ["bytes", c(b"ab")[1]] and c(b"ab") != c(b"ac")


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


@dataclasses.dataclass
class Box:
    a: int
    b: str = "x"


def test_enums_dataclasses_dtypes_and_partials_by_their_content():
    c = Canon()
    assert c(Colour.RED) == ["enum", "Colour", 1] and c(Colour.RED) != c(Colour.BLUE)
    assert c(Box(1)) == c(Box(1)) and c(Box(1)) != c(Box(2)) and c(Box(1, "y")) != c(Box(1))
    assert c(torch.float32) == ["torch", "torch.float32"] and c(torch.device("cpu")) == ["torch", "cpu"]
    assert c(functools.partial(_twice, 3)) != c(functools.partial(_twice, 4))


def test_a_tensor_by_its_bytes_dtype_and_shape():
    c = Canon()
    a = torch.arange(6, dtype=torch.float32)
    assert c(a) == c(a.clone())
    assert c(a) != c(a.reshape(2, 3))                                    # same bytes, another shape
    assert c(a) != c(a.to(torch.int32).float() + 1)
    assert c(a)[:3] == ["tensor", "torch.float32", [6]]
    assert c(torch.empty(0))[2] == [0]


def test_tensors_past_the_bound_make_the_key_unsound(monkeypatch):
    monkeypatch.setattr(keymod, "TENSOR_BYTES", 64)
    c = Canon()
    c(torch.zeros(16))                                                   # 64 bytes: at the bound
    with pytest.raises(Unsound, match="tensors of more than"):
        c(torch.zeros(1), "w")


def test_an_object_known_only_by_its_address_is_unsound_one_with_state_is_keyed():
    import threading
    with pytest.raises(Unsound, match=r"the lock \(.*\) cannot be keyed: it has no state"):
        Canon()(threading.Lock(), "the lock")

    class Holder:
        def __init__(self, v):
            self.v = v
    c = Canon()
    assert c(Holder(1)) == c(Holder(1)) and c(Holder(1)) != c(Holder(2))


def test_nesting_past_depth_is_unsound_a_cycle_is_not():
    deep: list = []
    cur = deep
    for _ in range(keymod.DEPTH + 5):
        cur.append([])
        cur = cur[0]
    with pytest.raises(Unsound, match="nests too deep"):
        Canon()(deep, "deep")
    loop: list = [1]
    loop.append(loop)
    assert Canon()(loop)[2][1] == ["cycle", "list"]


# ---------------------------------------------------------------------------- Canon: code
def test_a_function_moved_to_another_line_keeps_its_key_its_body_does_not():
    body = "def f(x):\n    return x * 2\n"
    c = Canon()
    same = c(_fn(body)), c(_fn("\n\n\n" + body)), c(_fn("# a comment\n" + body))
    assert same[0] == same[1] == same[2]
    assert c(_fn("def f(x):\n    return x * 3\n")) != same[0]
    assert c(_fn("def f(y):\n    return y * 2\n")) != same[0]                # argument names are code


def test_closure_values_defaults_and_named_globals_are_part_of_a_function():
    def make(k):
        def f(x):
            return x * k
        return f
    c = Canon()
    assert c(make(2)) == c(make(2)) and c(make(2)) != c(make(3))
    assert c(_fn("def f(x, k=2):\n    return x * k\n")) != c(_fn("def f(x, k=3):\n    return x * k\n"))
    src = "def f(x):\n    return x * K\n"
    assert c(_fn(src, glob={"K": 2})) == c(_fn(src, glob={"K": 2, "UNUSED": 1}))   # a global it never names: nothing
    assert c(_fn(src, glob={"K": 2})) != c(_fn(src, glob={"K": 3}))


def test_installed_and_kladder_callables_by_name_and_version_not_code():
    c = Canon()
    assert c(torch.nn.functional.relu)[0] == "installed"
    assert c(torch.nn.functional.relu)[2] == "relu"
    b = c(math.sqrt)
    assert b[0] == "builtin" and b[2] == "sqrt"
    from kladder.core.point import Point as P
    assert c(P)[:3] == ["kladder", "kladder.core.point", "Point"]


# ---------------------------------------------------------------------------- climb_key: the parts
def test_the_key_has_every_part_and_is_the_same_computed_twice():
    k1, k2 = climb_key(_spec(), "cpu", FP, env={}), climb_key(_spec(), "cpu", FP, env={})
    assert k1.why_not is None and list(k1.parts) == list(PART_WORDS)
    assert k1.parts == k2.parts and k1.base == k2.base
    p = Point("tiny", 1, (("N", 3),))
    assert k1.point(p) == k2.point(p) and len(k1.point(p)) == 64


def _changed(a, b) -> list[str]:
    return [p for p in PART_WORDS if a.parts[p] != b.parts[p]]


def test_each_option_changes_its_own_part_only():
    base = climb_key(_spec(), "cpu", FP, env={})
    assert _changed(base, climb_key(_spec(), "cpu", FP, timeout_s=30.0, env={})) == ["options"]
    assert _changed(base, climb_key(_spec(), "cpu", {**FP, "torch": "2.14.0"}, env={})) == ["toolchain"]
    assert _changed(base, climb_key(_spec(), "cpu", {**FP, "git": {"commit": "x"}}, env={})) == []   # not the toolchain


def test_steering_variables_change_the_env_part_cache_folders_and_others_do_not():
    base = climb_key(_spec(), "cpu", FP, env={})
    assert _changed(base, climb_key(_spec(), "cpu", FP, env={"TRITON_DEBUG": "1"})) == ["env"]
    assert _changed(base, climb_key(_spec(), "cpu", FP, env={"TORCH_CUDA_ARCH_LIST": "9.0"})) == ["env"]
    for where in keymod.WHERE_ONLY:
        assert _changed(base, climb_key(_spec(), "cpu", FP, env={where: "/tmp/c"})) == [], where
    assert _changed(base, climb_key(_spec(), "cpu", FP, env={"HOME": "/x", "MY_VAR": "1"})) == []


def test_a_variable_the_spec_names_changes_the_env_part():
    spec = _spec(toolchain=kl.Toolchain(flags=[kl.Flag(env="MYLIB_FAST")]))
    assert spec_variables(spec) == ["MYLIB_FAST"]
    off, on = (climb_key(spec, "cpu", FP, env=e) for e in ({}, {"MYLIB_FAST": "1"}))
    assert _changed(off, on) == ["env"]
    assert _changed(climb_key(_spec(), "cpu", FP, env={}), climb_key(_spec(), "cpu", FP, env={"MYLIB_FAST": "1"})) == []


def test_the_kernel_and_the_reference_are_parts_of_their_own():
    def other(x):
        return x + x
    base = _spec()
    k = dataclasses.replace(base, kernel=other)
    r = dataclasses.replace(base, reference=other)
    a = climb_key(base, "cpu", FP, env={})
    assert _changed(a, climb_key(k, "cpu", FP, env={})) == ["kernel"]
    assert _changed(a, climb_key(r, "cpu", FP, env={})) == ["reference"]


def test_on_cuda_no_device_name_means_no_key():
    k = climb_key(_spec(), "cuda", FP, env={})
    assert k.why_not and "CUDA device" in k.why_not and k.base is None
    assert k.point(Point("tiny", 1, (("N", 1),))) is None
    named = climb_key(_spec(), "cuda", {**FP, "device": {"name": "H100", "capability": "9.0"}}, env={})
    assert named.why_not is None and named.base


def test_the_toolchain_seam_decides_the_toolchain_part(monkeypatch):
    a = climb_key(_spec(), "cpu", FP, env={})
    monkeypatch.setattr(keymod, "TOOLCHAIN", lambda fp: {"faked": True})
    assert _changed(a, climb_key(_spec(), "cpu", FP, env={})) == ["toolchain"]


# ---------------------------------------------------------------------------- a point's key
def test_a_points_words_do_not_change_its_key_its_run_does():
    k = climb_key(_spec(), "cpu", FP, env={})
    p = Point("tiny", 1, (("N", 3),), seed=7)
    assert k.point(p) == k.point(dataclasses.replace(p, why="a tail"))
    assert k.point(p) != k.point(dataclasses.replace(p, seed=8))
    assert k.point(p) != k.point(dataclasses.replace(p, dims=(("N", 4),)))
    assert k.point(p) != k.point(dataclasses.replace(p, rung=2))


def test_a_dims_range_does_not_change_a_points_key_its_tile_does():
    p = Point("tiny", 1, (("N", 3),), seed=7)
    at = climb_key(_spec({"N": kl.Dim(1, 8)}), "cpu", FP, env={}).point(p)
    assert climb_key(_spec({"N": kl.Dim(1, 64, widths=[5])}), "cpu", FP, env={}).point(p) == at
    assert climb_key(_spec({"N": kl.Dim(1, 8, tile=4)}), "cpu", FP, env={}).point(p) != at
    assert climb_key(_spec({"N": kl.Dim(1, 8, chunks=[2])}), "cpu", FP, env={}).point(p) != at


def test_only_the_config_a_point_runs_at_is_in_its_key():
    p = Point("tiny", 1, (("N", 3),), config=(("BLOCK", 64),), seed=7)
    two = climb_key(_spec(configs=[{"BLOCK": 64}, {"BLOCK": 128}]), "cpu", FP, env={})
    three = climb_key(_spec(configs=[{"BLOCK": 64}, {"BLOCK": 128}, {"BLOCK": 256}]), "cpu", FP, env={})
    assert two.point(p) == three.point(p)                                  # another config: other points, not this one
    assert two.parts == three.parts
    tol = climb_key(_spec(configs=[kl.Config({"BLOCK": 64}, tolerance={"float32": (1e-2, 0.0)}),
                                   {"BLOCK": 128}]), "cpu", FP, env={})
    assert tol.point(p) != two.point(p)                                    # its own tolerance decides its verdict


def test_a_replayed_point_is_keyed_by_its_capture_and_unkeyed_without_one(tmp_path):
    k = climb_key(_spec(), "cpu", FP, env={})
    cap = tmp_path / "cap"
    cap.mkdir()
    (cap / "manifest.json").write_text('{"calls": 1}')
    p = Point("tiny", 2, (("N", 3),), replay=str(cap / "0"), seed=7)
    first = k.point(p)
    assert first is not None
    (cap / "manifest.json").write_text('{"calls": 2}')
    assert k.point(p) != first
    assert k.point(dataclasses.replace(p, replay=str(tmp_path / "gone" / "0"))) is None


# ---------------------------------------------------------------------------- the code closure of a module
def test_a_modules_closure_covers_what_it_imports_and_native_sources_beside_it(tmp_path, monkeypatch):
    import importlib
    import sys
    pkg = tmp_path / "klunit_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text("from .helper import scale\n\ndef launch(x):\n    return scale(x)\n")
    (pkg / "helper.py").write_text("def scale(x):\n    return 2 * x\n")
    (pkg / "kern.cu").write_text("// v1\n")
    (pkg / "notes.txt").write_text("v1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for m in ("klunit_pkg", "klunit_pkg.ops", "klunit_pkg.helper"):
        monkeypatch.delitem(sys.modules, m, raising=False)
    ops = importlib.import_module("klunit_pkg.ops")

    def digest():
        return keymod.Closure().of_module(ops)
    first = digest()
    assert {os.path.basename(f) for f in keymod.Closure().files(ops)} == {"ops.py", "helper.py", "__init__.py", "kern.cu"}
    (pkg / "notes.txt").write_text("v2, longer\n")
    assert digest() == first                                              # not code: no part of the key
    (pkg / "helper.py").write_text("def scale(x):\n    return x + x\n\n")
    second = digest()
    assert second != first                                                # an imported module's bytes
    (pkg / "kern.cu").write_text("// v2, longer\n")
    assert digest() != second                                             # a CUDA source beside it


def test_a_module_with_no_source_file_is_unsound():
    import types
    with pytest.raises(Unsound, match="module 'made_up' has no source file"):
        keymod.Closure().of_module(types.ModuleType("made_up"))


# ---------------------------------------------------------------------------- over many values
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                    st.text(max_size=5), st.binary(max_size=5))
_values = st.recursive(_leaves, lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner),
                                                        st.dictionaries(st.text(max_size=3), inner, max_size=4)),
                       max_leaves=12)


@settings(max_examples=50, deadline=None)
@given(_values)
def test_canon_is_strict_json_and_the_same_for_a_copy(v):
    import copy
    import json
    out = Canon()(v)
    text = json.dumps(out, sort_keys=True, allow_nan=False)               # no NaN/Infinity reaches the digest
    assert json.dumps(Canon()(copy.deepcopy(v)), sort_keys=True, allow_nan=False) == text
