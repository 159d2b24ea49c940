"""The pytest plugin, tested from outside with pytester. In a process of its own (forked from the
suite's warm fork server: conftest.runpytest_forked): torch cannot be unloaded and imported again,
which an in-process run does between sessions."""
import os

from conftest import run_cli, runpytest_forked

HERE = os.path.dirname(__file__)

SPEC_FILE = '''
import torch
import kladder as kl

def bad_double(x):
    y = 2 * x
    if x.shape[-1] % 8:
        y[..., -1] = 0            # the tail element is wrong
    return y

def double_ref(x):
    return 2 * x

test_double = kl.Spec("double", kernel=bad_double, reference=double_ref,
                      args={"x": kl.Tensor("N", dtype=["float32", "bfloat16"])},
                      returns=kl.Tensor("N", like="x"),
                      dims={"N": kl.Dim(1, 64, tile=8)})
'''


def test_points_become_items_with_readable_ids(pytester):
    pytester.makepyfile(test_kernels=SPEC_FILE)
    result = runpytest_forked(pytester, "--collect-only", "-q", "--kladder-device", "cpu")
    result.stdout.fnmatch_lines(["*test_double::double[[]r1-N=8-float32[]]", "*test_double::double[[]r1-N=9-bfloat16[]]"])


def test_failures_print_kladders_message_and_k_selects(pytester):
    pytester.makepyfile(test_kernels=SPEC_FILE)
    # rung 1's items show it (the later rungs' items ran here too, for minutes, asserting nothing)
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "--kladder-rungs", "1", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 2 and outcomes["passed"] >= 2
    result.stdout.fnmatch_lines(["*FAILED r1-N=9-*", "*pattern:  the last element*", "*repro:    kladder repro*"])
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "-k", "double and 8-float32")
    result.assert_outcomes(passed=1)


def test_bad_option_is_a_usage_error(pytester):
    pytester.makepyfile(test_kernels=SPEC_FILE)
    result = runpytest_forked(pytester, "--kladder-device", "tpu")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*kladder*use auto, cpu or cuda*"])


def test_items_spread_over_two_xdist_workers(pytester):
    """Across machines or cores, kladder's items distribute with pytest-xdist: each xdist
    worker collects the same points (generation is deterministic) and runs its share."""
    pytester.makepyfile(test_kernels=SPEC_FILE)
    result = runpytest_forked(pytester, "-n", "2", "-v", "--kladder-device", "cpu", "--kladder-rungs", "1",
                                           "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] >= 2 and outcomes["passed"] >= 2
    text = result.stdout.str()
    assert "[gw0]" in text and "[gw1]" in text
    assert "created: 2/2 workers" in text
def test_a_seed_shift_reaches_the_items_and_a_bad_one_is_a_usage_error(pytester):
    from kladder.core.point import Point
    pytester.makepyfile(test_kernels=SPEC_FILE)
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "--kladder-seed", "7", "-k", "double and 9-bfloat16",
                                           "-p", "no:cacheprovider")
    shifted = Point("double", 1, (("N", 9),), (("x", "bfloat16"),)).shifted(7).seed
    assert f'"seed":{shifted}' in result.stdout.str()            # the failing item's repro carries the shifted seed
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "--kladder-seed", "x")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*integer seed*"])


def test_a_collection_error_is_reported_as_such_not_as_every_point_skipped(pytester):
    pytester.makepyfile(test_kernels=SPEC_FILE)
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "-k", "double and (", "-p", "no:cacheprovider")
    assert result.ret == 4                                   # pytest's usage error, not 5 (nothing ran)
    text = result.stdout.str() + result.stderr.str()
    assert "were skipped" not in text and "pytest's collection failed (a usage error" in text, text[-2000:]
    pytester.makepyfile(test_broken="import no_such_module_for_kladder\n")
    result = runpytest_forked(pytester, "--kladder-device", "cpu", "-p", "no:cacheprovider")
    assert result.ret == 2 and "were skipped" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*1 error during collection*"])


def test_pytest_runs_of_a_spec_are_recorded_in_the_history_like_climbs(pytester):
    """Issue 33: pytest runs of a spec never reached `kladder history`. Each session's points of a
    spec are one climb of kind "pytest" (its points, their load and times, the verdict), which
    `kladder history` lists and `kladder diff` compares with the run before it."""
    import json
    import sys
    pytester.makepyfile(test_kernels=SPEC_FILE)
    history = str(pytester.path / "h.sqlite")
    for _ in range(2):
        result = runpytest_forked(pytester, "--kladder-device", "cpu", "--kladder-rungs", "1", "-p", "no:cacheprovider",
                                               "--kladder-history", history)
        assert result.parseoutcomes()["failed"] >= 2
    listed = run_cli([sys.executable, "-m", "kladder.tools.cli", "history", "--history", history], capture_output=True,
                            text=True, timeout=120)
    lines = listed.stdout.splitlines()
    assert listed.returncode == 0 and len(lines) == 2, listed.stdout + listed.stderr
    assert all("double [pytest]  failed" in line for line in lines), lines
    from kladder.history.store import History
    h = History(history)
    try:
        newest = h.climbs()[0]
        points = h.points(newest["id"])
    finally:
        h.close()
    assert newest["ended"] and newest["device"] == "cpu" and newest["toolchain"].get("torch")
    assert points and all(p["load"] is not None and p["seconds"] > 0 for p in points)
    assert any(p["status"] == "failed" for p in points)
    d = run_cli([sys.executable, "-m", "kladder.tools.cli", "diff", "--history", history, "--json",
                        str(pytester.path / "d.json")], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stdout + d.stderr                   # the same failures both times: nothing new
    doc = json.loads((pytester.path / "d.json").read_text())
    assert doc["newly_failing"] == [] and doc["a"]["id"] == 1 and doc["b"]["id"] == 2
    none = runpytest_forked(pytester, "--kladder-device", "cpu", "--kladder-rungs", "1", "-p", "no:cacheprovider",
                                         "--kladder-history", history, "--kladder-no-history", "-k", "8-float32")
    none.assert_outcomes(passed=1)
    assert len(run_cli([sys.executable, "-m", "kladder.tools.cli", "history", "--history", history],
                              capture_output=True, text=True, timeout=120).stdout.splitlines()) == 2
