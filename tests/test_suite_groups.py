"""The suite's own xdist grouping (tests/conftest.py): under `-n 2 --dist loadgroup`, the tests
of one module-scoped fixture (one parameter of it) run on one worker, so the fixture (a climb)
is built once; tests of no such fixture are spread as usual."""
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
    ran = {test: worker for worker, test in re.findall(r"\[(gw\d)\] .*PASSED test_grouped\.py::(test_\w+\[\d\])@",
                                                        result.stdout.str())}
    assert set(ran) == {"test_a[1]", "test_b[1]", "test_a[2]", "test_b[2]"}, result.stdout.str()
    assert ran["test_a[1]"] == ran["test_b[1]"] and ran["test_a[2]"] == ran["test_b[2]"]
    assert "test_grouped.py::test_c@" not in result.stdout.str()          # no fixture of its own: no group


def test_a_session_fixtures_tests_run_on_one_worker_across_modules(pytester):
    # conftest's good_climb (a whole CLI climb) is read by test_cli and test_modes: one group for
    # the fixture, not one per module (which would build it on both workers)
    shared = '\n\n@pytest.fixture(scope="session")\ndef shared():\n    return 1\n'
    pytester.makeconftest(pathlib.Path(CONFTEST).read_text() + shared)
    pytester.makepyfile(**{f"test_m{i}": "def test_uses(shared):\n    pass\n\n\ndef test_free():\n    pass\n"
                           for i in range(4)})
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    workers = set(re.findall(r"\[(gw\d)\] .*PASSED test_m\d\.py::test_uses@conftest::shared", result.stdout.str()))
    assert len(workers) == 1, result.stdout.str()
    assert len(re.findall(r"PASSED test_m\d\.py::test_uses@", result.stdout.str())) == 4
