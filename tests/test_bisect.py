"""`kladder bisect`: a generated repository of 20 commits, a regression planted at one, a
commit that does not import at another; bisect names the planted commit, skips the broken one,
and leaves the repository exactly as it was."""
import json
import os
import subprocess
import sys

import pytest
from conftest import report_json, run_cli  # noqa: F401 - the suite's strict-JSON reader lives there

SPEC = '''import torch
import kladder as kl
from kern import double

spec = kl.Spec("double", kernel=double, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 8)})
'''
GOOD_KERNEL = "def double(x):\n    return 2 * x\n"
BAD_KERNEL = "def double(x):\n    return 2 * x + (x.numel() > 2)\n"    # wrong from N = 3 on
NO_IMPORT = "def double(x)\n    return 2 * x\n"                          # a syntax error
# commit numbers (0-19): the planted regression, and the one that does not import. Bisecting from GOOD = 1 to
# BAD = 19 leaves 18 candidates (2-19), whose one best midpoint is 10 (nine on each side): git tests it first.
REGRESSION, BROKEN, GOOD = 14, 10, 1
POINT = json.dumps({"spec": "double", "rung": 1, "dims": [["N", 3]]})
# in the repository's tree, so on each step's PYTHONPATH: every Python started there notes itself
# (when KLT_STARTS names a file): each is a step (python -m kladder.tools.bisect step), its workers forks of it
STARTS = '''import os
if os.environ.get("KLT_STARTS"):
    import sys
    with open(os.environ["KLT_STARTS"], "a") as f:
        f.write(f"{os.getpid()} {sys.argv!r}\\n")
'''


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    r = tmp_path_factory.mktemp("kernrepo")
    _git(r, "init", "-q", "-b", "main")
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "t")
    (r / "spec.py").write_text(SPEC)
    (r / "sitecustomize.py").write_text(STARTS)
    shas = []
    for i in range(20):
        body = NO_IMPORT if i == BROKEN else (BAD_KERNEL if i >= REGRESSION else GOOD_KERNEL)
        (r / "kern.py").write_text(f"# revision {i}\n" + body)
        _git(r, "add", "-A")
        _git(r, "commit", "-q", "-m", f"commit {i}" + (": count the tail" if i == REGRESSION else ""))
        shas.append(_git(r, "rev-parse", "HEAD"))
    (r / "notes.txt").write_text("the user's own uncommitted file\n")      # an untracked file must stay
    return r, shas


def _state(r):
    gitdir = r / ".git"
    return {"head": _git(r, "rev-parse", "HEAD"), "branch": _git(r, "symbolic-ref", "HEAD"),
            "status": _git(r, "status", "--porcelain"), "refs": _git(r, "for-each-ref"),
            "worktrees": _git(r, "worktree", "list", "--porcelain"),
            "bisecting": sorted(p.name for p in gitdir.iterdir() if p.name.startswith("BISECT")),
            "kern": (r / "kern.py").read_text()}


def kladder(*args, cwd, **env):
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(__file__)), "src"), **env)
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)


def test_bisect_finds_the_planted_regression_and_skips_the_commit_that_does_not_import(repo, tmp_path):
    r, shas = repo
    before = _state(r)
    out = tmp_path / "b.json"
    starts = tmp_path / "starts.txt"
    p = kladder("bisect", shas[GOOD], shas[-1], str(r / "spec.py") + "::spec", "--point", POINT, "--device", "cpu",
                "--json", str(out), cwd=tmp_path, KLT_STARTS=str(starts))
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())                     # strict JSON: json.loads would take NaN, the test below not
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert doc["outcome"] == "found"
    assert doc["first_bad"] == shas[REGRESSION]
    assert f"first bad commit: {shas[REGRESSION]} commit {REGRESSION}: count the tail" in p.stdout
    assert doc["ends"]["good"]["verdict"] == "good" and doc["ends"]["bad"]["verdict"] == "bad"
    verdicts = {s["commit"]: s["verdict"] for s in doc["steps"]}
    assert verdicts[shas[BROKEN]] == "skip"
    assert "does not load" in next(s["why"] for s in doc["steps"] if s["commit"] == shas[BROKEN])
    assert verdicts[shas[REGRESSION]] == "bad" and verdicts[shas[REGRESSION - 1]] == "good"
    for s in doc["steps"]:                               # every verdict is what that commit's kernel deserves
        i = shas.index(s["commit"])
        assert s["verdict"] == ("skip" if i == BROKEN else "bad" if i >= REGRESSION else "good"), s
    assert _state(r) == before
    # each step is one new Python at its commit; on the CPU its worker is a fork of it (torch and the
    # spec imported once there, as `kladder repro` forks its workers), never another Python started
    # there: the tree's sitecustomize.py noted every start, and each is a step
    started = starts.read_text().splitlines()
    assert len(started) == len(doc["steps"]) + 2 and all("'step'" in line for line in started), started


def test_ends_that_do_not_differ_are_said_not_bisected(repo, tmp_path):
    r, shas = repo
    before = _state(r)
    p = kladder("bisect", shas[REGRESSION], shas[-1], str(r / "spec.py"), "--point", POINT, "--device", "cpu",
                cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "nothing to bisect: GOOD is bad and BAD is bad" in p.stdout
    assert _state(r) == before


@pytest.mark.parametrize("args,words", [
    (["nope", "HEAD"], "GOOD 'nope': not a commit"),
    (["HEAD", "HEAD~3"], "is not an ancestor of BAD"),
])
def test_bad_requests_exit_2(repo, tmp_path, args, words):
    r, _ = repo
    p = kladder("bisect", *args, str(r / "spec.py"), "--point", POINT, "--device", "cpu", cwd=tmp_path)
    assert p.returncode == 2 and words in p.stderr, p.stdout + p.stderr


def test_ctrl_c_leaves_the_repository_as_it_was(repo, tmp_path):
    import signal
    import time
    r, shas = repo
    before = _state(r)
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(__file__)), "src"))
    proc = subprocess.Popen([sys.executable, "-m", "kladder.tools.cli", "bisect", shas[0], shas[-1], str(r / "spec.py"),
                             "--point", POINT, "--device", "cpu"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_git(r, "worktree", "list").splitlines()) < 2:
        time.sleep(0.2)                                   # the bisection's worktree is there: it is under way
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stdout
    assert _state(r) == before


def test_bisect_by_rungs_judges_every_point_of_the_rung_at_each_commit(repo, tmp_path):
    r, shas = repo
    before = _state(r)
    out = tmp_path / "b.json"
    p = kladder("bisect", shas[REGRESSION - 1], shas[REGRESSION + 1], str(r / "spec.py"), "--rungs", "1",
                "--device", "cpu", "--json", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(out.read_text())
    assert doc["first_bad"] == shas[REGRESSION]
    assert doc["ends"]["good"]["statuses"] == {"passed": 3}       # rung 1's points (N = 1, 2, 8), all passed at GOOD
    assert doc["ends"]["bad"]["statuses"]["failed"] >= 1
    assert _state(r) == before
