"""pytest plugin: a module-level Spec whose name matches the test-function pattern
(`test_rmsnorm = kl.Spec(...)`) becomes one pytest item per point, with readable ids
(`test_rmsnorm[r1-M=1-N=511-bfloat16]`), so `pytest -k` selects points and a failure
prints kladder's message. Points run in kladder's worker processes, as in `kladder climb`.
torch is imported only once a Spec is collected. Each spec's points a session runs are recorded
in the history as a climb of kind "pytest" (`kladder history` lists it, `kladder diff` and the
shards' costs read it; --kladder-history PATH, --kladder-no-history), one a spec and xdist worker."""
from __future__ import annotations

import pytest

OPTIONS = (
    ("device", "auto", "kladder: device for spec points: auto, cpu (Triton interpreter) or cuda"),
    ("rungs", "", "kladder: rungs to collect, e.g. 1 or 1-3 (default: every rung built)"),
    ("timeout", "", "kladder: seconds a point may run before it is reported as a hang"),
    ("seed", "", "kladder: shift every point's seed by this integer (other inputs at the same points)"),
)


def pytest_addoption(parser):
    group = parser.getgroup("kladder")
    for name, default, help_text in OPTIONS:
        group.addoption(f"--kladder-{name}", dest=f"kladder_{name}", default=None, help=help_text)
        parser.addini(f"kladder_{name}", help=help_text, default=default)
    history = "kladder: the history the points' results are recorded in (default .kladder/history.sqlite or $KLADDER_HISTORY)"
    group.addoption("--kladder-history", dest="kladder_history", default=None, metavar="PATH", help=history)
    parser.addini("kladder_history", help=history, default="")
    group.addoption("--kladder-no-history", dest="kladder_no_history", action="store_true", default=False,
                    help="kladder: do not record the points' results in the history")


def pytest_configure(config):
    """Bad option values are usage errors at start-up, naming the option and the fix."""
    from .core.errors import UsageError
    from .climbing.session import parse_rungs
    device = _option(config, "device") or "auto"
    if device not in ("auto", "cpu", "cuda"):
        raise pytest.UsageError(f"kladder: --kladder-device {device!r}: use auto, cpu or cuda.")
    try:
        parse_rungs(_option(config, "rungs") or None)
        float(_option(config, "timeout") or 0)
        int(_option(config, "seed") or 0)
    except UsageError as e:
        raise pytest.UsageError(f"kladder: {e}") from None
    except ValueError:
        raise pytest.UsageError(f"kladder: --kladder-timeout {_option(config, 'timeout')!r} or --kladder-seed "
                                f"{_option(config, 'seed')!r}: give seconds (60) and an integer seed (1).") from None


def _option(config, name: str) -> str:
    value = config.getoption(f"kladder_{name}")
    return value if value is not None else config.getini(f"kladder_{name}")


def pytest_pycollect_makeitem(collector, name, obj):
    from .core.spec import Spec
    if isinstance(obj, Spec) and collector.funcnamefilter(name):
        return SpecCollector.from_parent(collector, name=name, spec=obj)
    return None


class KladderFailure(Exception):
    """A point that failed: its message is kladder's report of the point."""


class SpecCollector(pytest.Collector):
    def __init__(self, *, spec, **kw):
        super().__init__(**kw)
        self.spec = spec

    def collect(self):
        from .core.errors import UsageError
        from .climbing.ladder import resolve_device, rung_points
        from .climbing.session import parse_rungs
        from .core.sizes import budget_for
        config = self.config
        try:
            device = resolve_device(_option(config, "device") or "auto")
            rungs = parse_rungs(_option(config, "rungs") or None)
        except UsageError as e:
            raise pytest.UsageError(f"kladder: {e}") from None
        budget = budget_for(device)
        ref = f"{self.path}::{self.name}"
        seed = int(_option(config, "seed") or 0)
        for rung in rungs:
            for point in rung_points(self.spec, rung, budget, seed):
                yield PointItem.from_parent(self, name=f"{self.spec.name}[{point.id}]", point=point, ref=ref, device=device)


class PointItem(pytest.Item):
    def __init__(self, *, point, ref, device, **kw):
        super().__init__(**kw)
        self.point, self.ref, self.device = point, ref, device

    def runtest(self):
        from .report.terminal import render_outcome
        from .report.words import reason
        outcome = _runner(self.config, self.ref, self.parent.spec, self.device).run(self.point)
        _record(self.config, self.ref, outcome)
        if outcome.status == "skipped":
            pytest.skip(reason(outcome))
        if outcome.status != "passed":
            raise KladderFailure(render_outcome(outcome))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, KladderFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"kladder point {self.point.id}: {self.point.why}"


_RUNNERS_KEY = pytest.StashKey[dict]()
_RECORDS_KEY = pytest.StashKey[dict]()   # ref -> (the ClimbReport its points fill, its history.record.Recorder)


def _runner(config, ref: str, spec, device: str):
    """One Runner per spec for the session: its points run as `kladder climb` runs them."""
    from .climbing.ladder import Runner
    runners = config.stash.setdefault(_RUNNERS_KEY, {})
    if ref not in runners:
        # nothing set in the user's process: the device goes to the Runner, and its workers start
        # with Triton's interpreter chosen for a CPU run (run/workers.py worker_env)
        runners[ref] = Runner(ref, spec, device, float(_option(config, "timeout") or 0) or None)
    return runners[ref]


def _history(config) -> str | None:
    if config.getoption("kladder_no_history"):
        return None
    from .history.store import default_path
    return config.getoption("kladder_history") or config.getini("kladder_history") or default_path()


def _record(config, ref: str, outcome) -> None:
    """The outcome into the spec's climb of kind "pytest" in the history, begun at its first point.
    The history never decides a test's result (a history that cannot be written is one line on
    stderr, as a climb's)."""
    records = config.stash.setdefault(_RECORDS_KEY, {})
    if ref not in records:
        import datetime

        from .history.record import Recorder
        from .core.results import ClimbReport
        from .version import __version__
        runner = config.stash[_RUNNERS_KEY][ref]
        report = ClimbReport(runner.spec.name, ref, runner.device, kladder_version=__version__,
                             started=datetime.datetime.now().isoformat(timespec="seconds"))
        report.fingerprint = runner.fingerprint
        recorder = Recorder(_history(config))
        recorder.begin(report, kind="pytest")
        records[ref] = (report, recorder)
    report, recorder = records[ref]
    from .core.results import RungReport
    from .core.rungs import title
    rung = next((r for r in report.rungs if r.rung == outcome.point.rung), None)
    if rung is None:
        rung = RungReport(outcome.point.rung, title(outcome.point.rung))
        report.rungs.append(rung)
        report.rungs.sort(key=lambda r: r.rung)
    rung.outcomes.append(outcome)
    rung.seconds += outcome.seconds
    recorder.point(outcome)


def _end_records(config) -> None:
    runners = config.stash.get(_RUNNERS_KEY, {})
    for ref, (report, recorder) in config.stash.get(_RECORDS_KEY, {}).items():
        runner = runners.get(ref)
        if runner is not None:
            report.fingerprint = runner.fingerprint or report.fingerprint
            report.device_name = runner.device_name
        report.seconds = sum(r.seconds for r in report.rungs)
        recorder.end(report)


# ---------------------------------------------------------------------------- a session that tests nothing
_COUNTS_KEY = pytest.StashKey[dict]()    # the kladder items selected (node ids), and how many of them ran
NOTHING_RAN = pytest.ExitCode.NO_TESTS_COLLECTED      # 5, as `kladder climb` exits when no point ran


def pytest_collection_finish(session):
    session.config.stash[_COUNTS_KEY] = {"selected": {i.nodeid for i in session.items if isinstance(i, PointItem)},
                                         "ran": 0}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    counts = item.config.stash.get(_COUNTS_KEY, None)
    if counts and report.when == "call" and report.outcome != "skipped" and item.nodeid in counts["selected"]:
        counts["ran"] += 1


_ERRORS_KEY = pytest.StashKey[int]()     # collection errors (an import error, a spec that failed to load)
COLLECTION_FAILED = (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)   # a bad -k, a collection error


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    if outcome.get_result().failed:
        config = collector.config
        config.stash[_ERRORS_KEY] = config.stash.get(_ERRORS_KEY, 0) + 1


def _collection_failed(config, exitstatus) -> bool:
    return bool(config.stash.get(_ERRORS_KEY, 0)) or exitstatus in COLLECTION_FAILED


def _tested_nothing(config, exitstatus=pytest.ExitCode.OK) -> bool:
    """Kladder points were selected and none ran, and not because pytest's collection failed
    (that is reported as such: a bad -k or an import error is not 'every point skipped')."""
    counts = config.stash.get(_COUNTS_KEY, None)
    return bool(counts and counts["selected"] and not counts["ran"] and not config.option.collectonly
                and not _collection_failed(config, exitstatus))


def pytest_sessionfinish(session, exitstatus):
    """A session that selected kladder points and ran none (every one skipped) fails: a run
    that tests nothing must not read as a pass (aiter #5133: 141 test functions never ran)."""
    if exitstatus == pytest.ExitCode.OK and _tested_nothing(session.config, exitstatus):
        session.exitstatus = NOTHING_RAN


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from .report.words import collection_failed_text, fingerprint_text, nothing_ran_text
    for runner in list(config.stash.get(_RUNNERS_KEY, {}).values())[:1]:
        terminalreporter.write_line(f"kladder env: {fingerprint_text(runner.fingerprint)}")
    counts = config.stash.get(_COUNTS_KEY, None) or {"selected": set(), "ran": 0}
    if _tested_nothing(config, exitstatus):
        terminalreporter.write_line(f"kladder: {nothing_ran_text(len(counts['selected']))}", yellow=True, bold=True)
    elif counts["selected"] and not counts["ran"] and _collection_failed(config, exitstatus):
        text = collection_failed_text(config.stash.get(_ERRORS_KEY, 0), len(counts["selected"]))
        terminalreporter.write_line(f"kladder: {text}", red=True, bold=True)


def pytest_unconfigure(config):
    _end_records(config)
    for runner in config.stash.get(_RUNNERS_KEY, {}).values():
        runner.close()
