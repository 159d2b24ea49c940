"""kladder.tools.cli.repro: the point's text, the --save folder and the spec checked before any
run, in-process; the run itself (a worker, or this process) replaced where it would start."""
import os

import pytest

from kladder.core.errors import UsageProblem
from kladder.core.point import Point
from kladder.tools.cli import repro
from kladder.tools.cli.parser import build_parser

SPEC = '''import kladder as kl
spec = kl.Spec("double", kernel=lambda x: 2 * x, reference=lambda x: 2 * x,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 3)})
'''
POINT = '{"spec": "double", "rung": 1, "dims": [["N", 2]]}'


@pytest.fixture
def spec_file(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "unchanged")       # _cpu_first sets it: put back after
    p = tmp_path / "one.py"
    p.write_text(SPEC)
    return str(p)


def parse(*argv):
    return build_parser().parse_args(["repro", *argv])


@pytest.fixture
def runs(monkeypatch):
    seen = []
    monkeypatch.setattr(repro, "_repro", lambda args, point: seen.append(("worker", point)) or 0)
    monkeypatch.setattr(repro, "_debug_repro", lambda args, point: seen.append(("here", point)) or 1)
    return seen


def test_a_point_runs_through_the_runner_and_pdb_or_save_here(runs, spec_file, tmp_path):
    assert repro.cmd_repro(parse(spec_file, POINT, "--device", "cpu")) == 0
    assert repro.cmd_repro(parse(spec_file, POINT, "--device", "cpu", "--pdb")) == 1
    save = tmp_path / "new" / "dir"
    assert repro.cmd_repro(parse(spec_file, POINT, "--device", "cpu", "--save", str(save))) == 1
    assert [how for how, _ in runs] == ["worker", "here", "here"]
    assert all(p == Point("double", 1, (("N", 2),)) for _, p in runs)
    assert save.is_dir()                                     # made before the run


@pytest.mark.parametrize("argv,says", [
    (["{bad", "--device", "tpu"], "--device 'tpu': use auto, cpu or cuda."),          # the device's word first
    (["{bad", "--device", "cpu"], "POINT: cannot read a point from '{bad'"),
    (["{}", "--device", "cpu"], "POINT: Point: missing field(s) ['dims', 'rung', 'spec']"),
    (['{"spec": "double", "rung": 1, "dims": [["N", 2]], "mode": "warp"}', "--device", "cpu"], "POINT: "),
])
def test_usage_problems_before_any_run(runs, spec_file, argv, says):
    with pytest.raises(UsageProblem) as e:
        repro.cmd_repro(parse(spec_file, *argv))
    assert str(e.value).startswith(says)
    assert runs == []


def test_a_missing_spec_file_is_said_before_the_point(runs, tmp_path):
    with pytest.raises(UsageProblem, match="does not exist"):
        repro.cmd_repro(parse(str(tmp_path / "nope.py"), "{bad", "--device", "cpu"))


def test_save_refuses_a_file_where_the_folder_goes(runs, spec_file, tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    with pytest.raises(UsageProblem) as e:
        repro.cmd_repro(parse(spec_file, POINT, "--device", "cpu", "--save", str(f)))
    assert str(e.value) == f"--save {str(f)!r}: a file is there; give a folder (made if missing)."
    assert runs == []


def test_checked_dir_cannot_make_a_folder_under_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(UsageProblem, match=r"--save .*: cannot make the folder \(Not a directory\); give a folder"):
        repro._checked_dir("--save", str(tmp_path / "f" / "sub"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder")
def test_checked_dir_refuses_a_folder_it_cannot_write(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(UsageProblem, match="the folder is not writable"):
        repro._checked_dir("--save", str(ro))


def test_checked_dir_accepts_an_existing_folder(tmp_path):
    assert repro._checked_dir("--save", str(tmp_path)) is None


# ---------------------------------------------------------------------------- the spec and the point
def test_a_point_of_another_spec_is_refused_naming_both(spec_file):
    args = parse(spec_file, "{}", "--device", "cpu")
    with pytest.raises(UsageProblem) as e:
        repro._repro_spec(args, Point("softmax", 1, (("N", 2),)))
    assert str(e.value) == "POINT belongs to spec 'softmax', not 'double'; check PATH::NAME."


@pytest.mark.parametrize("point,says", [
    (Point("double", 1, (("N", 99),)), "POINT dims: 'N' is 99, outside the spec's range 1..3"),
    (Point("double", 1, (("M", 2),)), "POINT dims: 'M' is not a dim of spec 'double'"),
    (Point("double", 1, (("N", 2),), dtypes=(("x", "float16"),)), "POINT dtypes: 'x' is 'float16'"),
])
def test_a_point_the_spec_does_not_declare_is_a_usage_problem(spec_file, point, says):
    with pytest.raises(UsageProblem) as e:
        repro._repro_spec(parse(spec_file, "{}", "--device", "cpu"), point)
    assert str(e.value).startswith(says)


def test_on_the_cpu_this_process_is_set_up_as_a_worker_before_torch(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    repro._cpu_first("cuda")
    assert "TRITON_INTERPRET" not in os.environ and os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    repro._cpu_first("cpu")
    assert os.environ["TRITON_INTERPRET"] == "1" and os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_parsed_point_reads_the_dict_a_report_prints():
    p = Point("double", 1, (("N", 2),), seed=7)
    assert repro._parsed_point(repr(p)) == p
    assert repro._parsed_point(p.to_json()) == p


def test_a_repro_is_recorded_in_the_history_as_a_climb_of_one_point(tmp_path):
    from kladder.core.outcome import Outcome, Status
    from kladder.history.store import History
    path = str(tmp_path / "h.sqlite")
    args = parse("s.py::double", "{}", "--history", path)
    point = Point("double", 2, (("N", 2),))
    spec = type("S", (), {"name": "double"})()
    repro._record_repro(args, spec, "cpu", "2026-01-01T00:00:00", Outcome(point, Status.FAILED), {"kladder": "x"})
    h = History(path)
    try:
        [climb] = h.climbs()
        assert (climb["kind"], climb["spec"], climb["ref"], climb["device"], climb["exit_code"]) == \
            ("repro", "double", "s.py::double", "cpu", 1)
        [row] = h.points(climb["id"])
        assert (row["id"], row["rung"], row["status"]) == (point.id, 2, "failed")
    finally:
        h.close()


def test_no_history_records_nothing(tmp_path):
    from kladder.core.outcome import Outcome, Status
    args = parse("s.py", "{}", "--history", str(tmp_path / "h.sqlite"), "--no-history")
    repro._record_repro(args, type("S", (), {"name": "d"})(), "cpu", "", Outcome(Point("d", 1, (("N", 1),)),
                                                                                  Status.PASSED), {})
    assert not (tmp_path / "h.sqlite").exists()
