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
    import subprocess
    import sys
    here = os.path.dirname(__file__)
    d = tmp_path_factory.mktemp("good-climb")
    out, log = d / "r.json", d / "l.jsonl"
    p = subprocess.run([sys.executable, "-m", "kladder.cli", "climb", os.path.join(here, "specs", "good.py"),
                        "--device", "cpu", "--json", str(out), "--log", str(log)],
                       capture_output=True, text=True, timeout=1800, cwd=here)
    return p, report_json(out), log


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup` (the Makefile's), the tests sharing a module-scoped fixture run
    on one xdist worker, so the fixture (a climb, a repository) is built once, not once per
    worker that draws one of its tests: one group per fixture a test names and, for a
    parametrized one, per parameter. Autouse fixtures (torch settings, named by no test)
    group nothing. tryfirst: xdist's own hook (its worker's) turns the marks into the node ids
    that it groups by, and it runs before this one otherwise, seeing no mark: the two tests of
    test_zoo's `buggy[small_overrun]` ran on two workers, the climb built twice (measured,
    docs/results/2026-12-02-cpu-suite-session6; tests/test_suite_groups.py)."""
    import inspect

    import pytest
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
                # no ']' in a group: xdist reads a node id whose last ']' follows its '@' as no group;
                # a session fixture of this file (good_climb) is one group across the modules using it
                where = "conftest" if defs[-1].scope == "session" else item.module.__name__
                keys.append(f"{where}::{name}" + (f"({params[name]})" if name in params else ""))
        if keys:
            item.add_marker(pytest.mark.xdist_group("+".join(sorted(keys))))


# Per-test cost, for measuring the suite (docs/results/2026-12-02-cpu-suite-session6): with
# KLADDER_TEST_CPU=DIR set, each test's wall seconds and CPU seconds (this process's user+sys
# and that of every child it reaped meanwhile: the CLI climbs, their workers) across its setup,
# call and teardown are appended to DIR/<worker>.jsonl. CPU time is what a loaded machine
# does not inflate much; wall time is what an idle one would show.
if os.environ.get("KLADDER_TEST_CPU"):
    import json as _json
    import resource as _resource
    import time as _time

    def _cpu_s():
        me, kids = _resource.getrusage(_resource.RUSAGE_SELF), _resource.getrusage(_resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

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
