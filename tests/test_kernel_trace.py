"""The kernel's own words (issue 33, item 1): a kernel's exception carries its traceback, folded
to the user's frames, into the facts (typed, through a worker's JSON), the terminal, the JSON
report and the HTML; a launcher whose signature does not match says where it is defined; a
Triton compile error names the @jit function's line."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import _validator

HERE = os.path.dirname(os.path.abspath(__file__))
RAISING = os.path.join(HERE, "specs", "raising.py")


def _run(name: str, dims=(("M", 3), ("N", 5))):
    from kladder.gen.load import load_spec
    from kladder.core.point import Point
    from kladder.run.trial import run_point
    spec = load_spec(f"{RAISING}::{name}")
    point = Point.parse(json.dumps({"spec": name, "rung": 1, "dims": [list(d) for d in dims],
                                    "dtypes": [["x", "float32"]], "seed": 1}))
    return run_point(spec, point, "cpu").outcome


def _line_of(text: str) -> int:
    with open(RAISING) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def test_a_launcher_whose_signature_does_not_match_is_refused_at_load_saying_where_it_is_defined():
    import kladder as kl
    sys.path.insert(0, os.path.dirname(RAISING))
    try:
        import raising
    finally:
        sys.path.remove(os.path.dirname(RAISING))
    with pytest.raises(kl.SpecError) as e:
        raising.signature()
    text = str(e.value)
    assert f"specs/raising.py:{_line_of('def scale(x, w):')}" in text and "kladder calls kernel(x, w, eps)" in text
    assert "too many positional arguments" in text


def test_a_call_that_never_entered_the_launcher_says_where_it_is_defined_and_what_was_passed():
    """The trace's fallback for a launcher whose signature kladder could not bind at load."""
    from kladder.run.frames import trace_of
    sys.path.insert(0, os.path.dirname(RAISING))
    try:
        import raising
    finally:
        sys.path.remove(os.path.dirname(RAISING))
    try:
        raising.scale(1, 2, 3)
    except TypeError as e:
        t = trace_of(e, raising.scale, ["x", "w", "eps"], [])
    assert t["entered"] is False and t["called"] == ["x", "w", "eps"]
    assert t["launcher"]["file"].endswith("specs/raising.py") and t["launcher"]["line"] == _line_of("def scale(x, w):")
    assert not [f for f in t["frames"] if f["function"] == "scale"]       # the call never reached its body


def test_a_launchers_own_frames_are_kept_and_kladders_dispatch_mode_does_not_make_torchs_frame_the_raising_one():
    t = _run("in_torch").headline.facts.trace
    got = [(os.path.basename(fr.file), fr.line, fr.function, fr.kind) for fr in t.frames]
    assert got == [("raising.py", _line_of("return _helper(x, w)"), "matmul_scale", "user"),
                   ("raising.py", _line_of("return x @ w.unsqueeze(0)"), "_helper", "user")]
    assert t.entered is True and t.launcher is None and t.folded_kladder >= 2
    assert t.frames[-1].code.startswith("return x @ w.unsqueeze(0)")


def test_a_triton_body_that_raises_under_the_interpreter_names_its_line_and_the_raising_frame():
    o = _run("in_body")
    # an InterpreterError is Triton's interpreter's (not judged on the CPU, run/interpreter.py), but
    # the note carries the kernel's traceback all the same: the launch, the @jit body's line, the raise
    assert o.status == "skipped" and o.note.kind == "interpreter_error"
    frames = o.note.facts.trace.frames
    mine = [(fr.function, fr.line) for fr in frames if fr.kind == "user"]
    assert mine == [("body", _line_of("_bad_body[(1,)](x, y")), ("_bad_body", _line_of("y = x + tl.arange(0, 3)"))]
    assert frames[-1].kind == "library" and frames[-1].file.startswith("triton") and frames[-1].function == "arange"
    assert o.note.facts.trace.folded_library >= 1                    # the interpreter's grid loop, JITFunction.run


def test_the_trace_survives_a_workers_json_and_reaches_the_terminal_the_json_and_the_html():
    from kladder.core.fingerprint import fingerprint
    from kladder.core.outcome import Outcome
    from kladder.core.results import ClimbReport, RungReport
    from kladder.report.html import report_html
    from kladder.report.jsonout import report_dict, strict
    from kladder.report.terminal import render_outcome, render_text
    o = Outcome.from_dict(json.loads(json.dumps(_run("in_torch").to_dict())))       # as a worker sends it
    line = _line_of("return x @ w.unsqueeze(0)")
    assert o.headline.facts.trace.frames[-1].line == line
    where = f"raising.py:{line}"
    text = render_outcome(o)
    assert where in text and "return x @ w.unsqueeze(0)" in text
    report = ClimbReport("in_torch", RAISING, "cpu", fingerprint=fingerprint(RAISING, "cpu"), kladder_version="0.1.0",
                         started="2026-12-06T00:00:00")
    report.rungs.append(RungReport(1, "shapes", [o]))
    assert where in render_text(report)
    doc = json.loads(json.dumps(strict(report_dict(report))))
    assert _validator().is_valid(doc)                                # the typed field and the words, in the schema
    finding = doc["rungs"][0]["points"][0]["findings"][0]
    assert finding["facts"]["trace"]["frames"][-1]["line"] == line
    assert any(where in ln for ln in finding["trace"])
    html = report_html(doc)
    assert '<pre class="trace">' in html and where in html and "return x @ w.unsqueeze(0)" in html


def test_a_finding_without_a_traceback_writes_none_and_renders_nothing():
    from kladder.core.facts import RaisedFacts
    from kladder.core.outcome import Check, Finding
    from kladder.report import words
    from kladder.report.jsonout import finding_dict
    f = Finding(Check.RAISED, facts=RaisedFacts(error="ValueError", text="x"))
    assert finding_dict(f)["trace"] is None and words.trace_lines(None) == [] and "trace" not in f.facts.to_dict()


COMPILE = '''
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget


@triton.jit
def _inner(x):
    return x + undefined_name


@triton.jit
def _outer(x_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < N)
    y = _inner(x)
    tl.store(x_ptr + cols, y, mask=cols < N)


def launch():
    src = triton.compiler.ASTSource(fn=_outer, signature={"x_ptr": "*fp32", "N": "i32", "BLOCK": "constexpr"},
                                    constexprs={"BLOCK": 16})
    triton.compile(src, target=GPUTarget("cuda", 90, 32))
'''


def test_a_triton_compile_error_names_the_jit_functions_lines_call_site_first(tmp_path):
    # Triton's frontend compiles on a machine without a GPU (the error comes before any device
    # step); not under the interpreter, so in a process of its own without TRITON_INTERPRET
    (tmp_path / "kern.py").write_text(COMPILE)
    script = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, sys.argv[1])
        import kern
        from kladder.run.frames import trace_of
        try:
            kern.launch()
        except Exception as e:
            print(json.dumps(trace_of(e, kern.launch)))
    """)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "..", "src"), env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    if "CompilationError" not in p.stderr and not p.stdout.strip():
        pytest.skip(f"Triton's frontend did not run here: {p.stderr[-500:]}")
    t = json.loads(p.stdout)
    lines = COMPILE.splitlines()
    jit = [(fr["function"], fr["line"], fr["code"]) for fr in t["frames"] if fr["kind"] == "jit"]
    assert jit == [("_outer", lines.index("    y = _inner(x)") + 1, "y = _inner(x)"),
                   ("_inner", lines.index("    return x + undefined_name") + 1, "return x + undefined_name")]
    launch = [fr for fr in t["frames"] if fr["kind"] == "user"]
    assert [(fr["function"], fr["file"]) for fr in launch][-1:] == [("launch", "kern.py")]   # after -c's <module>
