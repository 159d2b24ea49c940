"""A point that raises, segfaults, hangs or writes past its output is reported as exactly
that, and the climb goes on in a fresh worker with nothing lost."""
import pathlib
import json
import os

import pytest

import kladder as kl
from kladder.report.words import message, reason
from conftest import run_cli

HERE = os.path.dirname(__file__)
FAULTY = os.path.join(HERE, "specs", "faulty.py")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    log = tmp_path_factory.mktemp("log") / "scale.jsonl"
    return kl.climb(FAULTY, rungs=1, device="cpu", timeout_s=3, log_path=str(log)), log


def _by_n(report):
    return {o.point.sizes["N"]: o for o in report.outcomes}


def test_each_misbehaviour_is_named(report):
    by_n = _by_n(report[0])
    assert by_n[3].status == "failed" and by_n[3].headline.check == "raised"
    assert "RuntimeError: unsupported N" in message(by_n[3].headline)
    assert by_n[5].headline.check == "crashed" and "SIGSEGV" in message(by_n[5].headline)
    assert "faulty.py:" in message(by_n[5].headline)          # the innermost frames are named
    assert by_n[7].headline.check == "hang" and "3 s" in message(by_n[7].headline)
    assert by_n[6].headline.check == "guard" and "after the end of `out`" in message(by_n[6].headline)
    assert by_n[4].status == "oom" and "out of memory" in reason(by_n[4])


def test_the_climb_goes_on_after_each(report):
    by_n = _by_n(report[0])
    for n in (1, 2, 8, 9):
        assert by_n[n].status == "passed", (n, by_n[n])
    assert report[0].exit_code == 1


def test_outcomes_are_logged_as_they_arrive(report):
    records = [json.loads(line) for line in report[1].read_text().splitlines()]
    assert records[0]["record"] == "header" and records[-1]["record"] == "end"
    rows = [r for r in records if r["record"] == "point"]
    assert len(rows) == len(report[0].outcomes) == records[-1]["points"]
    assert {r["status"] for r in rows} == {"passed", "failed", "oom"}
    assert all(r["repro"].startswith("kladder repro ") for r in rows)


def _climb_into_the_hang(tmp_path, spec=FAULTY, before=('"r1-N=6"',), env=None):
    """A climb of the faulty spec, waited on until a worker sits in the N = 7 hang (the points
    `before` it logged); of HANG, until N = 1 is logged and N = 2's hang runs (one lane runs rung 1's
    points in order there: waiting for N = 3 too waited out the 60 s timeout)."""
    import subprocess
    import sys
    import time
    log = tmp_path / "l.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "kladder.tools.cli", "climb", spec, "--device", "cpu", "--timeout", "60",
                          "--log", str(log), "--json", str(tmp_path / "r.json")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if log.exists() and all(b in log.read_text() for b in before):
            break
        time.sleep(0.2)
    time.sleep(1.0)
    return p, log


# three points, N = 2 hangs: for the tests that need a climb in a hang and nothing before it
# (faulty.py's raise, crash and out-of-memory sizes cost worker restarts there: ~10 CPU s each)
HANG = os.path.join(HERE, "specs", "hang_one.py")
HANG_BEFORE = ('"r1-N=1"',)


# N = 2 wrong, N = 4 hangs: a climb sitting in a hang with a failure reported before it (faulty.py's
# raise, crash and out-of-memory sizes before its hang cost restarts and re-runs alone: 140 s here)
FAIL_THEN_HANG = os.path.join(HERE, "specs", "fail_then_hang.py")


def test_ctrl_c_still_prints_the_report_so_far(tmp_path):
    import signal
    p, log = _climb_into_the_hang(tmp_path, FAIL_THEN_HANG, ('"r1-N=1"', '"r1-N=2"'))
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=240)
    assert p.returncode == 130, err
    assert "interrupted" in out and "FAILED r1-N=2" in out and "Traceback" not in err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len([r for r in records if r["record"] == "point"]) >= 2       # nothing that finished was lost
    assert records[-1]["record"] == "end" and records[-1]["interrupted"] and records[-1]["exit_code"] == 130
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["exit_code"] == 130 and doc["interrupted"]
    verdicts = {r["rung"]: (r["verdict"], r["note"]) for r in doc["rungs"]}
    assert verdicts[1][0] == "interrupted"                                # never "passed"
    assert verdicts[2] == ("not climbed", "not climbed (interrupted)")


def test_ctrl_c_twice_still_ends_cleanly(tmp_path):
    import signal
    import time
    p, _ = _climb_into_the_hang(tmp_path, HANG, HANG_BEFORE)
    p.send_signal(signal.SIGINT)
    time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=240)
    assert p.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in out


def _kladder_processes(marker: str) -> list[int]:
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read().decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "kladder" in cmd:
                pids.append(int(d))
    return pids


@pytest.mark.skipif(not os.path.exists("/proc"), reason="reads /proc to find the workers")
def test_kill_9_of_the_parent_leaves_no_worker_behind(tmp_path):
    import signal
    import time
    import shutil
    spec = str(tmp_path / "hang_one_kill9.py")            # a path of this test's own: the /proc marker matches no
    shutil.copy(HANG, spec)                                # other test's climb of hang_one.py running beside it
    # workers started afresh (KLADDER_FORKSERVER=0), whose command lines name the spec: a worker forked
    # from the suite's fork server carries the server's command line, which this marker cannot find
    p, _ = _climb_into_the_hang(tmp_path, spec, HANG_BEFORE, env={**os.environ, "KLADDER_FORKSERVER": "0"})
    assert len(_kladder_processes(spec)) >= 2              # the climb and its workers
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    deadline = time.monotonic() + 5
    while _kladder_processes(spec) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _kladder_processes(spec) == []


def test_a_failure_that_does_not_recur_is_flaky_with_its_rate(tmp_path):
    rep = kl.climb(os.path.join(HERE, "specs", "flaky.py"), rungs=1, device="cpu", log_path=str(tmp_path / "l.jsonl"))
    assert {o.status for o in rep.outcomes} == {"flaky"}
    assert all("failed 1 of 2 runs" in reason(o) for o in rep.outcomes)
    assert rep.exit_code == 1 and rep.lowest_failing_rung == 1
    from kladder.report.terminal import render_text
    text = render_text(rep)
    assert "FLAKY r1-N=1" in text and f"{len(rep.outcomes)} flaky" in text


def test_a_failure_that_recurs_says_it_was_replayed(report):
    by_n = _by_n(report[0])
    assert reason(by_n[6]) == "replayed: failed again"          # the guard overrun, run twice
    assert reason(by_n[7]) == ""                                 # a hang is not run again


def test_a_flaky_point_is_flaky_in_climb_repro_and_pytest_alike(tmp_path, pytester):
    """One driver (ladder.Runner) runs a point for all three, replay included."""
    import shlex
    import sys
    flaky = os.path.join(HERE, "specs", "flaky.py")
    rep = kl.climb(flaky, rungs=1, device="cpu", log_path=str(tmp_path / "l.jsonl"))
    first = rep.outcomes[0]
    assert first.status == "flaky"
    cmd = shlex.split(first.repro)[1:]                      # drop the leading 'kladder'
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", *cmd], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and f"FLAKY {first.point.id}" in p.stdout, p.stdout + p.stderr
    assert "flaky:    failed 1 of 2 runs" in p.stdout
    pytester.makepyfile(test_flaky_kernel=pathlib.Path(flaky).read_text().replace('spec = kl.Spec(', 'test_sometimes = kl.Spec('))
    result = pytester.runpytest_subprocess("--kladder-device", "cpu", "--kladder-rungs", "1", "-p", "no:cacheprovider")
    assert result.parseoutcomes()["failed"] == len(rep.outcomes)
    result.stdout.fnmatch_lines([f"*FLAKY {first.point.id}*", "*flaky:    failed 1 of 2 runs*"])


def test_a_kernel_that_ends_its_process_or_runs_out_is_named_for_it(tmp_path):
    rep = kl.climb(os.path.join(HERE, "specs", "exits.py"), rungs=1, device="cpu", log_path=str(tmp_path / "l.jsonl"))
    by_n = _by_n(rep)
    assert by_n[1].headline.check == "crashed" and "exit status 3" in message(by_n[1].headline)
    assert by_n[2].headline.check == "crashed" and "exit status 0" in message(by_n[2].headline)
    assert by_n[3].headline.check == "raised" and "KeyboardInterrupt" in message(by_n[3].headline)
    assert by_n[4].status == "oom" and "ran out of memory" in reason(by_n[4])
    assert by_n[5].status == "passed"
    assert not [o for o in rep.outcomes if o.status == "broken"]      # none of it is blamed on kladder
