"""The CLI from outside: exit codes, usage errors, JSON, repro."""
import os
import subprocess
import sys
import time

import pytest
from conftest import report_json, run_cli

HERE = os.path.dirname(__file__)
FAULTY = os.path.join(HERE, "specs", "faulty.py")
GOOD = os.path.join(HERE, "specs", "good.py")
OVERRUN = os.path.join(HERE, "specs", "overrun.py")


def kladder(*args, timeout=300):
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=HERE)


def test_help_answers_at_once():
    t0 = time.perf_counter()
    p = kladder("--help")
    assert p.returncode == 0 and "climb" in p.stdout
    assert time.perf_counter() - t0 < 5          # no torch import for --help
    assert "torch" not in subprocess.run([sys.executable, "-c", "import kladder.tools.cli, sys; print(sorted(sys.modules))"],
                                         capture_output=True, text=True).stdout


@pytest.mark.parametrize("args,words", [
    (["climb", "nope.py"], "does not exist"),
    (["climb", FAULTY + "::other"], "no spec named 'other'"),
    (["climb", FAULTY, "--rungs", "9"], "rung 9 does not exist"),
    (["climb", FAULTY, "--rungs", "x"], "give rung numbers"),
    (["climb", FAULTY, "--device", "tpu"], "use auto, cpu or cuda"),
    (["zoo", "climb", "no_such_case"], "no zoo case"),
    (["repro", FAULTY, "{bad", "--device", "cpu"], "POINT"),
])
def test_usage_errors_exit_2_with_the_fix(args, words):
    p = kladder(*args)
    assert p.returncode == 2, p.stderr + p.stdout
    assert words in p.stderr


def test_clean_spec_exits_0_and_writes_json(good_climb):
    # the whole default ladder of good.py (conftest's good_climb, shared with test_modes)
    p, doc, log = good_climb
    assert p.returncode == 0, p.stdout + p.stderr
    report_json(log)
    pts = doc["rungs"][0]["points"]
    assert sum(pt["status"] == "passed" for pt in pts) > 10
    assert all(pt["status"] == "passed" or (pt["status"] == "skipped" and "GPU point" in pt["reason"]) for pt in pts)
    assert all({"id", "rung", "status", "why", "pattern", "repro"} <= set(pt) for pt in pts)
    assert "0 failed" in p.stdout


def test_failing_spec_exits_1_and_its_repro_reproduces(tmp_path):
    out = tmp_path / "r.json"
    # rung 1 alone: every assertion below is of rung 1's points. overrun.py is faulty.py's write
    # past the end alone: faulty.py's hang, crash and out-of-memory sizes (their own tests:
    # test_isolation.py) cost a timeout and worker restarts here and showed nothing asserted here
    p = kladder("climb", OVERRUN, "--rungs", "1", "--device", "cpu", "--json", str(out),
                "--log", str(tmp_path / "l.jsonl"))
    assert p.returncode == 1
    doc = report_json(out)
    guard = next(pt for pt in doc["rungs"][0]["points"] if pt["failure"] == "guard")
    assert guard["pattern"] == "a write past the end"
    cmd = guard["repro"].split(" ", 1)[1]            # drop the leading 'kladder'
    import shlex
    r = kladder(*shlex.split(cmd))
    assert r.returncode == 1 and "guard bytes after the end of `out`" in r.stdout


def test_a_reader_that_leaves_early_is_no_traceback():
    p = subprocess.run(f"{sys.executable} -m kladder.tools.cli zoo list | head -1", shell=True, capture_output=True, text=True,
                       timeout=120, cwd=HERE)
    assert p.stdout.count("\n") == 1 and "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr


def _on_a_terminal(args):
    """The climb's stdout on a pseudo-terminal, read to its end: (exit status, what it showed)."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, cwd=HERE)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:                       # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=300)
    os.close(master)
    return p.returncode, b"".join(chunks).decode(errors="replace")


def test_progress_shows_on_a_terminal_and_nowhere_else(tmp_path, good_climb):
    trivial = os.path.join(HERE, "specs", "trivial.py")
    args = [sys.executable, "-m", "kladder.tools.cli", "climb", trivial, "--rungs", "1", "--device", "cpu",
            "--log", str(tmp_path / "l.jsonl")]
    code, seen = _on_a_terminal(args)
    assert code == 0 and "rung 1 shapes: 3 points, 3 passed, 0 failed" in seen, seen[-2000:]
    # --quiet on the terminal itself (the report is printed; no progress line)
    code, quiet = _on_a_terminal(args + ["--quiet"])
    assert code == 0 and "0 failed" in quiet and "rung 1 shapes: 3 points" not in quiet and "eta" not in quiet, quiet
    # piped: good.py's whole climb (conftest's good_climb, its stdout captured), 65 rung-1 points
    piped, _, _ = good_climb
    assert piped.returncode == 0 and "0 failed" in piped.stdout
    assert "rung 1 shapes: " not in piped.stdout and "eta" not in piped.stdout


def test_devices_map_to_the_visible_cuda_devices(monkeypatch):
    import argparse

    import torch

    from kladder.climbing import session
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5,7")
    args = argparse.Namespace(devices=None)
    assert session.gpus(args, "cuda") == ["2", "5", "7"] and session.gpus(args, "cpu") is None
    args.devices = "0,2"
    assert session.gpus(args, "cuda") == ["2", "7"]              # indices into what this process sees
    for bad in ("3", "x", ","):
        args.devices = bad
        with pytest.raises(session.UsageProblem, match="--devices"):
            session.gpus(args, "cuda")
    assert session.default_jobs("cuda", 2) >= 1 and session.default_jobs("cpu") >= 1


@pytest.mark.parametrize("device", ["cpu", "auto"])
def test_repro_on_the_cpu_loads_the_spec_here_and_starts_no_worker_afresh(device, monkeypatch):
    # on the CPU this process imports torch and the spec and forks the point's workers from itself
    # (run/forked.py): no worker is started afresh (a worker's start was most of a small repro's
    # time). The point reads as a point (a text that does not is refused before any import: the
    # next test) and names another spec, which only the loaded spec can tell: refused after it
    from kladder.tools import cli
    from kladder.gen import load
    from kladder.run import pool, workers
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)       # the CPU repro hides CUDA from itself
    seen = []
    monkeypatch.setattr(pool.Pool, "warm", lambda self, n=1: seen.append("worker"))
    monkeypatch.setattr(workers.Worker, "__init__", lambda self, *a, **k: seen.append("worker"))
    real = load.load_spec
    monkeypatch.setattr(load, "load_spec", lambda ref: (seen.append("spec"), real(ref))[1])
    other = '{"spec":"other","rung":1,"dims":[["N",2]]}'
    assert cli.main(["repro", os.path.join(HERE, "specs", "trivial.py"), other, "--device", device]) == 2
    assert seen == ["spec"]


@pytest.mark.parametrize("args", [
    ["climb", "nope.py"], ["climb", FAULTY, "--rungs", "9"], ["climb", FAULTY, "--rungs", "x"],
    ["climb", FAULTY, "--shard", "4/3"], ["climb", FAULTY, "--device", "tpu"], ["points", "nope.py"],
    ["points", FAULTY, "--rungs", "9"], ["repro", FAULTY, "{bad"], ["repro", FAULTY, "{bad", "--device", "cpu"],
    ["repro", "nope.py", "{}"], ["explore", "nope.py", "--device", "cpu"], ["bisect", "a", "b", "nope.py", "--rungs", "9"],
])
def test_a_usage_error_needs_no_torch_and_no_worker(args, monkeypatch, capsys):
    # what needs neither (the spec's file, --rungs, --shard, --device's word, the point's text)
    # is checked before either: such an error is a fraction of a second, not torch's import
    # and a worker's start (~4 CPU s each, many tests of the suite)
    from kladder.tools import cli
    from kladder.run import pool

    def no(*a, **k):
        raise AssertionError("a worker started for a usage error")
    monkeypatch.setattr(pool.Pool, "warm", no)
    import builtins
    import signal
    sigint = signal.getsignal(signal.SIGINT)          # a climb's report ends with SIGINT ignored: put it back
    real = builtins.__import__

    def guarded(name, *a, **k):
        if name == "torch" or name.startswith("torch."):
            raise AssertionError(f"torch imported for a usage error: {args}")
        return real(name, *a, **k)
    builtins.__import__ = guarded
    try:
        assert cli.main(args) == 2
    finally:
        builtins.__import__ = real
        signal.signal(signal.SIGINT, sigint)
    assert "kladder: error:" in capsys.readouterr().err


def test_on_cuda_the_fork_server_starts_before_the_device_is_resolved_and_is_closed_when_it_cannot_be(monkeypatch):
    # --device cuda: the server's import of torch overlaps this process's (climbing/session.early_server);
    # on this CPU machine the device cannot be resolved (exit 2), and the server started for it is closed
    from kladder.climbing import session
    from kladder.run import forkclient
    from kladder.tools import cli
    seen = []

    class _Server:
        def __init__(self, env, label=""):
            seen.append("server")

        def close(self):
            seen.append("closed")
    monkeypatch.setattr(forkclient, "Server", _Server)
    real = session.resolve_device
    monkeypatch.setattr(session, "resolve_device", lambda d: seen.append("resolve") or real(d))
    monkeypatch.delenv("KLADDER_FORKSERVER", raising=False)
    import signal
    sigint = signal.getsignal(signal.SIGINT)          # a climb's report ends with SIGINT ignored: put it back
    try:
        assert cli.main(["climb", FAULTY, "--device", "cuda", "--no-history"]) == 2
    finally:
        signal.signal(signal.SIGINT, sigint)
    assert seen == ["server", "resolve", "closed"]
