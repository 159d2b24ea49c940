"""kladder.tools.cli.debugging: bisect's, bench's and explore's option checks, their exit status
and their --json documents, in-process; git, the timing and the workers replaced by fakes."""
import json
import types

import pytest

from kladder.core.errors import UsageProblem
from kladder.report import debugging as words
from kladder.tools import bench as bench_mod
from kladder.tools import bisect as bisect_mod
from kladder.tools.cli import debugging
from kladder.tools.cli.parser import build_parser

POINT = '{"spec": "double", "rung": 1, "dims": [["N", 2]]}'
SPEC = '''import kladder as kl
spec = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
'''


@pytest.fixture
def spec_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    p = tmp_path / "one.py"
    p.write_text(SPEC)
    return str(p)


def parse(*argv):
    return build_parser().parse_args(list(argv))


class Result:
    def __init__(self, outcome="found", doc=None):
        self.outcome, self.doc = outcome, doc if doc is not None else {"outcome": outcome}

    def to_dict(self):
        return self.doc


@pytest.fixture
def fake_bisect(monkeypatch):
    fake = types.SimpleNamespace(calls=[], result=Result())

    def bisect(good, bad, ref, **kw):
        fake.calls.append((good, bad, ref, kw))
        if "raise" in ref:
            raise bisect_mod.BisectProblem("GOOD is not an ancestor of BAD")
        return fake.result
    monkeypatch.setattr(bisect_mod, "bisect", bisect)
    monkeypatch.setattr(words, "bisect_text", lambda r: f"bisect: {r.outcome}\n")
    return fake


@pytest.mark.parametrize("outcome,code", [("found", 0), ("interrupted", 130), ("not_found", 1), ("all_bad", 1)])
def test_bisects_exit_status_follows_its_outcome(fake_bisect, outcome, code, capsys):
    fake_bisect.result = Result(outcome)
    assert debugging.cmd_bisect(parse("bisect", "g", "b", "s.py", "--rungs", "1-2", "--device", "cpu")) == code
    assert capsys.readouterr().out == f"bisect: {outcome}\n"
    [(good, bad, ref, kw)] = fake_bisect.calls
    assert (good, bad, ref, kw["rungs"], kw["point"], kw["device"], kw["timeout_s"]) == ("g", "b", "s.py", "1-2", None,
                                                                                        "cpu", None)


def test_bisects_json_is_strict_and_written_whole(fake_bisect, tmp_path, capsys):
    fake_bisect.result = Result("found", {"outcome": "found", "ratio": float("nan"), "steps": [1, 2]})
    out = tmp_path / "b.json"
    debugging.cmd_bisect(parse("bisect", "g", "b", "s.py", "--point", POINT, "--device", "cpu", "--json", str(out)))
    assert json.loads(out.read_text()) == {"outcome": "found", "ratio": "NaN", "steps": [1, 2]}


@pytest.mark.parametrize("argv,says", [
    (["--point", "{bad"], "--point: cannot read a point from '{bad'"),
    (["--point", "{}"], "--point: Point: missing field(s)"),
    (["--rungs", "9"], "--rungs '9': rung 9 does not exist"),
    (["--rungs", "1", "--device", "tpu"], "--device 'tpu': use auto, cpu or cuda."),
])
def test_bisects_usage_problems_come_before_git(fake_bisect, argv, says):
    with pytest.raises(UsageProblem) as e:
        debugging.cmd_bisect(parse("bisect", "g", "b", "s.py", *argv))
    assert says in str(e.value)
    assert fake_bisect.calls == []


def test_bisects_own_problem_is_a_usage_problem(fake_bisect):
    with pytest.raises(UsageProblem, match="GOOD is not an ancestor of BAD"):
        debugging.cmd_bisect(parse("bisect", "g", "b", "raise.py", "--point", POINT, "--device", "cpu"))


def test_an_unwritable_json_is_refused_before_anything(fake_bisect, tmp_path):
    (tmp_path / "afile").write_text("")
    with pytest.raises(UsageProblem, match="--json .*cannot write there"):
        debugging.cmd_bisect(parse("bisect", "g", "b", "s.py", "--rungs", "1", "--json", str(tmp_path / "afile" / "x")))
    assert fake_bisect.calls == []


# ---------------------------------------------------------------------------- bench
@pytest.fixture
def fake_bench(monkeypatch):
    calls = []

    def bench(ref, against, **kw):
        calls.append((ref, against, kw))
        if kw.get("flops") == "bad":
            raise bench_mod.BenchProblem("--flops 'bad': not an expression of the dims")
        return Result("done", {"speedup": 1.5})
    monkeypatch.setattr(bench_mod, "bench", bench)
    monkeypatch.setattr(words, "bench_text", lambda r: "bench text\n")
    return calls


def test_bench_passes_its_options_and_writes_its_json(fake_bench, spec_file, tmp_path, capsys):
    out = tmp_path / "t.json"
    code = debugging.cmd_bench(parse("bench", spec_file, "--against", spec_file, "--point", POINT, "--device", "cpu",
                                     "--rounds", "3", "--calls", "2", "--warmup", "1", "--json", str(out)))
    assert code == 0 and capsys.readouterr().out == "bench text\n"
    [(ref, against, kw)] = fake_bench
    assert (ref, against) == (spec_file, spec_file)
    assert kw == {"point": POINT, "device": "cpu", "rounds": 3, "calls": 2, "warmup": 1, "flops": None}
    assert json.loads(out.read_text()) == {"speedup": 1.5}


def test_bench_checks_both_files_and_the_point_first(fake_bench, spec_file, tmp_path):
    missing = str(tmp_path / "other.py")
    with pytest.raises(UsageProblem, match="does not exist") as e:
        debugging.cmd_bench(parse("bench", spec_file, "--against", missing, "--device", "cpu"))
    assert repr(missing) in str(e.value)
    with pytest.raises(UsageProblem, match="--point: cannot read a point"):
        debugging.cmd_bench(parse("bench", spec_file, "--point", "[", "--device", "cpu"))
    with pytest.raises(UsageProblem, match="not an expression of the dims"):
        debugging.cmd_bench(parse("bench", spec_file, "--flops", "bad", "--device", "cpu"))
    assert len(fake_bench) == 1                              # only the last reached bench


# ---------------------------------------------------------------------------- explore
@pytest.mark.parametrize("rungs,says", [
    ("4", "--rungs '4': explore draws sizes (1), values (2) and layouts (3); give rungs from 1-3, e.g. --rungs 1-3"),
    ("1-5", "--rungs '1-5': explore draws sizes (1)"),
    ("one", "--rungs 'one': give rung numbers"),
])
def test_explore_refuses_rungs_it_does_not_draw_before_any_worker(spec_file, monkeypatch, rungs, says):
    from kladder.run import pool
    monkeypatch.setattr(pool, "Pool", lambda *a, **k: pytest.fail("a worker started for a usage problem"))
    with pytest.raises(UsageProblem) as e:
        debugging.cmd_explore(parse("explore", spec_file, "--rungs", rungs, "--device", "cpu"))
    assert str(e.value).startswith(says)


def test_explore_checks_the_file_and_the_device_first(tmp_path):
    with pytest.raises(UsageProblem, match="--device 'xpu'"):
        debugging.cmd_explore(parse("explore", str(tmp_path / "nope.py"), "--device", "xpu"))
    with pytest.raises(UsageProblem, match="does not exist"):
        debugging.cmd_explore(parse("explore", str(tmp_path / "nope.py"), "--device", "cpu"))


def test_write_doc_writes_nothing_without_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    debugging._write_doc(None, {"a": 1})
    debugging._write_doc("", {"a": 1})
    assert list(tmp_path.iterdir()) == []
    debugging._write_doc("d.json", {"a": float("inf"), "b": types.SimpleNamespace})
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["a"] == "Infinity" and isinstance(doc["b"], str)
