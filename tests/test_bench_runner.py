"""bench/ as a tool (issue 25 item 6, issue 20 item 7): `python -m bench list` names every bench
under bench/, a cheap one runs on the CPU through the runner and writes strict JSON with the
environment fingerprint, and no dated shell script is left in bench/ (each lies with the results
it made, under docs/results/), every reference to a bench file naming one that exists."""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(ROOT))

from bench import run as bench_run  # noqa: E402


def _runner(*args, cwd):
    return subprocess.run([sys.executable, str(BENCH / "run.py"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_bench_list_names_every_bench_in_the_folder(tmp_path):
    p = _runner("list", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    files = {f.name for f in BENCH.glob("*.py")} - set(bench_run.NOT_BENCHES)
    assert files == {b.file for b in bench_run.BENCHES}
    listed = {line.split()[0] for line in p.stdout.splitlines() if line.strip()}
    assert listed == set(bench_run.BY_NAME)
    assert {"overhead", "throughput", "climb-speed", "memory", "false-alarms", "startup"} <= listed


def _strict(text: str):
    def refuse(c):
        raise ValueError(f"not strict JSON: {c}")
    return json.loads(text, parse_constant=refuse)


def test_a_cheap_bench_runs_on_the_cpu_and_writes_strict_json_with_the_fingerprint(tmp_path):
    out = tmp_path / "spec.json"
    p = _runner("--out", str(out), "spec-construction", "--n", "50", "--rounds", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "us per Spec" in p.stdout                             # its own table passes through
    doc = _strict(out.read_text())
    assert doc["bench"] == "spec-construction" and doc["exit"] == 0 and doc["seconds"] > 0
    assert doc["fingerprint"]["device"]["kind"] == "cpu" and doc["fingerprint"]["kladder"]
    assert doc["result"]["n"] == 50 and doc["result"]["us_per_spec"] > 0        # the bench's own JSON, read back
    assert any("us per Spec" in line for line in doc["printed"])


def test_an_unknown_bench_is_a_usage_error(tmp_path):
    p = _runner("no-such-bench", cwd=tmp_path)
    assert p.returncode == 2 and "python -m bench list" in p.stderr


def test_the_runner_gives_each_bench_a_place_for_its_result():
    by = bench_run.BY_NAME
    args, path, env = bench_run.with_result_path(by["overhead"], ["--rounds", "3"], "/t")
    assert args == ["--rounds", "3", "--json", "/t/result.json"] and path == "/t/result.json" and env == {}
    assert bench_run.with_result_path(by["overhead"], ["--json", "mine.json"], "/t")[1] == "mine.json"
    args, path, _ = bench_run.with_result_path(by["throughput"], ["2", "3"], "/t")
    assert args == ["/t/result.json", "2", "3"] and path == "/t/result.json"
    assert bench_run.with_result_path(by["throughput"], ["mine.json", "2"], "/t")[:2] == (["mine.json", "2"], "mine.json")
    assert bench_run.device_of(by["overhead"], ["--device", "cpu"]) == "cpu" and bench_run.device_of(by["overhead"], []) == "cuda"


def test_no_dated_shell_script_in_bench_and_every_bench_path_named_exists():
    assert sorted(f.name for f in BENCH.glob("*.sh")) == []
    texts = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("docs/results/**/*.sh"), *ROOT.glob("tests/**/*.py"),
             *ROOT.glob("src/**/*.py"), *BENCH.glob("*.py")]
    named = {m for t in texts for m in re.findall(r"(?<![\w/.])((?:bench|docs/results/[\w.-]+)/[a-z0-9_]+\.(?:sh|py))\b",
                                                   t.read_text(errors="replace"))}
    assert any(n.startswith("docs/results/") for n in named)
    assert sorted(n for n in named if not (ROOT / n).exists()) == []


def test_the_runner_sets_nothing_in_its_own_environment():
    before = dict(os.environ)
    env = bench_run.child_env(bench_run.BY_NAME["zoo-margins"], {"OUT": "/tmp/x"})
    assert env["TRITON_INTERPRET"] == "1" and env["OUT"] == "/tmp/x" and env["PYTHONPATH"].startswith(bench_run.SRC)
    assert dict(os.environ) == before
