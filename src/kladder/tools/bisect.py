"""`kladder bisect GOOD BAD SPEC (--point JSON | --rungs R)`: which commit broke this point.

The kernel's git repository is the one that holds SPEC's file. kladder never touches the
user's checkout: it adds a detached worktree of BAD in a temporary folder, runs `git bisect
start BAD GOOD` and `git bisect run` there (bisect state is per worktree in git: refs/bisect/*
and BISECT_* live in .git/worktrees/NAME), and in a `finally` resets the bisection, removes the
worktree and prunes it, Ctrl-C included (the bisection runs in its own session, so the
terminal's SIGINT reaches kladder alone, which then kills the bisection's process group).

Each step is `python -m kladder.tools.bisect step ...`, a new process at the commit: it loads the
commit's spec by path from the worktree and runs the point (or the rungs) through
ladder.Runner, in a worker of its own (on the CPU a fork of the step, which imported torch and the
spec once, as `kladder repro` forks its workers: run/forked.py), with PYTHONPATH giving the running kladder first and
then the commit's tree (its root and its src/), so the kernel's package is the commit's, never
an installed copy. kladder itself is always the running one (a commit's kladder may predate
`kladder bisect`), so bisecting kladder's own repository judges its zoo with today's kladder.

Verdicts: the point passed -> good (exit 0), it failed -> bad (1), anything else -> skip
(125): the spec does not import at that commit, the point is not the spec's, the worker does
not start, the point is skipped here, flaky (failed, then passed: neither good nor bad), or
kladder broke. A step never exits 1 by accident: every error is a skip. Both ends are
judged first, so a GOOD that fails or a BAD that passes is said, not bisected into a lie."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from ..core.errors import BisectProblem
from ..core.facts import Json, Plain, opt

GOOD, BAD, SKIP = "good", "bad", "skip"
EXIT_OF = {GOOD: 0, BAD: 1, SKIP: 125}        # what `git bisect run` reads from a step


# ---------------------------------------------------------------- git

def git(repo: str, *args: str, check: bool = True) -> str:
    p = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise BisectProblem(f"git {' '.join(args)} failed in {repo}: {(p.stderr or p.stdout).strip()}")
    return p.stdout.strip()


def _commit(repo: str, rev: str, which: str) -> str:
    p = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q", rev + "^{commit}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BisectProblem(f"{which} {rev!r}: not a commit of {repo}; give a commit, branch or tag "
                            "(`git log --oneline` lists them).")
    return p.stdout.strip()


def subject(repo: str, sha: str) -> str:
    return git(repo, "log", "-1", "--format=%s", sha)


def spec_location(ref: str) -> tuple[str, str, str]:
    """(repository root, the spec file's path inside it, '::NAME' or '') for a PATH.py[::NAME]."""
    from ..core.notation import SpecRef
    where = SpecRef.parse(ref)
    target, name = where.target, where.name or ""
    if not target.endswith(".py"):
        raise BisectProblem(f"SPEC {ref!r}: give the spec's file, PATH.py[::NAME], inside the kernel's git "
                            "repository (bisect imports that file at each commit).")
    path = os.path.realpath(target)
    if not os.path.isfile(path):
        raise BisectProblem(f"SPEC {ref!r}: {target!r} does not exist; give PATH.py[::NAME].")
    p = subprocess.run(["git", "-C", os.path.dirname(path), "rev-parse", "--show-toplevel"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BisectProblem(f"SPEC {ref!r}: {os.path.dirname(path)!r} is not inside a git repository; bisect "
                            "needs the kernel's repository.")
    repo = os.path.realpath(p.stdout.strip())
    return repo, os.path.relpath(path, repo), ("::" + name if name else "")


def tree_pythonpath(tree: str) -> str:
    """The running kladder first, then the commit's tree (root and src/), then what was there."""
    import kladder
    ours = os.path.dirname(os.path.dirname(os.path.abspath(kladder.__file__)))
    parts = [ours, tree] + ([os.path.join(tree, "src")] if os.path.isdir(os.path.join(tree, "src")) else [])
    if os.environ.get("PYTHONPATH"):
        parts.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(parts)


# ---------------------------------------------------------------- the driver

@dataclass
class BisectStep(Plain):
    """One commit judged (a line of the steps record `kladder.tools.bisect step` appends to)."""
    commit: str
    subject: str
    verdict: str                     # GOOD, BAD or SKIP
    why: str
    statuses: dict[str, int]         # the points' statuses there, counted
    seconds: float


@dataclass
class Candidate(Plain):
    commit: str
    subject: str


@dataclass
class Predicate(Plain):
    """What each commit is judged by: a point (its JSON, or its text when it is not JSON) or rungs."""
    point: Json = None
    rungs: str | None = None


@dataclass
class BisectResult(Plain):
    """`kladder bisect`'s facts (its --json; report/debugging.bisect_text says them). outcome:
    found (first_bad), ambiguous (candidates: git could not tell which), ends_wrong (GOOD does not
    pass or BAD does not fail: ends), interrupted, bisect_failed (git_output_tail)."""
    repo: str
    spec: str
    good: str
    bad: str
    device: str
    predicate: Predicate
    first_bad: str | None = None
    candidates: list[Candidate] = field(default_factory=list)
    ends: dict[str, BisectStep | None] = field(default_factory=dict)   # "bad", "good": each end's own step
    steps: list[BisectStep] = field(default_factory=list)
    interrupted: bool = False
    git_output_tail: str | None = opt()
    outcome: str = ""
    first_bad_subject: str | None = opt()
    seconds: float = 0.0


def bisect(good: str, bad: str, ref: str, *, point: str | None = None, rungs: str | None = None,
           device: str = "cpu", timeout_s: float | None = None, on_step=None) -> BisectResult:
    """Find the first bad commit between GOOD and BAD; returns the facts (to_dict: strict-JSON-able)."""
    repo, rel, name = spec_location(ref)
    good_sha, bad_sha = _commit(repo, good, "GOOD"), _commit(repo, bad, "BAD")
    if good_sha == bad_sha:
        raise BisectProblem(f"GOOD {good!r} and BAD {bad!r} are the same commit; give an older GOOD.")
    if subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", good_sha, bad_sha]).returncode != 0:
        raise BisectProblem(f"GOOD {good!r} is not an ancestor of BAD {bad!r}; give GOOD older than BAD "
                            "(`git log --oneline BAD` lists its ancestors).")
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="kladder-bisect-")
    tree = os.path.join(tmp, "tree")
    record = os.path.join(tmp, "steps.jsonl")
    step_cmd = [sys.executable, "-m", "kladder.tools.bisect", "step", os.path.join(tree, rel) + name,
                "--device", device, "--record", record]
    step_cmd += ["--point", point] if point is not None else (["--rungs", rungs] if rungs else [])
    if timeout_s:
        step_cmd += ["--timeout", str(timeout_s)]
    env = dict(os.environ, PYTHONPATH=tree_pythonpath(tree))
    result = BisectResult(repo=repo, spec=rel + name, good=good_sha, bad=bad_sha, device=device,
                          predicate=Predicate(point=json.loads(point) if _is_json(point) else point, rungs=rungs))
    candidates: list[str] = []
    proc = None
    added = False
    try:
        git(repo, "worktree", "add", "--detach", "--quiet", tree, bad_sha)
        added = True
        for which, sha in (("bad", bad_sha), ("good", good_sha)):
            git(tree, "checkout", "--quiet", "--detach", sha)
            subprocess.run(step_cmd, cwd=tree, env=env, capture_output=True, start_new_session=True)
            result.ends[which] = _read_steps(record)[-1] if _read_steps(record) else None
            if on_step and result.ends[which]:
                on_step(result.ends[which])
        ends = {k: None if v is None else v.verdict for k, v in result.ends.items()}
        if ends.get("bad") != BAD or ends.get("good") != GOOD:
            result.outcome = "ends_wrong"
        else:
            git(tree, "bisect", "start", bad_sha, good_sha)
            proc = subprocess.Popen(["git", "bisect", "run", *step_cmd], cwd=tree, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True, start_new_session=True)
            out = _follow(proc, record, len(_read_steps(record)), on_step)
            result.git_output_tail = out[-2000:]
            result.outcome, result.first_bad, candidates = _first_bad(out)
    except KeyboardInterrupt:
        result.interrupted = True
        result.outcome = "interrupted"
    finally:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)    # a second Ctrl-C must not stop the cleanup
        try:
            if proc is not None and proc.poll() is None:
                _kill_group(proc)
            steps = _read_steps(record)
            result.steps = steps[len([v for v in result.ends.values() if v]):]
            if added:
                git(tree, "bisect", "reset", check=False)
                git(repo, "worktree", "remove", "--force", tree, check=False)
            git(repo, "worktree", "prune", check=False)
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, previous)
    if result.first_bad:
        result.first_bad_subject = subject(repo, result.first_bad)
    result.candidates = [Candidate(commit=c, subject=subject(repo, c)) for c in candidates]
    result.seconds = round(time.perf_counter() - t0, 3)
    return result


def _is_json(text: str | None) -> bool:
    try:
        json.loads(text or "")
        return True
    except ValueError:
        return False


def _follow(proc: subprocess.Popen, record: str, seen: int, on_step) -> str:
    """Wait for `git bisect run`, telling on_step of each verdict as it lands; its output."""
    out: list[str] = []
    for line in proc.stdout:
        out.append(line)
        if on_step:
            steps = _read_steps(record)
            for s in steps[seen:]:
                on_step(s)
            seen = len(steps)
    proc.wait()
    if on_step:
        for s in _read_steps(record)[seen:]:
            on_step(s)
    return "".join(out)


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


FIRST_BAD = re.compile(r"^([0-9a-f]{40}) is the first bad commit", re.M)
COULD_BE = re.compile(r"The first bad commit could be any of:\n((?:[0-9a-f]{40}\n)+)")


def _first_bad(out: str) -> tuple[str, str | None, list[str]]:
    """git bisect run's verdict: (outcome, the first bad commit, the candidates)."""
    m = FIRST_BAD.search(out)
    if m:
        return "found", m.group(1), []
    m = COULD_BE.search(out)
    if m:
        return "ambiguous", None, m.group(1).split()
    return "bisect_failed", None, []


def _read_steps(record: str) -> list[BisectStep]:
    try:
        with open(record) as f:
            return [BisectStep.from_dict(json.loads(line)) for line in f if line.strip()]
    except OSError:
        return []


# ---------------------------------------------------------------- one step, at one commit

def step_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="kladder.tools.bisect step")
    p.add_argument("ref")
    p.add_argument("--point")
    p.add_argument("--rungs")
    p.add_argument("--device", default="cpu")
    p.add_argument("--record", required=True)
    p.add_argument("--timeout", type=float)
    a = p.parse_args(argv)
    tree = os.getcwd()
    sha = git(tree, "rev-parse", "HEAD", check=False)
    t0 = time.perf_counter()
    try:
        verdict, why, statuses = judge(a.ref, a.point, a.rungs, a.device, a.timeout)
    except BaseException as e:  # noqa: BLE001 - any error of kladder's at a commit is a skip, never "bad"
        verdict, why, statuses = SKIP, f"kladder could not judge this commit: {type(e).__name__}: {e}", {}
    entry = BisectStep(commit=sha, subject=git(tree, "log", "-1", "--format=%s", check=False), verdict=verdict,
                       why=why, statuses=statuses, seconds=round(time.perf_counter() - t0, 3))
    from ..report.jsonout import dumps
    with open(a.record, "a") as f:
        f.write(dumps(entry.to_dict()) + "\n")
    return EXIT_OF[verdict]


def judge(ref: str, point_text: str | None, rungs: str | None, device: str, timeout_s: float | None):
    """(verdict, why, {status: count}) for the commit checked out here."""
    from ..climbing.ladder import Runner, rung_points
    from ..climbing.session import parse_rungs
    from ..gen.load import load_spec
    from ..core.point import Point
    from ..core.sizes import budget_for
    from ..core.spec import SpecError
    from ..core.errors import WorkerError
    if device == "cpu":
        # this process as a worker's (as `kladder repro` on the CPU: cli/repro.py's _cpu_first), set before torch
        # and the spec are imported: its workers are forks of it (below)
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    try:
        spec = load_spec(ref)
    except (SpecError, ValueError) as e:
        return SKIP, f"the spec does not load at this commit: {e}", {}
    if point_text is not None:
        point = Point.parse(point_text)
        if point.spec != spec.name:
            return SKIP, f"the point is spec {point.spec!r}'s; at this commit the spec is {spec.name!r}", {}
        from ..climbing.pointcheck import PointError, check_point
        try:
            check_point(spec, point)          # data the spec declares, never an environment of the point's choosing
        except PointError as e:
            return SKIP, f"the point does not fit the spec at this commit: {e}", {}
        points = [point]
    else:
        points = [p for r in parse_rungs(rungs) for p in rung_points(spec, r, budget_for(device))]
    pool = None
    if device == "cpu":
        # the workers forked from this process, which imported torch and the commit's spec once
        # (run/forked.py, as `kladder repro` does): a step started one more Python, torch and Triton
        # import for its worker (a fork server refuses the step's PYTHONPATH, the commit's tree)
        from ..run.forked import ForkPool
        from ..run.worker import setup_torch
        setup_torch(device)
        pool = ForkPool(ref, spec, device, {"device_name": "cpu"})
    runner = Runner(ref, spec, device, timeout_s, pool=pool)
    try:
        outcomes = list(runner.run_all(points))
    except WorkerError as e:
        return SKIP, f"the worker did not start at this commit: {e}", {}
    finally:
        runner.close()
    statuses: dict[str, int] = {}
    for o in outcomes:
        statuses[str(o.status)] = statuses.get(str(o.status), 0) + 1
    failed = [o for o in outcomes if str(o.status) == "failed"]
    if failed:
        return BAD, f"{len(failed)} of {len(outcomes)} points failed, first {failed[0].point.id}", statuses
    if statuses.get("passed") and set(statuses) <= {"passed", "skipped"}:
        return GOOD, f"{statuses['passed']} of {len(outcomes)} points passed", statuses
    return SKIP, "no point could be judged here (" + ", ".join(f"{n} {s}" for s, n in statuses.items()) + ")", statuses


if __name__ == "__main__":
    if sys.argv[1:2] == ["step"]:
        sys.exit(step_main(sys.argv[2:]))
    sys.exit("usage: python -m kladder.tools.bisect step ...; the command is `kladder bisect GOOD BAD SPEC`")
