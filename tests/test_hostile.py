"""Nothing a user writes breaks the report: brackets, rich markup, ANSI and OSC-8 escape codes
in a kernel's message, a reference's, a config value, a kernel's prints or the spec's path are
shown literally, the JSON is strict and valid against the schema, and the exit status is the
JSON's."""
import json
import math
import pathlib
import sys

import pytest
from conftest import report_json, run_cli

SCHEMA = json.loads((pathlib.Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text())
HOSTILE = "[/] \\[reverse]rev [bold red]x[/] [link=http://evil.example]cfg[/link] \x1b[31mRED\x1b[0m \x1b]8;;http://e.example\x1b\\lnk\x1b]8;;\x1b\\"

SPEC = '''
import math
import torch
import kladder as kl

HOSTILE = {hostile!r}


def kernel(x, MODE=None):
    n = x.shape[-1]
    print("kernel says", HOSTILE)
    if n == 2:
        raise RuntimeError("expected shape " + HOSTILE + " got nothing")
    if n == 3:
        raise MemoryError("[oom] " + HOSTILE)
    y = 2 * x
    if n == 4:
        y[..., -1] = float("nan")
    return y


def reference(x, MODE=None):
    if x.shape[-1] == 5:
        raise ValueError("reference " + HOSTILE)
    return 2 * x


spec = kl.Spec("hostile", kernel=kernel, reference=reference,
               args={{"x": kl.Tensor("N", dtype="float32")}}, returns=kl.Tensor("N", like="x"),
               dims={{"N": kl.Dim(1, 6, widths=[2, 3, 4, 5])}}, configs=[{{"MODE": HOSTILE}}])
'''


@pytest.fixture(scope="module")
def climbed(tmp_path_factory):
    d = tmp_path_factory.mktemp("h") / "d["
    d.mkdir()
    path = d / "]x.py"
    path.write_text(SPEC.format(hostile=HOSTILE))
    out, log = d.parent / "r.json", d.parent / "l.jsonl"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", str(path), "--device", "cpu", "--rungs", "1",
                        "--json", str(out), "--log", str(log), "--color", "never"],
                       capture_output=True, text=True, timeout=600)
    return p, path, out, log


def test_the_report_prints_every_hostile_string_literally(climbed):
    p, path, _, _ = climbed
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    out = p.stdout
    assert "\x1b" not in out and "\x07" not in out                 # no escape code reaches the terminal
    shown = HOSTILE.replace("\x1b", "\\x1b")
    assert f"expected shape {shown} got nothing" in out            # a kernel's message, as written
    assert f"reference {shown}" in out                             # a reference's (a broken point)
    assert f"MODE={shown}" in out                                  # a config value in a point's why
    assert f"kernel says {shown}" in out                           # the kernel's prints, kept per point
    assert str(path) in out                                        # the spec's path with its brackets


def test_the_json_is_strict_and_matches_the_schema(climbed):
    p, _, out, log = climbed
    text = out.read_text()
    assert "NaN" not in text.replace('"NaN"', "") and "Infinity" not in text.replace('"Infinity"', "").replace('"-Infinity"', "")
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    report_json(out)                                               # the schema (one validator: conftest)
    assert doc["exit_code"] == p.returncode == 1
    messages = [f["message"] for r in doc["rungs"] for pt in r["points"] for f in pt["findings"]]
    assert any(HOSTILE in m for m in messages)                     # the JSON keeps the string exactly
    nan = [pt for r in doc["rungs"] for pt in r["points"] if pt["failure"] == "values"]
    assert nan and all(pt["findings"][0]["kernel"] == "NaN" for pt in nan)
    records = report_json(log)                                     # each record against the schema
    assert records[0]["record"] == "header" and records[-1]["record"] == "end"
    assert records[-1]["exit_code"] == 1 and records[-1]["points"] == len(records) - 2


def test_strict_writes_non_finite_floats_as_strings():
    from kladder.report.jsonout import dumps
    assert json.loads(dumps({"a": [math.nan, math.inf, -math.inf, 1.5]})) == {"a": ["NaN", "Infinity", "-Infinity", 1.5]}


def test_the_schema_knows_every_status():
    from kladder.core.outcome import Status
    assert set(SCHEMA["$defs"]["status"]["enum"]) == {str(s) for s in Status}


def test_escapes_are_shown_not_obeyed():
    from kladder.report.terminal import literal
    assert literal("a\x1b[31mb") == "a\\x1b[31mb" and literal("x\ty\nz") == "x\ty\nz" and literal("\x9b") == "\\x9b"
    assert literal("\r") == "\\r"
