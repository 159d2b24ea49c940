"""kladder.tools.cli.climb: which refs climb as one spec or as many, the report's first guess,
and the report written whatever ends the command (a usage problem, kladder's own error, a
signal), in-process: the climb itself is replaced where one would start."""
import json
import signal
import sys
import types

import pytest

from kladder.core import fingerprint
from kladder.core.errors import UsageProblem
from kladder.core.interrupts import Interrupts
from kladder.core.results import ClimbReport
from kladder.gen.load import ManySpecs
from kladder.run.devicestart import DeviceStartError
from kladder.tools import many
from kladder.tools.cli import climb
from kladder.tools.cli.parser import build_parser

ONE = '''import kladder as kl
def _spec(name):
    return kl.Spec(name, kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
                   args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
'''


@pytest.fixture(autouse=True)
def handlers_kept(monkeypatch):
    """cmd_climb installs its handler and ignores signals once its report is written: put them back.
    No git process for the fingerprint."""
    monkeypatch.setattr(fingerprint, "git_of", lambda path: None)
    was = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in was.items():
        signal.signal(s, h)


@pytest.fixture
def specs(tmp_path):
    (tmp_path / "one.py").write_text(ONE + 'spec = _spec("double")\n')
    (tmp_path / "two.py").write_text(ONE + 'a = _spec("a")\nb = _spec("b")\n')
    return tmp_path


def args_of(*argv):
    return build_parser().parse_args(["climb", *argv])


# ---------------------------------------------------------------------------- one spec or many
def test_new_report_guesses_the_name_and_keeps_the_device_word():
    r = climb._new_report("path/to/norm.py", args_of("x", "--device", "cpu"))
    assert (r.spec, r.ref, r.device) == ("norm", "path/to/norm.py", "cpu")
    assert climb._new_report("norm.py::fused", args_of("x", "--device", "tpu")).spec == "fused"
    assert climb._new_report("norm.py::fused", args_of("x")).device == "auto"
    assert r.started and r.kladder_version and r.exit_code == 5


def test_load_one_gives_the_only_spec_or_names_them_all(specs):
    assert climb._load_one(str(specs / "one.py")).name == "double"
    assert climb._load_one(str(specs / "two.py") + "::b").name == "b"
    with pytest.raises(ManySpecs) as e:
        climb._load_one(str(specs / "two.py"))
    assert [r.rsplit("::", 1)[1] for r in e.value.refs] == ["a", "b"]


@pytest.fixture
def dispatched(monkeypatch):
    seen = []
    monkeypatch.setattr(climb, "cmd_climb", lambda ref, args: seen.append(("one", ref)) or 0)
    monkeypatch.setattr(many, "climb_many", lambda refs, args: seen.append(("many", list(refs))) or 1)
    return seen


def test_one_ref_climbs_as_one_spec_and_several_as_many(dispatched, specs):
    one = str(specs / "one.py")
    assert climb.cmd_climb_paths(args_of(one)) == 0
    assert climb.cmd_climb_paths(args_of(one, one + "::spec")) == 1
    assert dispatched == [("one", one), ("many", [one, one + "::spec"])]


def test_a_file_of_several_specs_found_by_its_climb_climbs_as_many(monkeypatch):
    seen = []

    def several(ref, args):
        raise ManySpecs([f"{ref}::a", f"{ref}::b"])
    monkeypatch.setattr(climb, "cmd_climb", several)
    monkeypatch.setattr(many, "climb_many", lambda refs, args: seen.append(refs) or 0)
    assert climb.cmd_climb_paths(args_of("f.py")) == 0
    assert seen == [["f.py::a", "f.py::b"]]


def test_a_folder_is_each_spec_of_its_files(dispatched, specs, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert climb.cmd_climb_paths(args_of(str(specs), "--device", "cpu")) == 1
    [(how, refs)] = dispatched
    assert how == "many" and sorted(r.rsplit("/", 1)[1] for r in refs) == ["one.py::spec", "two.py::a", "two.py::b"]


def test_a_folder_without_specs_is_a_usage_problem(dispatched, tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageProblem, match="empty"):
        climb.cmd_climb_paths(args_of(str(tmp_path / "empty"), "--device", "cpu"))
    assert dispatched == []


# ---------------------------------------------------------------------------- the report whatever happens
def test_an_unwritable_json_path_is_a_usage_problem_before_any_report(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    bad = str(tmp_path / "afile" / "r.json")
    with pytest.raises(UsageProblem, match=r"--json .*: cannot write there"):
        climb.cmd_climb("x.py", args_of("x.py", "--json", bad, "--no-history", "--device", "cpu"))
    assert not (tmp_path / "afile").is_dir()


def test_a_usage_problem_after_the_report_exists_is_written_in_it_with_exit_2(tmp_path, specs, capsys):
    out = tmp_path / "r.json"
    code = climb.cmd_climb(str(specs / "one.py"), args_of("x", "--rungs", "9", "--json", str(out), "--no-history",
                                                          "--device", "cpu"))
    assert code == 2
    doc = json.loads(out.read_text())
    assert doc["exit_code"] == 2 and doc["start_error"]["kind"] == "usage"
    assert doc["start_error"]["message"] == "--rungs '9': rung 9 does not exist; the ladder has rungs 1-8."
    assert doc["fingerprint"]["kladder"]                    # the environment as this process sees it
    assert capsys.readouterr().err == f"kladder: error: {doc['start_error']['message']}\n"


def test_kladders_own_error_mid_climb_still_gives_the_report_with_exit_1(tmp_path, specs, monkeypatch, capsys):
    def broken(ref, args, report, started):
        raise RuntimeError("a bug of kladder's")
    monkeypatch.setattr(climb, "_climb_started", broken)
    out = tmp_path / "r.json"
    assert climb.cmd_climb(str(specs / "one.py"), args_of("x", "--json", str(out), "--no-history",
                                                          "--device", "cpu")) == 1
    doc = json.loads(out.read_text())
    assert doc["kladder_error"]["error"] == "RuntimeError" and doc["kladder_error"]["text"] == "a bug of kladder's"
    assert "a bug of kladder's" in doc["kladder_error"]["trace"]
    err = capsys.readouterr().err
    assert "kladder: kladder's own error ended the climb (not the kernel's): RuntimeError: a bug of kladder's" in err


def test_a_signal_mid_climb_gives_the_report_marked_interrupted_with_exit_130(tmp_path, specs, monkeypatch, capsys):
    def interrupted(ref, args, report, started):
        handler = signal.getsignal(signal.SIGINT)
        assert isinstance(handler, Interrupts)            # installed before anything else
        handler(signal.SIGINT, None)
    monkeypatch.setattr(climb, "_climb_started", interrupted)
    out = tmp_path / "r.json"
    assert climb.cmd_climb(str(specs / "one.py"), args_of("x", "--json", str(out), "--no-history",
                                                          "--device", "cpu")) == 130
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["exit_code"] == 130
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN        # written: nothing ends it half-way now


def test_a_usage_problem_after_a_signal_is_the_signals(tmp_path, specs, monkeypatch):
    def torn(ref, args, report, started):
        signal.getsignal(signal.SIGINT).seen = True       # the signal came; what failed after it failed of it
        raise UsageProblem("an import torn half-way")
    monkeypatch.setattr(climb, "_climb_started", torn)
    assert climb.cmd_climb(str(specs / "one.py"), args_of("x", "--no-history", "--device", "cpu")) == 130


SET_NAME = """
import dataclasses, os, signal
class F(dataclasses.Field):
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGTERM)
@dataclasses.dataclass
class C:
    x: int = F(dataclasses.MISSING, dataclasses.MISSING, True, True, None, True, None, dataclasses.MISSING)
"""


@pytest.mark.parametrize("report_made", [True, False])
def test_a_signal_inside_an_imports_set_name_is_an_interruption_not_kladders_error(tmp_path, specs, monkeypatch,
                                                                                   capsys, report_made):
    # the climb's handler raises inside __set_name__; Python 3.11 wraps it: "RuntimeError: Error calling
    # __set_name__" (a whole suite's SIGTERM at one of 20 moments, a climb importing a module then)
    def importing(*a):
        exec(compile(SET_NAME, "<a module importing>", "exec"), {})
    monkeypatch.setattr(climb, "_climb_started" if report_made else "_new_report", importing)
    out = tmp_path / "r.json"
    code = climb.cmd_climb(str(specs / "one.py"), args_of("x", "--json", str(out), "--no-history", "--device", "cpu"))
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err and "kladder's own error" not in err
    if report_made:
        doc = json.loads(out.read_text())
        assert doc["interrupted"] is True and doc["exit_code"] == 130 and doc["kladder_error"] is None
    else:
        assert not out.exists() and "kladder: interrupted before the climb started" in err


def test_several_specs_signalled_inside_an_imports_set_name_end_as_interrupted(tmp_path, specs, monkeypatch, capsys):
    from kladder.climbing import ladder

    def importing(*a, **k):
        exec(compile(SET_NAME, "<a module importing>", "exec"), {})
    monkeypatch.setenv("KLADDER_FORKSERVER", "0")
    refs = [str(specs / "two.py") + "::a", str(specs / "two.py") + "::b"]
    with monkeypatch.context() as m:                  # while the specs load
        m.setattr(many, "found", importing)
        assert many.climb_many(refs, args_of(*refs, "--no-history", "--device", "cpu")) == 130
    assert "kladder: interrupted before the climb started" in capsys.readouterr().err
    monkeypatch.setattr(ladder, "climb", importing)  # while the first spec climbs: the second is not climbed
    out = tmp_path / "many.json"
    code = many.climb_many(refs, args_of(*refs, "--no-history", "--device", "cpu", "--json", str(out)))
    doc = json.loads(out.read_text())
    assert code == 130 and doc["interrupted"] is True
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------------------- outputs that fail
def test_a_terminal_that_is_gone_loses_only_itself(capsys):
    def closed():
        raise BrokenPipeError(32, "Broken pipe")
    climb._say(closed)
    assert capsys.readouterr().err.startswith("kladder: error: the report could not be printed (Broken pipe); --json")


def test_an_html_file_that_cannot_be_written_is_said_after_the_verdict(tmp_path):
    (tmp_path / "afile").write_text("")
    failed = {}
    climb._write_html(str(tmp_path / "afile" / "r.html"), ClimbReport("s", "s.py", "cpu"), failed)
    assert failed["--html"].startswith("kladder: error: --html ") and "the verdict above stands" in failed["--html"]
    climb._write_html(str(tmp_path / "r.html"), ClimbReport("s", "s.py", "cpu"), failed)
    assert (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_the_climbed_device_without_ray_is_the_device_word(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert climb._climb_device(args_of("x", "--device", "cpu")) == "cpu"
    with pytest.raises(UsageProblem, match="--device 'gpu'"):
        climb._climb_device(args_of("x", "--device", "gpu"))


def test_say_writes_the_report(capsys):
    climb._say(lambda: sys.stdout.write("the report"))
    assert capsys.readouterr().out == "the report"


class _DeviceRefused(DeviceStartError):
    """The device refused (no nvidia-smi asked: the facts as devicestart would give them)."""

    @property
    def facts(self):
        return {"kind": "device", "what": self.what, "error": self.error, "waited_s": 3.0, "gpu": "0",
                "free_bytes": 0, "total_bytes": 80 << 30, "holders": [{"pid": 7, "name": "python", "used_bytes": 1 << 30}]}


def test_a_device_others_hold_is_a_start_error_with_exit_2(tmp_path, specs, monkeypatch, capsys):
    def refused(ref, args, report, started):
        raise _DeviceRefused("a CUDA context", "CUDA error: out of memory\nmore lines", gpu="0")
    monkeypatch.setattr(climb, "_climb_started", refused)
    out = tmp_path / "r.json"
    assert climb.cmd_climb(str(specs / "one.py"), args_of("x", "--json", str(out), "--no-history",
                                                          "--device", "cpu")) == 2
    doc = json.loads(out.read_text())
    err = doc["start_error"]
    assert (err["kind"], err["what"], err["error"], err["holders"][0]["pid"]) == ("device", "a CUDA context",
                                                                                 "CUDA error: out of memory", 7)
    assert capsys.readouterr().err == f"kladder: error: {err['message']}\n"
    assert all(not r["climbed"] for r in doc["rungs"])      # every rung asked for says it could not start


def test_history_options_without_history_give_no_store_and_lf_puts_last_failures_first(monkeypatch):
    from kladder.history import commands
    opts = types.SimpleNamespace(store="unset", first=None)
    started = {}
    climb._history_options(args_of("x", "--no-history"), opts, types.SimpleNamespace(name="s"), "s.py", started)
    assert opts.store is None and started == {"store": None} and opts.first is None
    monkeypatch.setattr(commands, "last_failures", lambda args, name, ref: (None, ["p1", "p2"]))
    climb._history_options(args_of("x", "--no-history", "--lf"), opts, types.SimpleNamespace(name="s"), "s.py")
    assert opts.first == frozenset({"p1", "p2"})
