import os

# The Triton interpreter must be chosen before triton is first imported anywhere in the
# test process (zoo kernels are imported by some tests).
os.environ.setdefault("TRITON_INTERPRET", "1")
# The suite's own climbs record their history in a temporary file, never in the repository's
# .kladder/ (history/store.py reads KLADDER_HISTORY); subprocesses inherit it.
import tempfile

os.environ.setdefault("KLADDER_HISTORY", os.path.join(tempfile.mkdtemp(prefix="kladder-history-"), "history.sqlite"))
# ...and their CLI climbs reuse nothing from the outcome store that history file holds (every test
# climb runs its points, whatever climbs ran before it in the session); the store's own tests
# (test_incremental.py, test_many.py) turn it on for their climbs with KLADDER_STORE=1.
os.environ.setdefault("KLADDER_STORE", "0")


import pytest


@pytest.fixture
def poisoned_empty():
    """For the zoo's kernel tests: torch.empty returns NaN (as under kladder), so an element
    no one wrote is visible; seeded inputs."""
    import torch
    torch.manual_seed(0)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    yield
    torch.use_deterministic_algorithms(was)


_VALIDATOR = []


def _validator():
    """docs/report.schema.json's validator, the schema checked once a process. What
    jsonschema.validate(doc, schema) does for each document, without its per-call cost: it
    checks the schema and builds the validator again every call, ~0.3-1 CPU s a document
    with this schema (a climb's log has a record a point: 181 records, 21 CPU s for 20 of
    them at load 20 against 1.4 s for all 181 with one validator, measured in
    docs/results/2026-12-02-cpu-suite-session7)."""
    if not _VALIDATOR:
        import json
        import pathlib

        import jsonschema
        schema = json.loads((pathlib.Path(__file__).resolve().parent.parent / "docs" / "report.schema.json").read_text())
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATOR.append(cls(schema))
    return _VALIDATOR[0]


def report_json(path):
    """A report or a JSON-lines log read back, every document checked against the schema
    (docs/report.schema.json): the suite validates what every climb it runs writes."""
    import json
    import pathlib

    import jsonschema
    text = pathlib.Path(path).read_text()
    strict = {"parse_constant": lambda c: (_ for _ in ()).throw(ValueError(f"non-strict JSON constant {c}"))}
    if str(path).endswith(".jsonl"):
        docs = [json.loads(line, **strict) for line in text.splitlines()]
    else:
        docs = [json.loads(text, **strict)]
    v = _validator()
    for d in docs:
        error = jsonschema.exceptions.best_match(v.iter_errors(d))     # as jsonschema.validate raises it
        if error is not None:
            raise error
    return docs if str(path).endswith(".jsonl") else docs[0]



@pytest.fixture(scope="session")
def good_climb(tmp_path_factory):
    """tests/specs/good.py (a correct softmax) climbed through the CLI on the CPU, every rung at
    the defaults, once for the tests that read it (test_cli's clean climb, test_modes' CPU
    skips): (the process, its --json report, its --log path). ~60-100 CPU s a climb."""
    import sys
    here = os.path.dirname(__file__)
    d = tmp_path_factory.mktemp("good-climb")
    out, log = d / "r.json", d / "l.jsonl"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", os.path.join(here, "specs", "good.py"),
                        "--device", "cpu", "--json", str(out), "--log", str(log)],
                       capture_output=True, text=True, timeout=1800, cwd=here)
    return p, report_json(out), log


# ---------------------------------------------------------------------------- the zoo, in batches
# The zoo's cases climbed through the CLI as a user climbs them, several cases a process
# (`kladder zoo climb A B ... --json`): one warm fork server for all of a batch's climbs, one
# CLI start, instead of a process and two fresh workers a climb (~7 CPU s each: measured,
# docs/results/2026-12-06-cpu-zoo-speed). Each batch is climbed once a session by the first test
# that reads one of its cases (zoo_case), on the one xdist worker its tests are grouped on
# (zoo_param's mark, _fixture_groups), with the options `make zoo` climbs it with (and
# --shrink-s 0: no test of a batch asserts a shrink), on every point of its rung.
ZOO_BATCHES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (cases, the options besides each case at its own rung), every point of that rung.
    # A batch holds two cases at least (`kladder zoo climb CASE` alone is one climb, not the
    # table); the batches are sized so that the two xdist workers share them evenly (their
    # measured seconds, tests/durations.json, send the dearest out first).
    "r1a": (("gemm_k_tail", "small_overrun", "empty_like_overrun", "last_tile_wrap"), ()),
    "r1b": (("config_writes_zeros", "nan_blind", "rows_int32_offset"), ()),
    "r1c": (("rmsnorm_n_tail", "untuned_fallback", "router_lanes_256", "active_count_full_width",
             "embedding_chunk_tail"), ()),
    "r2a": (("lowp_probs_underflow", "router_tie_pack", "expert_wgrad_unwritten"), ()),
    "r2b": (("chunked_prefill_short", "bias_tile_index"), ()),
    "r3": (("assumes_contiguous", "padding_scale_read", "scale_layout_mismatch", "shared_kernel_reference",
            "input_scratch"), ()),
    "r4a": (("jit_key_closure", "undeclared_mutation"), ()),
    "r4b": (("plan_cache_restart", "stale_state"), ()),
    # the A-B-A cases' twins are clean at rung 1 too (TWINS_ONLY: their buggy kernels, which fail
    # there as well, are not climbed; no test reads them)
    "r4t1": (("jit_key_closure", "stale_state"), ("--rungs", "1")),
    "r6": (("allreduce_size_stride", "allreduce_relaxed_flag"), ()),
    "r8": (("compounding_bias", "decode_group16"), ()),
}


# Each batch's CPU seconds, for the order the batches go out in (the dearest first; nothing is
# judged by it): its climbs' seconds in `make zoo`'s run of 2026-12-06 (docs/results/2026-12-06-cpu-zoo-time,
# scaled by that run's 1,211 CPU s over its climbs' 2,938 s), r4t1's measured on its own (2026-12-07).
ZOO_SECONDS = {"r1a": 60, "r1b": 118, "r1c": 131, "r2a": 170, "r2b": 126, "r3": 81, "r4a": 33, "r4b": 13,
               "r4t1": 37, "r6": 16, "r8": 226}

# Batches whose tests read only the twins: climbed as `kladder climb kladder.zoo.CASE::fixed ...`
# (several specs in one CLI process, many.py; the options of the batch as `kladder zoo climb` passes
# them to each climb), no buggy kernel climbed. The r4t1 buggy kernels' rung-1 climbs were most of
# that batch's time (their failed points are each run again), and no test asserted them.
TWINS_ONLY = {"r4t1"}


def zoo_batch(case: str, batch: str | None = None) -> str:
    """The batch that climbs `case`: the one named (`batch`), else the one that climbs it at its
    own rung (no --rungs of its own)."""
    names = [b for b, (cases, extra) in ZOO_BATCHES.items()
             if case in cases and (batch == b or batch is None and "--rungs" not in extra)]
    if len(names) != 1:
        raise ValueError(f"zoo case {case!r} is in batches {names} of ZOO_BATCHES: name one (batch=)")
    return names[0]


def zoo_param(case: str, *values, batch: str | None = None, marks=()):
    """A test parameter for `case` (and `values`; `batch` where it is not the case's own rung's),
    grouped with the rest of its batch; the test's zoo_case(case) reads that batch's climb."""
    name = zoo_batch(case, batch)
    return pytest.param(case, *values, id="-".join(map(str, (case, *values, *(() if batch is None else (batch,))))),
                        marks=[pytest.mark.kladder_group(f"zoo:{name}"), *marks])


class ZooCase:
    """One case of a batch: its table section (the case's lines of the CLI's output), the
    buggy kernel's report and the twin's (as `kladder climb --json` writes them), the row."""

    def __init__(self, name: str, row: dict, text: str, batch: "ZooRun"):
        self.name, self.row, self.text, self.batch = name, row, text, batch
        self.bug, self.twin = row["buggy"], row["fixed"]

    def points(self, which: str, rung: int) -> list[dict]:
        return getattr(self, which)["rungs"][rung - 1]["points"]


class ZooRun:
    def __init__(self, name: str, where):
        import sys
        cases, extra = ZOO_BATCHES[name]
        out, log = where / "zoo.json", where / "zoo.jsonl"
        if name in TWINS_ONLY:
            self._twins(cases, extra, out, log, where)
            return
        # --shrink-s 0: no test of a batch asserts a shrink (test_shrink.py and test_zoo_run.py do);
        # one climb at a time: the other xdist worker has the other core
        self.proc = run_cli([sys.executable, "-m", "kladder.tools.cli", "zoo", "climb", *cases, "--device", "cpu",
                                    "--shrink-s", "0", "--cases-at-once", "1", "--json", str(out), "--log", str(log), *extra],
                                   capture_output=True, text=True, timeout=3000, cwd=str(where))
        assert out.exists(), self.proc.stdout[-3000:] + self.proc.stderr[-3000:]
        self.doc = report_json(out)
        # every climb's log (climbs append to one --log file, each record whole), checked as each
        # test's own climb checked it: a header and an end record a climb, every record to the schema
        records = report_json(log)
        climbs = sum(any(r["climbed"] for r in row[k]["rungs"]) for row in self.doc["cases"] for k in ("buggy", "fixed"))
        ends = [r for r in records if r["record"] == "end"]
        assert sum(r["record"] == "header" for r in records) == len(ends) == climbs, (len(ends), climbs)
        lines = self.proc.stdout.splitlines()
        self.cases = {}
        for row in self.doc["cases"]:
            c = row["case"]
            first = next(i for i, line in enumerate(lines) if line.startswith(f"{c} (rung "))
            last = next(i for i, line in enumerate(lines) if i > first and line.startswith(c + " ") and "buggy:" in line)
            self.cases[c] = ZooCase(c, row, "\n".join(lines[first:last + 1]), self)

    def _twins(self, cases, extra, out, log, where) -> None:
        """The twins alone (TWINS_ONLY): one `kladder climb` of every twin's spec; each case's row
        holds its twin's report (`fixed`) and no buggy one."""
        import sys

        from kladder.tools.cases import case_ref
        refs = [case_ref(c, fixed=True) for c in cases]
        self.proc = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", *refs, "--device", "cpu", "--shrink-s", "0",
                             "--json", str(out), "--log", str(log), *extra],
                            capture_output=True, text=True, timeout=3000, cwd=str(where))
        assert out.exists(), self.proc.stdout[-3000:] + self.proc.stderr[-3000:]
        self.doc = report_json(out)
        by_ref = {r["ref"]: r for r in self.doc["climbs"]}
        assert sorted(by_ref) == sorted(refs), sorted(by_ref)
        records = report_json(log)
        ends = [r for r in records if r["record"] == "end"]
        assert sum(r["record"] == "header" for r in records) == len(ends) == len(refs), (len(ends), len(refs))
        self.cases = {c: ZooCase(c, {"case": c, "buggy": None, "fixed": by_ref[case_ref(c, fixed=True)]},
                                 self.proc.stdout, self) for c in cases}


_ZOO_RUNS: dict[str, "ZooRun | Exception"] = {}


@pytest.fixture
def zoo_case(request, tmp_path_factory):
    """zoo_case(name) -> ZooCase, from the batch the test's zoo_param named (else the one batch
    that climbs `name`), climbed the first time one of its cases is asked for in this process
    (function-scoped on purpose: a batch's tests are grouped by their mark, not by this fixture,
    so that the batches spread over the xdist workers)."""
    mark = request.node.get_closest_marker("kladder_group")
    marked = mark.args[0].removeprefix("zoo:") if mark and mark.args[0].startswith("zoo:") else None

    def get(name: str) -> ZooCase:
        batch = zoo_batch(name, marked)
        if batch not in _ZOO_RUNS:
            try:
                _ZOO_RUNS[batch] = ZooRun(batch, tmp_path_factory.mktemp(f"zoo-{batch}"))
            except Exception as e:  # noqa: BLE001 - a batch that failed fails each of its tests, climbed once
                _ZOO_RUNS[batch] = e
        run = _ZOO_RUNS[batch]
        if isinstance(run, Exception):
            raise run
        return run.cases[name]
    return get


def pytest_configure(config):
    config.addinivalue_line("markers", "kladder_group(name): run with every test of the same group on one xdist "
                            "worker (tests/conftest.py: the zoo's batches)")
    _start_fork_server(config)


# One warm fork server a pytest process (each xdist worker's, or the one process's), its socket
# in KLADDER_FORKSERVER for every climb the tests start, in this process or through the CLI:
# their workers and modes' processes are forked from it (run/forkserver.py, Attached) instead
# of each climb starting a server or workers of its own, which import torch and Triton (~2.4
# CPU s a process; a climb started two). A process the server cannot serve as a new one would be
# (a test's own TRITON_*, PYTHON*, LD_* variable) is started afresh, as without it; a test that
# sets KLADDER_FORKSERVER itself (0, always) gets what it set. Not in xdist's controller (it
# runs no test), nor where KLADDER_FORKSERVER is set already (a pytester run inherits its
# parent's server).
_SERVER = []


def _start_fork_server(config) -> None:
    if os.environ.get("KLADDER_FORKSERVER") is not None or os.name != "posix":
        return
    if config.getoption("dist", default=None) not in (None, "no") and not hasattr(config, "workerinput"):
        return
    from kladder.run.forkclient import Server
    from kladder.run.workers import worker_env
    try:
        server = Server(worker_env("cpu"), label="kladder tests")
    except OSError:
        return
    _SERVER.append(server)
    os.environ["KLADDER_FORKSERVER"] = server.address


def run_cli(cmd: list, *, cwd=None, env=None, timeout=None, input=None, capture_output=True, text=True):
    """subprocess.run(cmd, capture_output=True, text=True, ...) for `[sys.executable, '-m', MODULE,
    ...]` (the CLI, as a user runs it), the process forked from this pytest process's warm fork
    server (above) instead of started afresh: a process of its own all the same (its exit status,
    stdout, stderr, cwd and environment exactly as asked, its own warnings), without importing torch
    and Triton again (~2-3 CPU s a start on this machine; the suite runs hundreds). Where the server
    cannot serve it as a fresh process (an environment variable torch or kladder reads at import that
    differs from the server's: run/forkserver.incompatible), it is started afresh, as before. A
    PYTHONPATH entry naming the src folder the server's kladder comes from adds nothing (the same
    package), so a test that puts it first is served too."""
    import subprocess
    import sys
    if not (capture_output and text):
        raise ValueError("run_cli captures stdout and stderr as text, as the suite's CLI calls do")
    env = dict(os.environ if env is None else env)
    server = _SERVER[0] if _SERVER else None
    if server is None or len(cmd) < 3 or cmd[0] != sys.executable or cmd[1] != "-m" or not server.ready(300):
        return subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, input=input, capture_output=True, text=True)
    import kladder
    from kladder.run import forkclient as forkserver
    src = os.path.realpath(os.path.dirname(os.path.dirname(kladder.__file__)))

    def rest(path: str | None) -> list[str]:
        return [e for e in (path or "").split(os.pathsep) if e and os.path.realpath(e) != src]

    asked = dict(env)
    if rest(env.get("PYTHONPATH")) == rest(server.env.get("PYTHONPATH")):
        env.pop("PYTHONPATH", None)
        if "PYTHONPATH" in server.env:
            env["PYTHONPATH"] = server.env["PYTHONPATH"]
    env.setdefault("PYTHONUNBUFFERED", server.env.get("PYTHONUNBUFFERED", ""))   # the output goes to files
    if not env["PYTHONUNBUFFERED"]:
        env.pop("PYTHONUNBUFFERED")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as stdin:
        if input is not None:
            stdin.write(input.encode())
            stdin.seek(0)
        child = forkserver.spawn(cmd[1:], env, (stdin.fileno(), out.fileno(), err.fileno()), address=server.address,
                                 cwd=os.fspath(cwd) if cwd is not None else None)
        if child is None:                                  # refused: started afresh, with the environment asked
            return subprocess.run(cmd, cwd=cwd, env=asked, timeout=timeout, input=input, capture_output=True, text=True)
        try:
            code = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise subprocess.TimeoutExpired(cmd, timeout) from None
        if child.lost:                                     # the server went away under it: afresh
            return subprocess.run(cmd, cwd=cwd, env=asked, timeout=timeout, input=input, capture_output=True, text=True)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, code, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))


def runpytest_forked(pytester, *args, timeout: float | None = 600):
    """pytester.runpytest_subprocess(*args) (`python -m pytest --basetemp=... ARGS` in pytester's
    folder, its environment), the pytest process forked from this process's warm fork server
    (run_cli) instead of started afresh: a process of its own all the same, so a session's torch
    is its own, without importing torch, Triton and kladder again (~3 CPU s a start on this
    machine). pytester.popen puts its folder first on PYTHONPATH; `python -m` puts the working
    folder first on sys.path already, so the environment is passed as it is."""
    import sys
    import time
    runs = getattr(pytester, "_kladder_runs", 0) + 1
    pytester._kladder_runs = runs
    basetemp = pytester.path / f"runpytest-forked-{runs}"
    t0 = time.monotonic()
    p = run_cli([sys.executable, "-m", "pytest", f"--basetemp={basetemp}", *map(str, args)], cwd=pytester.path,
                timeout=timeout)
    return pytest.RunResult(p.returncode, p.stdout.splitlines(), p.stderr.splitlines(), time.monotonic() - t0)


def _fixture_groups(items) -> dict[str, str]:
    """{node id: group} for `-n N --dist loadgroup` (the Makefile's): the tests that share a
    module- or session-scoped fixture of this suite's own (a climb, a repository) are one group,
    run on one xdist worker, so the fixture is built once, not once per worker that draws one
    of its tests. One key per fixture a test names and, for a parametrized one, per parameter;
    tests linked through any key are one group (a test naming two fixtures joins theirs).
    Autouse fixtures (torch settings, named by no test) group nothing; a test of no such
    fixture is a group of its own."""
    import inspect
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    keyed = {}
    for item in items:
        infos, fn = getattr(item, "_fixtureinfo", None), getattr(item, "function", None)
        if infos is None or fn is None:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        keys = []
        for name in inspect.signature(fn).parameters:
            defs = infos.name2fixturedefs.get(name)
            own = defs and getattr(defs[-1].func, "__module__", "") in (item.module.__name__, "conftest")
            if own and defs[-1].scope in ("module", "package", "session"):      # not pytest's tmp_path_factory
                # a session fixture of this file (good_climb) is one group across the modules using it
                where = "conftest" if defs[-1].scope == "session" else item.module.__name__
                keys.append(f"{where}::{name}" + (f"({params[name]})" if name in params else ""))
        keys += [f"mark::{m.args[0]}" for m in item.iter_markers("kladder_group")]
        if keys:
            keyed[item.nodeid] = keys
            for k in keys[1:]:
                parent[find(k)] = find(keys[0])
    return {nodeid: find(keys[0]) for nodeid, keys in keyed.items()}


# The suite's own xdist scheduling (`--dist loadgroup`): the groups above, and the longest
# first. xdist's loadgroup reads a group from a suffix its worker appends to each node id
# (`test_x@group`); pytest 9.2 no longer lets a plugin change a node id (pytest-xdist issue
# #1386: with pytest 9.2.0 and pytest-xdist 3.8.0 every test ran as a group of its own, each
# climb built on both workers). Here each worker writes its {node id: group} to a file the
# controller names, and the controller's scheduler reads it; no node id changes. Then the
# work units go out longest first (tests/durations.json: seconds a test, measured), so that no
# long climb starts last while the other worker idles; the rest keep their collection order.
# tests/test_suite_groups.py runs it under pytest's and xdist's versions.
@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """Controller: tell each worker where to write its groups."""
    config = node.config
    if config.getvalue("dist") != "loadgroup":
        return
    if not hasattr(config, "_kladder_groups_dir"):
        config._kladder_groups_dir = tempfile.mkdtemp(prefix="kladder-groups-")
    node.workerinput["kladder_groups"] = config._kladder_groups_dir


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Worker: its groups, written whole (a temporary file renamed) before its collection
    reaches the controller."""
    where = getattr(config, "workerinput", {}).get("kladder_groups")
    if not where:
        return
    import json
    groups = _fixture_groups(items)
    path = os.path.join(where, config.workerinput.get("workerid", "gw") + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(groups, f)
    os.replace(path + ".tmp", path)


def pytest_unconfigure(config):
    import shutil
    while _SERVER:
        _SERVER.pop().close()
    where = getattr(config, "_kladder_groups_dir", None)
    if where:
        shutil.rmtree(where, ignore_errors=True)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """Controller, `--dist loadgroup`: xdist's scope scheduling over the suite's groups."""
    if config.getvalue("dist") != "loadgroup":
        return None
    import json

    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        """A scope is a group (a node id when the test is in none); the units go out in
        decreasing measured cost, unmeasured ones after, in collection order."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.groups, self.ordered = None, False

        def _split_scope(self, nodeid):
            if self.groups is None:
                self.groups = {}
                where = getattr(self.config, "_kladder_groups_dir", None)
                for name in sorted(os.listdir(where)) if where and os.path.isdir(where) else []:
                    if name.endswith(".json"):
                        with open(os.path.join(where, name)) as f:
                            self.groups = json.load(f)    # every worker collected the same tests
                        break
            return self.groups.get(nodeid, nodeid)

        def _assign_work_unit(self, node):
            if not self.ordered:                              # the first assignment: the queue is whole
                self.ordered = True
                cost = _durations()
                # the zoo's batches first (each climbs several cases: minutes, the suite's longest
                # units), the dearest first (ZOO_SECONDS), then by measured cost; a long unit sent
                # last leaves the other worker idle
                def key(kv):
                    zoo = str(kv[0]).removeprefix("mark::zoo:") if str(kv[0]).startswith("mark::zoo:") else None
                    return (zoo is None, -(ZOO_SECONDS.get(zoo, 0.0) if zoo else sum(cost.get(n, 0.0) for n in kv[1])))
                units = sorted(self.workqueue.items(), key=key)
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False              # the order is Groups' own
    return Groups(config, log)


def _durations() -> dict[str, float]:
    """{node id: seconds} measured (tests/durations.json, written by tests/durations.py from a
    KLADDER_TEST_CPU run); {} where there is none. Only the order of the work depends on it."""
    import json
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")) as f:
            return {k: float(v) for k, v in json.load(f).items()}
    except (OSError, ValueError, AttributeError):
        return {}


# Per-test cost, for measuring the suite (docs/results/2026-12-02-cpu-suite-session6): with
# KLADDER_TEST_CPU=DIR set, each test's wall seconds and CPU seconds (this process's user+sys,
# that of every child it reaped meanwhile, and that of this process's fork server with every
# process it forked and reaped: the CLI calls, the climbs' workers and modes' processes) across
# its setup, call and teardown are appended to DIR/<worker>.jsonl. CPU time is what a loaded
# machine does not inflate much; wall time is what an idle one would show.
if os.environ.get("KLADDER_TEST_CPU"):
    import json as _json
    import resource as _resource
    import time as _time

    def _server_cpu_s() -> float:
        """The fork server's user+sys and its reaped children's (/proc/PID/stat fields 14-17): what
        RUSAGE_CHILDREN misses while the server lives (it reaps the processes it forks, not us)."""
        total = 0.0
        for server in _SERVER:
            try:
                with open(f"/proc/{server.proc.pid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            total += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
        return total

    def _cpu_s():
        me, kids = _resource.getrusage(_resource.RUSAGE_SELF), _resource.getrusage(_resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + _server_cpu_s()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        t0, c0 = _time.perf_counter(), _cpu_s()
        yield
        rec = {"test": item.nodeid, "wall_s": round(_time.perf_counter() - t0, 3), "cpu_s": round(_cpu_s() - c0, 3),
               "load1": round(os.getloadavg()[0], 2)}
        out = os.path.join(os.environ["KLADDER_TEST_CPU"], os.environ.get("PYTEST_XDIST_WORKER", "main") + ".jsonl")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "a") as f:
            f.write(_json.dumps(rec) + "\n")


# ---------------------------------------------------------------------------- CUDA graphs on the CPU
class FakeCudaGraph:
    """Stands in for torch.cuda.CUDAGraph on the CPU: while a capture runs, `record` keeps each
    call (the kernel, its arguments, its output); replay runs them again into the memory the
    capture returned, as a real replay does."""
    recording = None

    def __init__(self):
        self.calls = []

    @classmethod
    def record(cls, kernel, args, kwargs, out):
        if cls.recording is not None:
            cls.recording.calls.append((kernel, args, kwargs, out))
        return out

    def replay(self):
        import torch
        for fn, args, kwargs, out in self.calls:
            new = fn(*args, **kwargs)
            if isinstance(out, torch.Tensor) and new is not out:
                out.copy_(new)


def fake_cuda_graphs(monkeypatch, after_capture=None) -> type:
    """torch.cuda's graph calls a mode makes (CUDAGraph, graph, the side stream, synchronize) on
    the CPU, FakeCudaGraph recording; `after_capture()` runs as a capture's context ends (a test
    raises there, as a capture that fails on leaving does). Returns FakeCudaGraph."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def capture(g):
        FakeCudaGraph.recording = g
        try:
            yield
        finally:
            FakeCudaGraph.recording = None
        if after_capture is not None:
            after_capture()

    class Stream:
        def wait_stream(self, other):
            pass

    monkeypatch.setattr(torch.cuda, "CUDAGraph", FakeCudaGraph)
    monkeypatch.setattr(torch.cuda, "graph", capture)
    monkeypatch.setattr(torch.cuda, "Stream", Stream)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: Stream())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    return FakeCudaGraph


@pytest.fixture(scope="module")
def one_torch_thread():
    """One intra-op thread for a module's tests, as kladder's CPU workers run points
    (run/worker.py); for a tiny model more threads cost more than they give on the shared machine."""
    import torch
    was = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(was)
