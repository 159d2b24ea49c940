"""No report is ever lost: a SIGINT at any moment of a real `kladder climb` leaves a complete
report and log; report files are written whole; two climbs never share a log; a read-only
working folder falls back; a start that fails still writes its report."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import report_json

HERE = os.path.dirname(__file__)
TRIVIAL = os.path.join(HERE, "specs", "trivial.py")
SLOW = os.path.join(HERE, "specs", "slow.py")
GOOD = os.path.join(HERE, "specs", "good.py")
KLADDER = [sys.executable, "-m", "kladder.tools.cli"]


def _climb(tmp_path, tag: str, *extra, spec=TRIVIAL) -> tuple[subprocess.Popen, str, str]:
    out, log = str(tmp_path / f"{tag}.json"), str(tmp_path / f"{tag}.jsonl")
    p = subprocess.Popen([*KLADDER, "climb", spec, "--rungs", "1", "--device", "cpu", "--json", out, "--log", log,
                          *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path),
                         preexec_fn=_sigint_default)
    return p, out, log


def _sigint_default():
    """SIGINT as a terminal's foreground job gets it: a suite started in the background (`pytest &`)
    hands its children SIGINT ignored, and Python keeps an ignored SIGINT ignored until kladder's handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _has_children(pid: int) -> bool:
    """The climb's process has started a worker: kladder's own code runs (its SIGINT handler is
    installed before any worker starts)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return bool(f.read().split())
    except OSError:
        return False


def _records(log: str) -> list[str]:
    """The log's records so far (whole lines only: a reader never sees a torn one)."""
    try:
        with open(log) as f:
            text = f.read()
    except OSError:
        return []
    return [json.loads(line)["record"] for line in text.splitlines(keepends=True) if line.endswith("\n")]


# The moments a SIGINT is sent, each as (what the climb has done, seconds after): the worker
# started (the spec still loading), the log opened (no point yet), a point logged (between
# points), the last point logged (workers closing), the end record logged (the report being
# written), and later.
MOMENTS = [("worker", 0.0), ("worker", 0.5), ("header", 0.0), ("point", 0.0), ("point", 0.03), ("points", 0.0),
           ("points", 0.05), ("end", 0.0), ("end", 0.02), ("end", 0.3)]


def _reached(p: subprocess.Popen, log: str, what: str) -> bool:
    if what == "worker":
        return _has_children(p.pid)
    records = _records(log)
    return {"header": bool(records), "point": "point" in records, "points": records.count("point") == 3,
            "end": "end" in records}[what]


def _signal_at(runs: list) -> None:
    """Poll every run until its moment comes, then SIGINT it (two runs at a time)."""
    due = {}
    while True:
        now = time.monotonic()
        for i, (what, after, p, _, log) in enumerate(runs):
            if i in due and due[i] is not None and now >= due[i]:
                if p.poll() is None:
                    p.send_signal(signal.SIGINT)
                due[i] = None
            elif i not in due and (p.poll() is not None or _reached(p, log, what)):
                due[i] = now + after
        if len(due) == len(runs) and all(v is None for v in due.values()):
            break
        time.sleep(0.002)


def _complete(out: str, log: str, p: subprocess.Popen, err: str) -> dict:
    """The report and the log, both whole: strict JSON, the schema, the log's end record agreeing."""
    assert "Traceback" not in err, err[-3000:]
    assert os.path.getsize(out) > 0
    doc = report_json(out)
    assert doc["exit_code"] == p.returncode, (doc["exit_code"], p.returncode)
    if not doc["log"]:                         # interrupted before the climb opened its log: none was made
        assert not os.path.exists(log) and doc["interrupted"]
        return doc
    records = report_json(log)
    assert records[0]["record"] == "header" and records[-1]["record"] == "end", records[-1]
    assert {r["run_id"] for r in records} == {doc["run_id"]}
    if records[-1]["exit_code"] != doc["exit_code"]:    # a SIGINT after the log's end record: the report says it
        assert doc["interrupted"] and not records[-1]["interrupted"] and records[-1]["exit_code"] == 0
    assert records[-1]["points"] == sum(len(r["points"]) for r in doc["rungs"])
    # no temporary of this report left behind (its own only: the other climb run beside it may be writing its own now)
    mine = f".{os.path.basename(out)}."
    assert not [f for f in os.listdir(os.path.dirname(out)) if f.startswith(mine) and f.endswith(".tmp")]
    return doc


def test_sigint_at_any_moment_leaves_a_complete_report(tmp_path):
    seen = []
    for k in range(0, len(MOMENTS), 2):                 # two climbs at a time: the suite's budget
        runs = [(what, after, *_climb(tmp_path, f"m{k + i}", spec=SLOW)) for i, (what, after) in enumerate(MOMENTS[k:k + 2])]
        _signal_at(runs)
        for what, after, p, out, log in runs:
            _, err = p.communicate(timeout=300)
            doc = _complete(out, log, p, err)
            assert doc["interrupted"] == (doc["exit_code"] == 130) and doc["exit_code"] in (0, 130), doc["exit_code"]
            rung = doc["rungs"][0]
            if doc["interrupted"] and rung["verdict"] == "passed":     # the SIGINT came after the rung's last point
                assert rung["counts"]["passed"] == 3
            elif doc["interrupted"]:
                assert rung["verdict"] in ("interrupted", "not climbed"), rung
            seen.append((what, after, doc["exit_code"], len(rung["points"])))
    print(seen)
    interrupted = [n for *_, code, n in seen if code == 130]
    assert 0 in interrupted and any(0 < n < 3 for n in interrupted), seen      # before the points, between them


def test_sigint_before_the_climb_starts_leaves_no_partial_file(tmp_path):
    """At once: while Python itself starts and imports kladder (no handler of kladder's yet: the
    process ends as any Python does on SIGINT, and no file is made, not even an empty one), or
    once kladder runs (a complete report marked interrupted)."""
    for delay in (0.0, 0.05, 0.15):
        p, out, log = _climb(tmp_path, f"early-{delay}")
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=300)
        if os.path.exists(out):
            doc = _complete(out, log, p, err)
            assert doc["interrupted"] and doc["exit_code"] == 130
        else:
            assert p.returncode != 0 and not os.path.exists(log) and os.listdir(tmp_path) == [], os.listdir(tmp_path)


def test_an_interrupted_climb_keeps_its_lowest_failing_rung():
    from kladder.core.outcome import Finding, Outcome, Status, Check
    from kladder.core.point import Point
    from kladder.core.results import ClimbReport, RungReport
    rr = RungReport(1, "shapes", interrupted=True)
    rr.outcomes.append(Outcome(Point("s", 1, (("N", 1),)), Status.FAILED, findings=[Finding(Check.VALUES, "out")]))
    report = ClimbReport("s", "s.py", "cpu", rungs=[rr, RungReport(2, "values", climbed=False)], interrupted=True)
    assert rr.verdict == "interrupted" and report.lowest_failing_rung == 1 and report.exit_code == 130


def test_two_climbs_in_one_second_write_two_logs(tmp_path):
    runs = [subprocess.Popen([*KLADDER, "climb", TRIVIAL, "--rungs", "1", "--device", "cpu", "-q"], cwd=str(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in runs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    logs = sorted(os.listdir(tmp_path / ".kladder" / "log"))
    assert len(logs) == 2, logs
    ids = set()
    for name in logs:
        records = report_json(tmp_path / ".kladder" / "log" / name)
        assert len({r["run_id"] for r in records}) == 1 and records[0]["run_id"] in name
        ids.add(records[0]["run_id"])
    assert len(ids) == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_working_folder_falls_back_to_a_temporary_one(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        p = subprocess.run([*KLADDER, "climb", TRIVIAL, "--rungs", "1", "--device", "cpu", "-q"], cwd=str(folder),
                           capture_output=True, text=True, timeout=300)
    finally:
        folder.chmod(0o755)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("cannot be written here") == 1 and "the log goes to" in p.stderr
    logged = [line for line in p.stdout.splitlines() if "outcomes logged to" in line]
    assert logged and os.path.exists(logged[0].split("outcomes logged to ", 1)[1].strip())


def test_the_fallback_is_taken_where_the_log_folder_cannot_be_made(tmp_path, monkeypatch, capsys):
    """As root (the suite's machine) a chmod does not stop writes: a file where the folder
    should be does."""
    import argparse

    from kladder.climbing import session
    from kladder.climbing.session import LOG_FOLDER
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".kladder").write_text("a file, not a folder")
    monkeypatch.setitem(session._SAID, "log_fallback", False)
    spec = argparse.Namespace(name="double")
    paths = [session.log_path(argparse.Namespace(log=None), spec, f"run{i}") for i in range(2)]
    assert all(not p.startswith(LOG_FOLDER) and p.endswith(f"double-run{i}.jsonl") for i, p in enumerate(paths))
    assert capsys.readouterr().err.count("cannot be written here") == 1          # said once


def test_an_unwritable_json_is_a_usage_error_and_no_file_is_made(tmp_path):
    (tmp_path / "a-file").write_text("")
    p = subprocess.run([*KLADDER, "climb", TRIVIAL, "--device", "cpu", "--json", str(tmp_path / "a-file" / "r.json")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--json" in p.stderr and "cannot write there" in p.stderr


def test_a_climb_that_cannot_start_writes_a_report_that_says_so(tmp_path):
    out = tmp_path / "r.json"
    out.write_text('{"stale": "a report of an earlier climb"}')
    p = subprocess.run([*KLADDER, "climb", TRIVIAL, "--device", "cpu", "--rungs", "9", "--json", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "rung 9 does not exist" in p.stderr
    doc = report_json(out)
    assert doc["exit_code"] == 2 and doc["start_error"]["kind"] == "usage" and "rung 9" in doc["start_error"]["message"]
    assert all(not r["climbed"] for r in doc["rungs"])


def test_a_report_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    from kladder.report import jsonout
    path = tmp_path / "r.json"
    path.write_text("old")
    real = os.replace

    def crash(*a):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        jsonout.write_atomic(str(path), "new" * 1000)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["r.json"]
    monkeypatch.undo()
    assert os.replace is real
    jsonout.write_atomic(str(path), "new")
    assert path.read_text() == "new" and os.listdir(tmp_path) == ["r.json"]


def test_a_device_that_refuses_is_retried_then_named(monkeypatch):
    from kladder.run import devicestart
    calls = []

    def refuse():
        calls.append(time.monotonic())
        raise RuntimeError("CUDA error: out of memory")
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {
        "free_bytes": 1 << 30, "total_bytes": 140 << 30,
        "holders": [{"pid": 41, "name": "python", "used_bytes": 100 << 30}]})
    with pytest.raises(devicestart.DeviceStartError) as e:
        devicestart.retrying("torch.cuda.mem_get_info()", refuse, gpu="0", budget_s=0.5, step_s=0.1)
    assert 3 <= len(calls) <= 6                               # tried again, for a bounded time
    from kladder.report.words import device_start_error
    facts = device_start_error(e.value.facts)
    assert facts.kind == "device" and facts.free_bytes == 1 << 30 and facts.holders[0].pid == 41
    assert ("torch.cuda.mem_get_info() on GPU 0 failed" in facts.message and "1.00 GiB free of 140.00 GiB" in
            facts.message and "pid 41 python (100.00 GiB)" in facts.message), facts.message
    assert list(facts.to_dict()) == [*e.value.facts, "message"]          # the JSON as the facts and their line
    ok = iter([RuntimeError("busy"), 7])

    def once_busy():
        v = next(ok)
        if isinstance(v, Exception):
            raise v
        return v
    assert devicestart.retrying("x", once_busy, budget_s=2, step_s=0.05) == 7


def test_a_worker_refused_by_the_device_ends_the_climb_with_a_report(tmp_path, monkeypatch):
    """The worker's hello says the device refused its context (another process holds the
    memory): the pool starts new workers for the retry budget, then the climb ends with
    start_error, the log closed, exit 2; no point is blamed."""
    from kladder.run import devicestart
    from kladder.run.devicestart import DeviceStartError
    from kladder.climbing.ladder import Options, climb
    from kladder.gen.load import load_spec
    from kladder.run import workers
    starts = []

    def refused(self):                         # as Worker.ready does on a hello with device_error
        starts.append(self)
        self.kill()
        raise DeviceStartError("starting a worker's CUDA context", "AcceleratorError: CUDA error: out of memory", "0")
    monkeypatch.setattr(workers.Worker, "ready", refused)
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_S", 0.6)
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_STEP_S", 0.1)
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {"free_bytes": None, "total_bytes": None,
                                                                       "holders": None})
    log = tmp_path / "l.jsonl"
    report = climb(TRIVIAL, load_spec(TRIVIAL), Options(rungs=(1,), device="cpu", log_path=str(log)))
    assert report.exit_code == 2 and report.start_error.kind == "device" and len(starts) >= 3
    assert "CUDA error: out of memory" in report.start_error.message
    assert not report.failures and not report.outcomes
    records = report_json(log)
    assert records[-1]["record"] == "end" and records[-1]["exit_code"] == 2 and records[-1]["start_error"]


# ---------------------------------------------------------------------------- kladder's own inputs
def test_two_specs_with_one_name_in_a_module_are_a_spec_error(tmp_path):
    from kladder.gen.load import load_spec
    from kladder.core.spec import SpecError
    f = tmp_path / "twins.py"
    f.write_text('''import kladder as kl
def ref(x):
    return 2 * x
args, dims = {"x": kl.Tensor("N", dtype="float32")}, {"N": kl.Dim(1, 8)}
v1 = kl.Spec("double", kernel=ref, reference=ref, args=args, returns=kl.Tensor("N", like="x"), dims=dims)
v2 = kl.Spec("double", kernel=lambda x: x + x, reference=ref, args=args, returns=kl.Tensor("N", like="x"), dims=dims)
same = v1
''')
    with pytest.raises(SpecError, match="specs 'v1' and 'v2' share one name.*'double'.*give each spec its own name"):
        load_spec(f"{f}::v1")
    f.write_text(f.read_text().replace('v2 = kl.Spec("double"', 'v2 = kl.Spec("double2"'))
    assert load_spec(f"{f}::same").name == "double"                  # one object under two names is one spec
    assert load_spec("kladder.zoo.gemm_k_tail::fixed").name == "gemm"  # the zoo's twins share their case's name


@pytest.mark.parametrize("point,words", [
    ('{"spec":"double","rung":1,"dims":[]}', "POINT dims: 'N' is missing"),
    ('{"spec":"double","rung":1,"dims":[["N","5"]]}', "POINT dims: 'N' is '5', a str; give an integer from 1 to 3"),
    ('{"spec":"double","rung":1,"dims":[["N",9]]}', "outside the spec's range 1..3"),
    ('{"spec":"double","rung":1,"dims":[["N",2],["M",2]]}', "POINT dims: 'M' is not a dim of spec 'double'"),
    ('{"spec":"double","rung":1,"dims":[["N",2]],"dtypes":[["x","float16"]]}',
     "POINT dtypes: 'x' is 'float16', which the spec does not declare for it; give one of float32"),
    ('{"spec":"double","rung":1,"dims":[["N",2]],"dtypes":[["y","float32"]]}', "'y' is not a tensor of spec"),
    ('{"spec":"double","rung":1,"dims":[["N",2]],"config":[["BLOCK",4]]}', "POINT config: 'BLOCK' is not a config key"),
    ('{"spec":"double","rung":1,"dims":5}', "dims is 5; give a list of [name, value] pairs"),
    ('{"spec":"double","rung":"1","dims":[["N",2]]}', "rung is '1', a str; give an integer"),
])
def test_repro_refuses_a_point_that_does_not_fit_its_spec(point, words):
    p = subprocess.run([*KLADDER, "repro", TRIVIAL, point, "--device", "cpu"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert words in p.stderr, p.stderr


def test_every_point_a_climb_makes_fits_its_spec():
    """The check refuses only what is wrong: every point the rungs generate for these specs passes it."""
    from kladder.climbing.ladder import rung_points
    from kladder.core.rungs import BUILT
    from kladder.gen.load import load_spec
    from kladder.climbing.pointcheck import check_point
    from kladder.core.sizes import budget_for
    refs = [GOOD, TRIVIAL, "kladder.zoo.gemm_k_tail::spec", "kladder.zoo.decode_group16::spec",
            "kladder.zoo.rows_int32_offset::spec", "kladder.zoo.allreduce_size_stride::spec"]
    n = 0
    for ref in refs:
        spec = load_spec(ref)
        for device in ("cpu", "cuda"):
            for rung in BUILT:
                for point in rung_points(spec, rung, budget_for(device)):
                    check_point(spec, point)
                    n += 1
    assert n > 100


def test_a_cuda_call_of_the_climbing_process_that_fails_is_retried_then_exit_2_with_a_report(tmp_path, monkeypatch,
                                                                                                capsys):
    """The parent's own CUDA calls (here torch.cuda.device_count, as a driver refusing a busy
    device raises): tried again for the retry budget, then one line and a report that says so."""
    import torch

    from kladder.tools import cli
    from kladder.run import devicestart
    from kladder.climbing import session
    calls = []

    def busy():
        calls.append(1)
        raise RuntimeError("CUDA error: out of memory")
    monkeypatch.setattr(session, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(torch.cuda, "device_count", busy)
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_S", 0.5)
    monkeypatch.setattr(devicestart, "DEVICE_RETRY_STEP_S", 0.1)
    monkeypatch.setattr(devicestart, "device_state", lambda gpu=None: {"free_bytes": 3 << 30, "total_bytes": 140 << 30,
                                                                       "holders": []})
    out = tmp_path / "r.json"
    previous = signal.getsignal(signal.SIGINT)
    try:
        code = cli.main(["climb", TRIVIAL, "--device", "cuda", "--json", str(out), "--log", str(tmp_path / "l.jsonl")])
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert code == 2 and len(calls) >= 3
    assert err.count("\n") == 1 and "torch.cuda.device_count() failed for" in err and "3.00 GiB free of 140.00 GiB" in err
    doc = report_json(out)
    assert doc["exit_code"] == 2 and doc["start_error"]["kind"] == "device" and doc["start_error"]["free_bytes"] == 3 << 30
    assert doc["start_error"]["message"] in err and not os.path.exists(tmp_path / "l.jsonl")


def test_kladders_own_error_mid_climb_still_writes_the_report_with_the_points_so_far(tmp_path, monkeypatch, capsys):
    """A bug of kladder's that ends a climb early (on the H200 a lane's bookkeeping raised) is
    said as kladder's, exit 1, and the report holds every point judged before it."""
    from kladder.tools import cli
    from kladder.climbing import ladder
    real, calls = ladder.Runner._finish, []

    def finish_then_break(self, outcome):
        calls.append(outcome)
        if len(calls) == 3:
            raise ValueError("a bookkeeping slip of kladder's")
        return real(self, outcome)

    monkeypatch.setattr(ladder.Runner, "_finish", finish_then_break)
    out = tmp_path / "r.json"
    code = cli.main(["climb", GOOD, "--rungs", "1", "--device", "cpu", "-j", "1", "--json", str(out),
                     "--log", str(tmp_path / "r.jsonl")])
    assert code == 1
    doc = report_json(out)
    assert doc["exit_code"] == 1 and doc["kladder_error"]["error"] == "ValueError"
    assert "bookkeeping slip" in doc["kladder_error"]["text"]
    assert [p["status"] for r in doc["rungs"] for p in r["points"]] == ["passed", "passed"]
    assert "kladder's own error ended the climb (not the kernel's)" in capsys.readouterr().err
    report_json(tmp_path / "r.jsonl")
