"""gen/capturing.py: the recorder (a call's tensors as the storage span they view, deduplicated
by layout, within its limits, never breaking the user's call), the manifest, an entry loaded
back in its layout, and a recorded call turned into a point or refused with the reason."""
import json
import sys
import types

import pytest
import torch

import kladder as kl
from kladder.gen import capturing
from kladder.gen.capturing import Recorder, capture, load_entry, read_manifest, replay_points


def op(x, w, eps=1e-6):
    return x * w


@pytest.fixture
def mod():
    m = types.ModuleType("kl_capture_fixture")
    m.op = op
    sys.modules[m.__name__] = m
    yield m
    del sys.modules[m.__name__]


def spec(x="M N", w="N", dtype=("bfloat16", "float16"), dims=None, w_range=None):
    return kl.Spec("rows", op, op, args={"x": kl.Tensor(x, dtype=list(dtype)),
                                         "w": kl.Tensor(w, dtype="float32", range=w_range), "eps": 1e-6},
                   returns=kl.Tensor(x, like="x"), dims=dims or {"M": kl.Dim(1, 64), "N": kl.Dim(1, 64)})


# ---------------------------------------------------------------------------- spans and keys
def test_a_span_holds_the_view_s_storage_from_its_aligned_offset():
    base = torch.arange(200.0)
    view = torch.as_strided(base, (3, 4), (10, 2), 70)            # offset 70: 6 past an aligned 64
    span, stride, pre = capturing._span(view)
    assert (stride, pre) == ((10, 2), 6) and span.numel() == 6 + 2 * 10 + 3 * 2 + 1
    back = torch.as_strided(span, (3, 4), stride, pre)
    assert torch.equal(back, view) and span.data_ptr() != base.data_ptr()


def test_a_negative_stride_is_made_contiguous_and_an_empty_tensor_is_an_empty_span():
    flipped = torch.arange(6.0).flip(0)
    span, stride, pre = capturing._span(flipped)
    assert stride == (1,) and torch.equal(span[pre:pre + 6], flipped)
    empty, stride, pre = capturing._span(torch.empty(0, 3))
    assert empty.numel() == 0 and pre == 0


def test_the_layout_key_tells_apart_shape_dtype_stride_and_alignment_but_not_the_values():
    a, b = torch.zeros(4, 8), torch.ones(4, 8)
    key = capturing._layout_key
    assert key(a) == key(b)
    assert key(a) != key(a.t()) != key(a.half())
    assert key(torch.zeros(80)[1:]) != key(torch.zeros(80)[:79])              # offset 1 vs 0
    assert key(torch.zeros(80)[64:72]) == key(torch.zeros(8))                # 64 elements on: the same alignment
    assert key(3) == ("s", 3) and key([1]) == ("o", "list")


# ---------------------------------------------------------------------------- the recorder
def test_capture_records_distinct_layouts_once_and_restores_the_target(mod, tmp_path):
    x = torch.randn(4, 16).bfloat16()[:, :8]
    with capture((mod, "op"), to=str(tmp_path)):
        got = [mod.op(x, torch.ones(8)) for _ in range(3)]
        mod.op(x.contiguous(), torch.ones(8), eps=1e-5)
    assert mod.op is op and torch.equal(got[0], op(x, torch.ones(8)))
    doc = read_manifest(str(tmp_path))
    assert (doc["calls_seen"], doc["recorded"], doc["dropped_over_limits"]) == (4, 2, 0)
    args = doc["entries"][0]["args"]
    assert args["x"] == {"kind": "tensor", "shape": [4, 8], "dtype": "bfloat16", "stride": [16, 1],
                         "storage_offset": 0, "device": "cpu"}
    assert "eps" not in args                                      # a default left out is not recorded
    assert doc["entries"][1]["args"]["eps"] == {"kind": "scalar", "value": 1e-5}
    json.dumps(doc, allow_nan=False)


def test_capture_stops_at_max_calls_and_at_max_bytes_and_counts_the_dropped(mod, tmp_path):
    with capture((mod, "op"), to=str(tmp_path / "calls"), max_calls=2) as rec:
        for n in range(1, 5):
            mod.op(torch.ones(n), torch.ones(n))
    assert (len(rec.entries), rec.dropped) == (2, 2)
    with capture((mod, "op"), to=str(tmp_path / "bytes"), max_bytes=64) as rec:
        mod.op(torch.ones(4), torch.ones(4))                     # 32 bytes
        mod.op(torch.ones(8), torch.ones(8))                     # 64 more: over
        mod.op(torch.ones(3), torch.ones(3))                     # 24 more: fits
    assert [e["args"]["x"]["shape"] for e in rec.entries] == [[4], [3]] and rec.dropped == 1


def test_a_recording_that_fails_is_noted_and_the_call_still_runs(tmp_path):
    rec = Recorder(op, str(tmp_path / "missing" / "dir"), 8, 1 << 20, "op")   # no such folder: save_file fails
    assert torch.equal(rec(torch.ones(2), torch.ones(2)), torch.ones(2))
    assert rec.entries[0]["error"].split(":")[0] in ("FileNotFoundError", "SafetensorError", "OSError")


def test_unnamed_arguments_are_numbered_where_the_signature_cannot_bind(tmp_path):
    rec = Recorder(lambda *a: a[0], str(tmp_path), 8, 1 << 20, "f")
    rec(torch.ones(2), 3)
    assert list(rec.entries[0]["args"]) == ["a"]                                  # *a binds as one argument: a tuple
    rec2 = Recorder(op, str(tmp_path), 8, 1 << 20, "op")
    assert rec2._named((1, 2, 3, 4), {}) == {"arg0": 1, "arg1": 2, "arg2": 3, "arg3": 4}


def test_a_bad_target_says_the_forms():
    with pytest.raises(ValueError, match="give 'package.module:function'"):
        capturing._resolve(42)


def test_a_string_target_is_resolved_by_the_adapter(mod, tmp_path):
    owner, attr, fn = capturing._resolve("kl_capture_fixture:op")
    assert (owner, attr, fn) == (mod, "op", op)


# ---------------------------------------------------------------------------- replay
def test_load_entry_gives_each_tensor_back_in_its_layout(mod, tmp_path):
    x = torch.randn(200)[70:].as_strided((3, 4), (10, 2))
    with capture((mod, "op"), to=str(tmp_path)):
        mod.op(x, torch.ones(4), eps=0.5)
    got = load_entry(str(tmp_path / "call-0000"), "cpu")
    assert got["x"].stride() == (10, 2) and got["x"].storage_offset() == x.storage_offset() % 64
    assert torch.equal(got["x"], x) and got["eps"] == 0.5


def test_read_manifest_without_one_says_how_to_record():
    with pytest.raises(ValueError, match=r"no manifest.json there; record one with `with kladder.capture"):
        read_manifest("/nonexistent/caps")


def sink(x, w, eps=1e-6):
    """op's signature, without its arithmetic: a call whose shapes do not broadcast is still recorded."""


def _record(mod, tmp_path, *calls):
    mod.sink = sink
    with capture((mod, "sink"), to=str(tmp_path)):
        for args in calls:
            mod.sink(*args)
    return str(tmp_path)


def test_a_recorded_call_is_a_captured_point_with_its_dims_and_chosen_dtype(mod, tmp_path):
    d = _record(mod, tmp_path, (torch.ones(3, 5).half(), torch.ones(5)))
    (p,) = replay_points(spec(), d, 2)
    assert p.sizes == {"M": 3, "N": 5} and p.dtypes == (("x", "float16"),) and p.kind == "captured"
    assert p.replay == str(tmp_path.resolve() / "call-0000")
    assert "x float16 3x5 stride (5, 1)" in p.why


@pytest.mark.parametrize("calls,s,problem", [
    (((torch.ones(3, 5).half(), torch.ones(6)),), spec(), "N is 5 in one tensor and 6 in w"),
    (((torch.ones(3, 5).half(), torch.ones(5, 1)),), spec(), r"w has shape \[5, 1\]; the spec declares 'N'"),
    (((torch.ones(3, 5), torch.ones(5)),), spec(), "x is float32; the spec declares bfloat16, float16"),
    (((torch.ones(3, 5).half(), torch.ones(3)),), spec(x="M 4", w="M", dims={"M": kl.Dim(1, 64)}),
     "x has 5 where the spec fixes 4"),
    (((torch.ones(3, 5).half(), torch.ones(5)),), spec(dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 64), "J": kl.Dim(1, 8)},
                                                       w_range=(0, "J")),
     "no captured tensor gives the size of J"),
])
def test_a_call_that_does_not_fit_the_spec_is_refused_with_the_reason(mod, tmp_path, calls, s, problem):
    d = _record(mod, tmp_path, *calls)
    with pytest.raises(ValueError, match=rf"--replay .*: call-0000 does not fit spec 'rows': {problem}"):
        list(replay_points(s, d, 2))


def test_a_product_symbol_is_checked_once_every_dim_is_read(mod, tmp_path):
    s = kl.Spec("rows", op, op, args={"x": kl.Tensor("M G*K", dtype="float16"), "w": kl.Tensor("K", dtype="float32"),
                                      "g": kl.Tensor("G", dtype="float32")},
                returns=kl.Tensor("M G*K", like="x"), dims={"M": kl.Dim(1, 64), "G": kl.Dim(1, 8), "K": kl.Dim(1, 64)})
    def three(x, w, g):
        return x
    m = types.ModuleType("kl_capture_three")
    m.op = three
    with capture((m, "op"), to=str(tmp_path / "ok")):
        m.op(torch.ones(2, 12).half(), torch.ones(4), torch.ones(3))
        m.op(torch.ones(2, 13).half(), torch.ones(4), torch.ones(3))
    pts = replay_points(s, str(tmp_path / "ok"), 2)
    assert next(pts).sizes == {"M": 2, "G": 3, "K": 4}
    with pytest.raises(ValueError, match=r"x has 13 where the spec's G\*K is 12"):
        next(pts)


def test_an_entry_that_failed_to_record_is_skipped(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"target": "t", "entries": [{"error": "OSError: full"}]}))
    assert list(replay_points(spec(), str(tmp_path), 2)) == []
