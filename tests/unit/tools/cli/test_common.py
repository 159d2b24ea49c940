"""kladder.tools.cli.common: the checks that need neither torch nor a worker, --color, --json."""
import argparse
import io
import json

import pytest

from kladder.core.errors import UsageProblem
from kladder.core.results import ClimbReport
from kladder.tools.cli import common

SPEC = '''import kladder as kl
spec = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
'''


@pytest.fixture
def spec_file(tmp_path):
    p = tmp_path / "one.py"
    p.write_text(SPEC)
    return str(p)


def test_the_exit_statuses():
    assert (common.EXIT_OK, common.EXIT_FAILED, common.EXIT_USAGE, common.INTERRUPTED) == (0, 1, 2, 130)


@pytest.mark.parametrize("choice,tty,want", [("always", False, True), ("never", True, False), ("auto", True, True),
                                             ("auto", False, False)])
def test_color(monkeypatch, choice, tty, want):
    out = io.StringIO()
    out.isatty = lambda: tty
    monkeypatch.setattr("sys.stdout", out)
    assert common.color(choice) is want


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda"])
def test_device_word_admits_the_three_words_without_looking_for_a_device(device, monkeypatch):
    monkeypatch.setattr(common, "device_of", lambda d: pytest.fail("device_of called for a known word"))
    assert common.device_word(device) is None


@pytest.mark.parametrize("device", ["tpu", "CPU", "cuda:0", ""])
def test_device_word_refuses_any_other_naming_it_and_the_fix(device):
    with pytest.raises(UsageProblem) as e:
        common.device_word(device)
    assert str(e.value) == f"--device {device!r}: use auto, cpu or cuda."


def test_checked_ref_refuses_a_missing_file_as_a_usage_problem(tmp_path):
    missing = str(tmp_path / "nope.py")
    with pytest.raises(UsageProblem, match="does not exist; give PATH.py::NAME") as e:
        common.checked_ref(missing + "::spec")
    assert repr(missing) in str(e.value)


def test_checked_ref_does_not_import_the_file(tmp_path):
    p = tmp_path / "boom.py"
    p.write_text("raise SystemExit('imported')\n")
    assert common.checked_ref(str(p)) is None


def test_load_gives_the_spec_and_a_usage_problem_for_a_name_not_there(spec_file):
    assert common.load(spec_file + "::spec", "cpu").name == "double"
    with pytest.raises(UsageProblem, match="no spec named 'other'"):
        common.load(spec_file + "::other", "cpu")


@pytest.mark.parametrize("rungs,shard,says", [
    ("9", None, "--rungs '9': rung 9 does not exist; the ladder has rungs 1-8."),
    ("1-x", None, "--rungs '1-x': give rung numbers such as 1, 1,2 or 1-3."),
    ("1", "4/3", "4/3"), ("1", "0/2", "0/2"), ("1", "half", "half"),
])
def test_rungs_and_shard_are_read_early(rungs, shard, says):
    with pytest.raises(UsageProblem) as e:
        common._checked_rungs_and_shard(argparse.Namespace(rungs=rungs, shard=shard))
    assert says in str(e.value)


def test_rungs_and_shard_that_read_pass_and_a_command_without_shard_is_fine():
    common._checked_rungs_and_shard(argparse.Namespace(rungs="1,3-4", shard="2/2"))
    common._checked_rungs_and_shard(argparse.Namespace(rungs=None))


def test_checked_early_says_the_device_first_then_the_file_then_the_rungs(tmp_path, spec_file):
    missing = str(tmp_path / "nope.py")
    args = argparse.Namespace(device="tpu", rungs="9", shard=None)
    with pytest.raises(UsageProblem, match="--device 'tpu'"):
        common.checked_early(missing, args)
    args.device = "cpu"
    with pytest.raises(UsageProblem, match="does not exist"):
        common.checked_early(missing, args)
    with pytest.raises(UsageProblem, match="rung 9 does not exist"):
        common.checked_early(spec_file, args)
    args.rungs = "1"
    assert common.checked_early(spec_file, args) is None


# ---------------------------------------------------------------------------- --json
def _report():
    return ClimbReport("s", "s.py", "cpu")


def test_write_json_writes_the_report_whole_as_strict_json(tmp_path):
    path = tmp_path / "r.json"
    failed = {"--json": "an earlier failure"}
    assert common.write_json(str(path), _report(), failed) is True
    doc = json.loads(path.read_text())
    assert doc["spec"] == "s" and doc["exit_code"] == 5 and doc["nothing_ran"] is True
    assert failed == {}                      # written whole after all: the earlier failure is gone


def test_a_json_write_that_fails_is_kept_for_after_the_verdict(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    path = str(tmp_path / "afile" / "r.json")        # a file where the folder goes
    failed = {}
    assert common.write_json(path, _report(), failed) is False
    assert failed["--json"].startswith(f"kladder: error: --json {path!r}: could not write the report (")
    assert failed["--json"].endswith("give a file in a folder you can write to (the verdict above stands)")
    assert capsys.readouterr().err == ""                 # not said yet


def test_a_json_write_that_fails_with_no_verdict_to_follow_is_said_at_once(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    path = str(tmp_path / "afile" / "r.json")
    assert common.write_json(path, _report(), None) is False
    err = capsys.readouterr().err
    assert err.startswith(f"kladder: error: --json {path!r}: could not write the report") and "verdict" not in err
