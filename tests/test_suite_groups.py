"""The suite's own xdist grouping (tests/conftest.py): under `-n 2 --dist loadgroup`, the tests
of one module-scoped fixture (one parameter of it) run on one worker, so the fixture (a climb)
is built once; tests of no such fixture are spread as usual; the zoo's batches, then the
longest measured work, go out first. Under whatever pytest and pytest-xdist the dev extra allows (pyproject.toml): with
pytest 9.2.0 and xdist 3.8.0 xdist's own loadgroup groups nothing (pytest-xdist issue 1386)."""
import os
import pathlib
import re

CONFTEST = os.path.join(os.path.dirname(__file__), "conftest.py")

TESTS = '''
import pytest


@pytest.fixture(scope="module", params=[1, 2])
def built(request):
    return request.param


def test_a(built):
    pass


def test_b(built):
    pass


def test_c():
    pass


def test_d():
    pass
'''


def test_a_module_fixtures_tests_run_on_one_worker(pytester):
    pytester.makeconftest(pathlib.Path(CONFTEST).read_text())
    pytester.makepyfile(test_grouped=TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
    ran = {test: worker for worker, test in re.findall(r"\[(gw\d)\] .*PASSED test_grouped\.py::(test_\w+(?:\[\d\])?)",
                                                        result.stdout.str())}
    assert set(ran) == {"test_a[1]", "test_b[1]", "test_a[2]", "test_b[2]", "test_c", "test_d"}, result.stdout.str()
    assert ran["test_a[1]"] == ran["test_b[1]"] and ran["test_a[2]"] == ran["test_b[2]"], result.stdout.str()
    assert "@" not in result.stdout.str().split("scheduling tests via")[-1]     # no node id changed


def test_a_session_fixtures_tests_run_on_one_worker_across_modules(pytester):
    # conftest's good_climb (a whole CLI climb) is read by test_cli and test_modes: one group for
    # the fixture, not one per module (which would build it on both workers)
    shared = '\n\n@pytest.fixture(scope="session")\ndef shared():\n    return 1\n'
    pytester.makeconftest(pathlib.Path(CONFTEST).read_text() + shared)
    pytester.makepyfile(**{f"test_m{i}": "def test_uses(shared):\n    pass\n\n\ndef test_free():\n    pass\n"
                           for i in range(4)})
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    workers = re.findall(r"\[(gw\d)\] .*PASSED test_m\d\.py::test_uses", result.stdout.str())
    assert len(workers) == 4 and len(set(workers)) == 1, result.stdout.str()


def test_a_test_of_two_fixtures_joins_their_groups(pytester):
    # test_ab names both fixtures: a, b and ab run on one worker (each fixture built once)
    tests = ('import pytest\n\n\n@pytest.fixture(scope="module")\ndef fa():\n    return 1\n\n\n'
             '@pytest.fixture(scope="module")\ndef fb():\n    return 2\n\n\n'
             'def test_a(fa):\n    pass\n\n\ndef test_b(fb):\n    pass\n\n\ndef test_ab(fa, fb):\n    pass\n\n\n'
             + "".join(f"def test_free{i}():\n    pass\n\n\n" for i in range(4)))
    pytester.makeconftest(pathlib.Path(CONFTEST).read_text())
    pytester.makepyfile(test_joined=tests)
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    workers = dict((t, w) for w, t in re.findall(r"\[(gw\d)\] .*PASSED test_joined\.py::(test_a|test_b|test_ab)\b",
                                                   result.stdout.str()))
    assert len(workers) == 3 and len(set(workers.values())) == 1, result.stdout.str()


def test_the_zoos_batches_then_the_longest_measured_work_go_out_first(pytester):
    # tests/durations.json beside the conftest: test_late (last collected) is the longest, the
    # grouped pair next; a zoo batch's tests (kladder_group('zoo:...'), unmeasured) before them
    # all, the dearest batch first (conftest.ZOO_SECONDS: r8 before r4b, an unknown one last);
    # one worker runs the units in the order they are sent
    import json
    pytester.makeconftest(pathlib.Path(CONFTEST).read_text())
    batch = "\n\n@pytest.mark.kladder_group('zoo:{}')\ndef test_{}():\n    pass\n"
    pytester.makepyfile(test_grouped=TESTS + "\n\ndef test_late():\n    pass\n",
                        test_zoo_like="import pytest\n" + batch.format("b", "batch") + batch.format("r4b", "cheap")
                        + batch.format("r8", "dear"))
    (pytester.path / "durations.json").write_text(json.dumps({
        "test_grouped.py::test_late": 90.0, "test_grouped.py::test_a[2]": 20.0, "test_grouped.py::test_b[2]": 20.0,
        "test_grouped.py::test_c": 1.0}))
    result = pytester.runpytest_subprocess("-n", "1", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=10)
    order = re.findall(r"PASSED test_(?:grouped|zoo_like)\.py::(test_\w+(?:\[\d\])?)", result.stdout.str())
    assert order[:6] == ["test_dear", "test_cheap", "test_batch", "test_late", "test_a[2]", "test_b[2]"], result.stdout.str()
    assert order[6:] == ["test_c", "test_a[1]", "test_b[1]", "test_d"], result.stdout.str()
