"""kladder.tools.debug: which call a debugging run keeps, when it stops, the innermost exception,
and --save's files and README (written on the CPU from small tensors; no debugger is entered)."""
import json
import types

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

import kladder as kl
from kladder.checks import values
from kladder.checks.pattern import Where
from kladder.core.outcome import KernelError, Outcome, Status
from kladder.core.point import Point
from kladder.core.spec import Tolerance
from kladder.gen.materialize import materialize
from kladder.tools import debug
from kladder.tools.debug import Seen, Watch, readme, write_saved

SPEC = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
POINT = Point("double", 1, (("N", 3),))


def _finding():
    return values.compare("out", torch.tensor([1.0, 2.0, 3.5]), torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64),
                          Tolerance(1e-5, 1e-5), Where(), {"dtype": "float32", "shape": [3]})


def _seen(label, point=POINT):
    return types.SimpleNamespace(prep=types.SimpleNamespace(point=point), label=label)


def _expected(**refs):
    return types.SimpleNamespace(refs=refs)


# ---------------------------------------------------------------------------- the Watch
def test_the_watch_keeps_the_first_failing_call_else_the_last():
    w = Watch(SPEC)
    w.judged(_seen("call 1"), {"out": 1}, _expected(out=1), [], {})
    w.judged(_seen("call 2"), {"out": 2}, _expected(out=2), [], {})
    assert w.kept.label == "call 2" and w.kept.findings == []          # none failed: the last
    bad = _finding()
    w.judged(_seen("call 3"), {"out": 3}, _expected(out=3), [bad], {"out": "m"})
    w.judged(_seen("call 4"), {"out": 4}, _expected(out=4), [_finding()], {})
    w.judged(_seen("call 5"), {"out": 5}, _expected(out=5), [], {})
    assert (w.kept.label, w.kept.outputs, w.kept.expected, w.kept.masks, w.kept.findings) == \
        ("call 3", {"out": 3}, {"out": 3}, {"out": "m"}, [bad])


def test_the_watch_copies_what_it_keeps():
    w = Watch(SPEC)
    outputs = {"out": 1}
    w.judged(_seen("c"), outputs, _expected(out=1), [], {})
    outputs["out"] = 99
    assert w.kept.outputs == {"out": 1}


def test_the_raising_call_is_kept_unless_a_failing_one_is(monkeypatch):
    w = Watch(SPEC)
    err = KernelError(ValueError("boom"), "replay 1 of 3")
    w.raised(types.SimpleNamespace(calling=types.SimpleNamespace(point=POINT)), err)
    assert (w.kept.point, w.kept.label, w.kept.outputs, w.kept.findings) == (POINT, "replay 1 of 3", {}, [])
    w.raised(types.SimpleNamespace(calling=None), KernelError(ValueError("x"), "other"))      # no call under way
    assert w.kept.label == "replay 1 of 3"
    failing = Watch(SPEC)
    failing.judged(_seen("call 1"), {}, _expected(), [_finding()], {})
    failing.raised(types.SimpleNamespace(calling=types.SimpleNamespace(point=POINT)), err)
    assert failing.kept.label == "call 1"


def test_the_watch_stops_only_with_pdb_and_only_after_a_finding(monkeypatch):
    stops, mortems = [], []
    monkeypatch.setattr(debug, "_stop_after_judgement", lambda spec, seen, *a: stops.append(seen.label))
    monkeypatch.setattr(debug, "_post_mortem", lambda spec, k: mortems.append(k.label))
    quiet = Watch(SPEC)
    quiet.judged(_seen("a"), {}, _expected(), [_finding()], {})
    quiet.raised(types.SimpleNamespace(calling=None), KernelError(ValueError("x"), "k"))
    w = Watch(SPEC, pdb=True)
    w.judged(_seen("clean"), {}, _expected(), [], {})
    w.judged(_seen("wrong"), {}, _expected(), [_finding()], {})
    w.raised(types.SimpleNamespace(calling=None), KernelError(ValueError("x"), "raised"))
    assert stops == ["wrong"] and mortems == ["raised"]


def test_innermost_follows_the_causes_that_were_raised():
    def raised(e):
        with pytest.raises(type(e)) as info:
            raise e
        return info.value
    first = raised(ZeroDivisionError("first"))
    middle = ValueError("middle")
    middle.__cause__ = first
    middle = raised(middle)
    outer = RuntimeError("InterpreterError")
    outer.__cause__ = middle
    assert debug._innermost(outer) is first
    never_raised = KeyError("made, never raised")        # no traceback: not where the kernel stopped
    top = RuntimeError("top")
    top.__cause__ = never_raised
    assert debug._innermost(top) is top
    assert debug._innermost(first) is first


# ---------------------------------------------------------------------------- --save
def test_describe_says_dtype_shape_and_the_strides_of_a_layout():
    assert debug._describe(torch.zeros(2, 3)) == "(float32, 2 x 3)"
    assert debug._describe(torch.zeros(2, 3, dtype=torch.bfloat16).t()) == "(bfloat16, 3 x 2, strides (1, 3) as passed)"
    assert debug._describe(torch.tensor(1.0)) == "(float32, scalar)"


def test_saved_files_hold_the_kept_calls_tensors_and_the_point(tmp_path):
    found = _finding()
    wide = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()            # not contiguous
    kept = Seen(POINT, {"out": wide}, {"out": torch.ones(3, dtype=torch.float64)}, {"out": torch.tensor([0, 0, 1]).bool()},
                [found], "call 2 of 2")
    outcome = Outcome(POINT, Status.FAILED, findings=[found])
    written = write_saved(str(tmp_path), SPEC, POINT, "cpu", "spec.py::spec", kept, outcome)
    assert written == ["inputs.safetensors", "outputs.safetensors", "expected.safetensors", "mask.safetensors",
                       "README.md"]
    x = load_file(tmp_path / "inputs.safetensors")["x"]
    assert torch.equal(x, materialize(SPEC, POINT, "cpu").args[0])             # made again from the point's seed
    assert torch.equal(load_file(tmp_path / "outputs.safetensors")["out"], wide)
    assert load_file(tmp_path / "expected.safetensors")["out"].dtype == torch.float64
    assert load_file(tmp_path / "mask.safetensors")["out"].tolist() == [False, False, True]
    with safe_open(tmp_path / "inputs.safetensors", "pt") as f:
        assert Point.from_dict(json.loads(f.metadata()["point"])) == POINT
    text = (tmp_path / "README.md").read_text()
    assert text.startswith(f"# kladder repro --save: {POINT.id}\n")
    assert "Verdict of this run: failed (call 2 of 2)." in text
    assert "- values on `out`: Mismatched elements: 1 / 3" in text
    assert "`out` (float32, 3 x 2, strides (1, 3) as passed)" in text
    assert "mask = load_file('mask.safetensors')" in text


def test_saving_without_a_kept_call_writes_the_inputs_alone(tmp_path):
    written = write_saved(str(tmp_path / "new"), SPEC, POINT, "cpu", "spec.py", None, Outcome(POINT, Status.PASSED))
    assert written == ["inputs.safetensors", "README.md"]
    text = (tmp_path / "new" / "README.md").read_text()
    assert "Verdict of this run: passed." in text and "outputs.safetensors" not in text


def test_the_readme_lists_what_is_not_saved():
    p = Point("double", 1, (("N", 3),), config=(("BLOCK", 64),))
    text = readme(SPEC, p, "s.py", "cpu", {"inputs": {}}, {"eps": 1e-6, "flag": True}, None,
                  Outcome(p, Status.PASSED), [])
    assert "| (not saved) | the other arguments, as passed: `eps` = 1e-06, `flag` = True |" in text
    assert "| (not saved) | the call's keywords (the point's config): {'BLOCK': 64} |" in text
    assert "kladder repro s.py" in text and "--device cpu" in text
    assert "load_file(" not in text                                           # nothing written, nothing to load


@pytest.mark.parametrize("v,is_tensor", [(torch.zeros(1), True), (1.0, False), (None, False), ([torch.zeros(1)], False)])
def test_only_tensors_are_saved(v, is_tensor):
    assert debug._is_tensor(v) is is_tensor


# ---------------------------------------------------------------------------- where the debugger stops (pdb replaced)
def test_after_a_judgement_the_frame_holds_the_names_the_docs_promise(monkeypatch, capsys):
    scope = {}
    monkeypatch.setattr(debug, "_stopped", lambda *a: scope.update(zip(
        ["inputs", "args", "kwargs", "outputs", "expected", "mask", "finding", "findings", "message", "point", "spec",
         "kernel"], a, strict=True)))
    x = torch.arange(3.0)
    p = Point("double", 1, (("N", 3),), config=(("BLOCK", 4),))
    seen = types.SimpleNamespace(prep=types.SimpleNamespace(point=p, inputs=types.SimpleNamespace(args=(x,))),
                                 label="replay 1 of 2")
    found = _finding()
    debug._stop_after_judgement(SPEC, seen, {"out": x}, {"out": x.double()}, {"out": "mask"}, [found, "second"])
    assert scope["inputs"] == {"x": x} and scope["args"] == [x] and scope["kwargs"] == {"BLOCK": 4}
    assert scope["finding"] is found and scope["findings"] == [found, "second"] and scope["point"] is p
    assert scope["kernel"] is SPEC.kernel and scope["mask"] == {"out": "mask"}
    assert scope["message"].startswith("Mismatched elements: 1 / 3")
    out = capsys.readouterr().out
    assert "kladder: stopped after replay 1 of 2 was judged: values on `out`:\n    Mismatched elements" in out
    assert "in scope: inputs, args, kwargs, outputs, expected, mask, finding, findings, message, point, spec, kernel" in out


def _users_kernel(x):
    return x.missing_method()                 # the user's own frame: where the post-mortem must stop


def test_the_post_mortem_starts_at_the_innermost_frame_of_the_users_code(monkeypatch, capsys):
    import pdb
    stopped = {}

    def interaction(self, frame, tb):             # pdb's own, less its prompt
        self.setup(frame, tb)
        stopped["function"] = self.curframe.f_code.co_name
        self.forget()
    monkeypatch.setattr(pdb.Pdb, "interaction", interaction)
    with pytest.raises(AttributeError) as info:
        _users_kernel(torch.zeros(1))
    outer = RuntimeError("the interpreter's wrapper")
    outer.__cause__ = info.value
    debug._post_mortem(SPEC, KernelError(outer, "call 1"))
    assert stopped == {"function": "_users_kernel"}
    out = capsys.readouterr().out
    assert out.startswith("\nkladder: the kernel raised RuntimeError: the interpreter's wrapper\n")
    assert "post-mortem at the innermost frame of your code" in out
