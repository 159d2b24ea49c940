"""climbing/session.py: the command line's climb options parsed and refused (each a usage error
naming the option, what was given and the fix), devices and jobs chosen, log paths, with no
worker started (the refusals come before the pool)."""
import argparse
import os

import pytest
import torch

from kladder.climbing import session
from kladder.climbing.session import (
    EARLY_FROM,
    Options,
    climb_options,
    default_jobs,
    default_log_path,
    gpus,
    history_of,
    parse_rungs,
    resolve_device,
    writable,
)
from kladder.core.errors import UsageError, UsageProblem
from kladder.core.rungs import BUILT, number


# ---------------------------------------------------------------------------- --rungs
@pytest.mark.parametrize("text,rungs", [
    (None, BUILT), ("", BUILT), ("1", (1,)), ("3,1,1", (1, 3)), ("1-3", (1, 2, 3)), (" 2 , r4-R5 ", (2, 4, 5)),
    ("8", (8,)), ("1-8", BUILT), ("2-2", (2,)),
])
def test_rungs_parsed_sorted_and_once(text, rungs):
    assert parse_rungs(text) == rungs


@pytest.mark.parametrize("text,words", [
    ("x", "--rungs 'x': give rung numbers such as 1, 1,2 or 1-3."),
    ("1,", "--rungs '1,': give rung numbers"),
    ("0", "--rungs '0': rung 0 does not exist; the ladder has rungs 1-8."),
    ("7-9", "rung 9 does not exist"),
    # a range that counts down named no rung: a climb of nothing (climb_options' max(()) a traceback)
    ("3-1", "--rungs '3-1': 3-1 counts down; give the lower rung first, e.g. 1-3."),
    ("2,5-4", "--rungs '2,5-4': 5-4 counts down"),
])
def test_bad_rungs_are_a_usage_error_naming_what_was_given(text, words):
    with pytest.raises(UsageError) as e:
        parse_rungs(text)
    assert words in str(e.value)


def test_early_from_is_the_modes_rung():
    assert EARLY_FROM == number("modes") == 4


# ---------------------------------------------------------------------------- devices and jobs
def test_resolve_device(monkeypatch):
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(UsageError, match=r"--device 'gpu': use auto, cpu or cuda\."):
        resolve_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    with pytest.raises(UsageError, match="--device cuda: torch sees no CUDA device here; use --device cpu"):
        resolve_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda") == "cuda"


def test_device_of_is_a_usage_problem_and_cpu_chooses_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert session.device_of("cpu") == "cpu" and os.environ["TRITON_INTERPRET"] == "1"
    with pytest.raises(UsageProblem, match="--device 'tpu'"):
        session.device_of("tpu")


@pytest.mark.parametrize("cores,device,gpus_,jobs", [
    (16, "cpu", 1, 16), (1, "cpu", 1, 1), (16, "cuda", 1, 4), (16, "cuda", 4, 8), (2, "cuda", 1, 1), (1, "cuda", 2, 1),
])
def test_default_jobs(monkeypatch, cores, device, gpus_, jobs):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert default_jobs(device, gpus_) == jobs


@pytest.fixture
def four_gpus(monkeypatch):
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_gpus_are_the_visible_devices_chosen_by_index(four_gpus, monkeypatch):
    assert gpus(argparse.Namespace(devices=None), "cpu") is None
    assert gpus(argparse.Namespace(devices=None), "cuda") == ["0", "1", "2", "3"]
    assert gpus(argparse.Namespace(devices="2, 0"), "cuda") == ["2", "0"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    assert gpus(argparse.Namespace(devices="1"), "cuda") == ["7"]          # an index into what is visible


@pytest.mark.parametrize("devices", ["4", "a", ",", "-1", "0,9"])
def test_devices_out_of_range_are_refused_with_the_range(four_gpus, devices):
    with pytest.raises(UsageProblem, match=rf"--devices '{devices}': give indices of visible CUDA devices, 0 to 3"):
        gpus(argparse.Namespace(devices=devices), "cuda")


# ---------------------------------------------------------------------------- climb_options' refusals
def _args(**kw):
    base = dict(rungs=None, replay=None, shard=None, ray=None, devices=None, jobs=None, timeout=None, log=None,
                quiet=True)
    return argparse.Namespace(**{**base, **kw})


def test_climb_options_refuse_before_any_worker(tmp_path):
    with pytest.raises(UsageProblem, match="--rungs 'nine'"):
        climb_options(_args(rungs="nine"), "s.py", "cpu")
    with pytest.raises(UsageProblem, match=r"--replay '.*': no manifest.json there; record calls first"):
        climb_options(_args(replay=str(tmp_path)), "s.py", "cpu")
    with pytest.raises(UsageProblem, match=r"--shard '4/3': give I/N with 1 <= I <= N"):
        climb_options(_args(shard="4/3"), "s.py", "cpu")
    with pytest.raises(UsageProblem, match="--devices '0' with --ray: Ray gives each worker its GPU"):
        climb_options(_args(ray="auto", devices="0"), "s.py", "cuda")


# ---------------------------------------------------------------------------- outputs and logs
def test_writable_refuses_a_folder_and_makes_no_file(tmp_path):
    writable("--json", None)
    target = tmp_path / "new" / "r.json"
    writable("--json", str(target))
    assert target.parent.is_dir() and not target.exists()                 # its folder made, the file not
    with pytest.raises(UsageProblem, match=r"--json '.*': cannot write there \(it is a folder\); give a file"):
        writable("--json", str(tmp_path))
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageProblem, match=r"--log '.*': cannot write there"):
        writable("--log", str(tmp_path / "f" / "l.jsonl"))


def test_history_of(monkeypatch):
    monkeypatch.setenv("KLADDER_HISTORY", "/h/env.sqlite")
    assert history_of(argparse.Namespace(no_history=True, history="x")) is None
    assert history_of(argparse.Namespace(history="given.sqlite")) == "given.sqlite"
    assert history_of(argparse.Namespace()) == "/h/env.sqlite"


def test_the_default_log_is_named_by_spec_and_run_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_log_path("soft", "run-1") == os.path.join(".kladder", "log", "soft-run-1.jsonl")
    a, b = default_log_path("soft"), default_log_path("soft")
    assert a != b and a.startswith(os.path.join(".kladder", "log", "soft-"))
    assert session.log_path(argparse.Namespace(log=None), type("S", (), {"name": "soft"}), "r") == \
        os.path.join(".kladder", "log", "soft-r.jsonl")
    assert session.log_path(argparse.Namespace(log=str(tmp_path / "mine.jsonl")), None) == str(tmp_path / "mine.jsonl")


def test_a_read_only_working_folder_sends_the_log_to_the_temporary_folder_said_once(tmp_path, monkeypatch, capsys):
    import kladder.report.jsonout as jsonout
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(jsonout, "cannot_write", lambda folder: "Read-only file system" if ".kladder" in folder else None)
    monkeypatch.setitem(session._SAID, "log_fallback", False)
    spec = type("S", (), {"name": "soft"})
    first = session.log_path(argparse.Namespace(log=None), spec, "r1")
    session.log_path(argparse.Namespace(log=None), spec, "r2")
    assert os.path.dirname(first) == os.path.join(session.tempfile.gettempdir(), "kladder-log")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be written here (Read-only file system)" in err
    monkeypatch.setattr(jsonout, "cannot_write", lambda folder: "Read-only file system")
    with pytest.raises(UsageProblem, match="the log: cannot write '.kladder/log' .* nor .*; give --log PATH"):
        session.log_path(argparse.Namespace(log=None), spec, "r3")


def test_options_defaults():
    o = Options()
    assert (o.rungs, o.device, o.jobs, o.seed, o.shrink_s, o.exitfirst, o.first, o.budget) == \
        (BUILT, "auto", 1, 0, 0.0, False, frozenset(), "commit")


# ---------------------------------------------------------------------------- the fork server before torch
class _Server:
    def __init__(self, env, label=""):
        self.env, self.label, self.closed = env, label, False

    def close(self):
        self.closed = True


def _cuda_args(**kw):
    return argparse.Namespace(**{"device": "cuda", "rungs": None, "ray": None, **kw})


@pytest.mark.parametrize("kw,env,likely,started", [
    ({}, {}, False, True),                                            # --device cuda, every rung
    ({"device": "auto"}, {}, True, True),                             # auto on a host with an NVIDIA GPU
    ({"device": "auto"}, {}, False, False),                           # auto on a host without one
    ({"device": "cpu"}, {}, True, False),
    ({"rungs": "1-3"}, {}, True, True),                               # its workers and a failure's fresh one fork
    ({"rungs": "9"}, {}, True, False),                                # unreadable: said later, by climb_options
    ({"ray": "auto"}, {}, True, False),                               # the cluster's workers, not this host's
    ({}, {"KLADDER_FORKSERVER": "0"}, True, False),                   # every process fresh, as asked
    ({}, {"KLADDER_FORKSERVER": "/tmp/other.sock"}, True, False),     # another process's server
    ({}, {"KLADDER_FORKSERVER": "always"}, True, True),
])
def test_on_cuda_the_fork_server_starts_before_torch_is_imported(monkeypatch, kw, env, likely, started):
    import kladder.run.forkclient as forkclient
    monkeypatch.setattr(forkclient, "Server", _Server)
    monkeypatch.setattr(session, "cuda_likely", lambda: likely)
    monkeypatch.delenv("KLADDER_FORKSERVER", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    server = session.early_server(_cuda_args(**kw), "s.py::spec")
    assert (server is not None) == started
    if started:
        from kladder.run.workers import worker_env
        assert server.label == "s.py::spec" and server.env == worker_env("cuda")   # a CUDA worker's environment


def test_cuda_is_likely_only_with_an_nvidia_device_node_and_visible_gpus(monkeypatch):
    monkeypatch.setattr(session.os.path, "exists", lambda p: p == "/dev/nvidiactl")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert session.cuda_likely()
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        assert not session.cuda_likely()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(session.os.path, "exists", lambda p: False)
    assert not session.cuda_likely()


def test_climb_options_use_the_server_given_and_leave_it_to_its_owner(monkeypatch):
    server = _Server({})
    server.ready, server.address, server.proc = (lambda wait_s=0.0: False), None, None
    monkeypatch.setattr(session, "gpus", lambda args, device: ["0"])
    monkeypatch.setattr("kladder.run.pool.Pool.warm", lambda self, n=1: None)
    args = argparse.Namespace(rungs=None, replay=None, shard=None, ray=None, jobs=2, timeout=None, log=None,
                              quiet=True, no_progress=True)
    opts = climb_options(args, "s.py::spec", "cuda", server=server)
    assert opts.pool.server is server and not opts.pool._own_server
    opts.pool.close()
    assert not server.closed                                       # the CLI closes it (cli/climb.py)


@pytest.mark.parametrize("device, cores_, jobs, reserve, warmed", [
    ("cuda", 16, 4, 1, 5),          # the H100 host: one worker beyond the lanes kept started
    ("cuda", 8, 4, 0, 4),           # a GPU host without the cores for it
    ("cpu", 64, 4, 0, 1),           # the CPU: none
])
def test_a_gpu_climb_keeps_one_worker_in_reserve_where_the_host_has_the_cores(monkeypatch, device, cores_, jobs,
                                                                               reserve, warmed):
    warm = []
    monkeypatch.setattr(session, "gpus", lambda args, device: ["0"] if device == "cuda" else None)
    monkeypatch.setattr(session, "cores", lambda: cores_)
    monkeypatch.setattr("kladder.run.pool.Pool.warm", lambda self, n=1: warm.append(n))
    monkeypatch.setattr("kladder.run.pool.Pool.start_server", lambda self: None)
    opts = climb_options(_args(rungs="1-3", jobs=jobs, no_progress=True), "s.py::spec", device)
    assert opts.pool.reserve == reserve and warm == [warmed]
    opts.pool.close()
