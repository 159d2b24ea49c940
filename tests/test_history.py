"""The history (SQLite): climbs recorded as they run, `kladder history`, `kladder diff`, golden
hashes; a climb killed with SIGKILL, and many writers at once, lose nothing committed."""
import json
import multiprocessing
import os
import pathlib
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import run_cli

from kladder.history.store import VERSION, History

SPEC = '''
import torch
import kladder as kl

def scale(x):
    y = x * 2
{edit}    return y

spec = kl.Spec("scale", kernel=scale, reference=lambda x: x * 2,
               args={{"x": kl.Tensor("M N", dtype=["float32"])}}, returns=kl.Tensor("M N", like="x"),
               dims={{"M": kl.Dim(1, 4), "N": kl.Dim(1, 8)}})
'''
BREAK_ONE = "    if tuple(x.shape) == (1, 1):\n        y = y + 1\n"          # one point now fails
NUDGE_BITS = "    if tuple(x.shape) == (4, 8):\n        y = y * (1 + 2 ** -23)\n"  # within tolerance, other bits


def kladder(cwd, *args, timeout=300):
    return run_cli([sys.executable, "-m", "kladder.tools.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def climb(tmp_path, edit, *extra):
    (tmp_path / "spec.py").write_text(SPEC.format(edit=edit))
    return kladder(tmp_path, "climb", "spec.py", "--device", "cpu", "--rungs", "1", "-j", "1", "--history", "h.sqlite",
                   "--log", os.devnull, *extra)


def test_diff_names_the_point_an_edit_broke_and_exits_1(tmp_path):
    p = climb(tmp_path, "")
    assert p.returncode == 0, p.stdout + p.stderr
    p = climb(tmp_path, BREAK_ONE + NUDGE_BITS, "--html", "r.html")
    assert p.returncode == 1, p.stdout + p.stderr
    page = (tmp_path / "r.html").read_text()
    assert "r1-M=1-N=1" in page and 'class="error-map"' in page and 'id="ladder"' in page
    h = kladder(tmp_path, "history", "--history", "h.sqlite")
    lines = h.stdout.splitlines()
    assert h.returncode == 0 and len(lines) == 2
    assert lines[0].startswith("#2") and " failed " in lines[0] and lines[1].startswith("#1") and " passed " in lines[1]
    d = kladder(tmp_path, "diff", "--history", "h.sqlite", "--json", "d.json")
    assert d.returncode == 1, d.stdout + d.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    assert [r["id"] for r in doc["newly_failing"]] == ["r1-M=1-N=1"]
    assert "r1-M=1-N=1: passed -> failed (values)" in d.stdout
    assert [r["id"] for r in doc["bits_changed"]] == ["r1-M=4-N=8"]    # passed both times, other bits
    assert doc["newly_passing"] == [] and doc["worse"]
    import jsonschema
    schema = json.loads((pathlib.Path(__file__).parent.parent / "docs" / "report.schema.json").read_text())
    jsonschema.validate(doc, {**schema, "oneOf": [{"$ref": "#/$defs/diff"}]})       # facts.DiffFacts
    back = kladder(tmp_path, "diff", "2", "1", "--history", "h.sqlite", "--html", "d.html")   # the other way round
    assert back.returncode == 0 and "newly passing (1)" in back.stdout, back.stdout + back.stderr
    assert "r1-M=1-N=1" in (tmp_path / "d.html").read_text()
    point = json.dumps({"spec": "scale", "rung": 1, "dims": [["M", 1], ["N", 1]], "dtypes": [["x", "float32"]]})
    r = kladder(tmp_path, "repro", "spec.py", point, "--device", "cpu", "--history", "h.sqlite")
    assert r.returncode == 1, r.stdout + r.stderr
    newest = kladder(tmp_path, "history", "--history", "h.sqlite").stdout.splitlines()[0]
    assert newest.startswith("#3") and "scale [repro]  failed  (1 point, 1 failed)" in newest
    assert kladder(tmp_path, "diff", "--history", "h.sqlite").returncode == 1     # the last two climbs, not the repro


def test_golden_round_trips_and_names_the_changed_point(tmp_path):
    """The terminal, the JSON and the exit status agree: --golden=strict fails a climb whose
    points all passed when bits changed (or nothing is kept to compare with), and the report
    says why (golden.fails, exit_code 1); --golden alone warns and exits 0."""
    none = climb(tmp_path, "", "--golden=strict", "--json", "r0.json")          # nothing kept yet
    assert none.returncode == 1, none.stdout + none.stderr
    doc = json.loads((tmp_path / "r0.json").read_text())
    assert doc["exit_code"] == 1 and doc["golden"]["recorded"] is None and doc["golden"]["fails"]
    assert len(doc["golden"]["not_kept"]) >= 4 and "no golden hashes of this spec" in none.stdout
    assert "golden: none kept (--golden=strict fails the climb)" in none.stdout
    g = kladder(tmp_path, "golden", "record", "scale", "--history", "h.sqlite")
    assert g.returncode == 0 and "kept from climb #1" in g.stdout, g.stdout + g.stderr
    same = climb(tmp_path, "", "--golden=strict", "--json", "r1.json")
    assert same.returncode == 0 and "bits equal to golden of" in same.stdout and "bits changed" not in same.stdout
    doc = json.loads((tmp_path / "r1.json").read_text())
    assert doc["exit_code"] == 0 and not doc["golden"]["fails"] and doc["golden"]["changed"] == []
    nudged = climb(tmp_path, NUDGE_BITS, "--golden=strict", "--json", "r.json", "--html", "r.html", "--log", "l.jsonl")
    assert nudged.returncode == 1, nudged.stdout + nudged.stderr                  # every point passed; strict fails it
    end = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()][-1]
    assert end["record"] == "end" and end["exit_code"] == 1       # the log's end record after the golden check
    assert "r1-M=4-N=8: bits changed since" in nudged.stdout
    assert "0 failed" in nudged.stdout and "golden: bits changed at 1 point (--golden=strict fails the climb)" in nudged.stdout
    doc = json.loads((tmp_path / "r.json").read_text())                            # typed, in the report itself
    g = doc["golden"]
    assert doc["exit_code"] == 1 and g["fails"] and all(r["verdict"] == "passed" for r in doc["rungs"] if r["climbed"])
    assert g["strict"] and g["changed"] == [{"id": "r1-M=4-N=8", "outputs": ["out"]}] and g["nondeterministic"] == []
    assert "r1-M=4-N=8" not in g["equal"] and len(g["equal"]) >= 3 and g["recorded"][:4].isdigit()
    by_id = {p["id"]: p["golden"] for r in doc["rungs"] for p in r["points"]}
    assert by_id["r1-M=4-N=8"] == {"bits": "changed", "since": g["recorded"], "outputs": ["out"]}
    assert by_id["r1-M=1-N=1"] == {"bits": "equal", "since": g["recorded"]}
    import jsonschema
    schema = json.loads(pathlib.Path(os.path.dirname(__file__), "..", "docs", "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    page = (tmp_path / "r.html").read_text()
    assert 'id="golden-changed"' in page and "<code>r1-M=4-N=8</code>" in page
    assert "failed (exit 1)" in page and "bits changed at 1 point" in page
    warned = climb(tmp_path, NUDGE_BITS, "--golden", "--json", "r2.json")
    assert warned.returncode == 0 and "bits changed since" in warned.stdout
    doc = json.loads((tmp_path / "r2.json").read_text())
    assert doc["exit_code"] == 0 and not doc["golden"]["fails"] and len(doc["golden"]["changed"]) == 1
    lines = kladder(tmp_path, "history", "--history", "h.sqlite").stdout.splitlines()
    verdicts = [line.split("  scale  ")[1].split("  ")[0] for line in lines]
    assert verdicts[0] == verdicts[2] == "passed"                  # the history's verdict is the exit status's, and
    assert re.fullmatch(r"failed \(--golden=strict: bits changed at 1 point since [0-9T:-]+\)", verdicts[1])   # why
    assert verdicts[3] == "failed (--golden=strict: no golden hashes kept)"
    page = kladder(tmp_path, "history", "--history", "h.sqlite", "--html", "h.html")
    assert page.returncode == 0 and "(--golden=strict: bits changed at 1 point since" in (tmp_path / "h.html").read_text()


def test_golden_keeps_and_compares_no_nondeterministic_point(tmp_path):
    """A point whose calls differ bit for bit is listed apart: never kept as golden, never
    compared, whatever its hashes."""
    from kladder.history.golden import check, record
    h = History(str(tmp_path / "h.sqlite"))
    fp = {"device_name": "cpu", "torch": "2.13"}
    c = h.begin("climb", "s", "s.py", "cpu", "0", "2026-01-01T00:00:00", "run-1", fp)
    for i, nondet in enumerate((False, False, True)):
        h.point(c, {"id": f"p{i}", "rung": 5, "status": "passed", "hashes": {"out": "a"}, "nondeterministic": nondet})
    h.end(c, "2026-01-01T00:01:00", "passed", 0, fp, "cpu", [])
    kept = record(h, "s")
    assert kept.kept == 2 and kept.nondeterministic == ["p2"]
    assert sorted(g["id"] for g in h.golden("s")) == ["p0", "p1"]
    rows = [{"id": "p0", "hashes": {"out": "a"}, "nondeterministic": False},
            {"id": "p1", "hashes": {"out": "b"}, "nondeterministic": False},
            {"id": "p2", "hashes": {"out": "zz"}, "nondeterministic": True}]
    g = check(h, "s", fp, rows, strict=True)
    assert g.equal == ["p0"] and [(x.id, x.outputs) for x in g.changed] == [("p1", ["out"])]
    assert g.nondeterministic == ["p2"] and g.fails
    assert not check(h, "s", fp, [rows[0], rows[2]], strict=True).fails          # only p2 differs: not compared
    h.close()


SLOW = '''
import time
import torch
import kladder as kl

def slow(x):
    time.sleep(0.3)
    return x * 2

spec = kl.Spec("slow", kernel=slow, reference=lambda x: x * 2,
               args={"x": kl.Tensor("M N", dtype=["float32"])}, returns=kl.Tensor("M N", like="x"),
               dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 256)})
'''


def test_history_survives_a_climb_killed_with_sigkill(tmp_path):
    path = str(tmp_path / "h.sqlite")
    h = History(path)
    before = h.begin("climb", "earlier", "e.py", "cpu", "0", "2026-01-01T00:00:00", "run-1", {})
    h.point(before, {"id": "r1-a", "rung": 1, "status": "passed", "hashes": {"out": "ab"}})
    h.end(before, "2026-01-01T00:01:00", "passed", 0, None, "cpu", [])
    (tmp_path / "slow.py").write_text(SLOW)
    proc = subprocess.Popen([sys.executable, "-m", "kladder.tools.cli", "climb", "slow.py", "--device", "cpu", "--rungs", "1",
                             "-j", "1", "--history", path, "--log", os.devnull, "-q"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            n = h.db.execute("SELECT COUNT(*) FROM points p JOIN climbs c ON c.id = p.climb_id WHERE c.spec = 'slow'").fetchone()[0]
            if n >= 2:
                break
            time.sleep(0.2)
        assert n >= 2, "the climb recorded no point in time"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)          # the climb and its workers, mid-climb
        proc.wait()
    h.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    h = History(path)
    climbs = h.climbs()
    assert [c["spec"] for c in climbs] == ["slow", "earlier"]
    assert climbs[1]["verdict"] == "passed" and h.points(climbs[1]["id"])[0]["hashes"] == {"out": "ab"}
    assert climbs[0]["ended"] is None and len(h.points(climbs[0]["id"])) >= 2
    h.close()
    out = kladder(tmp_path, "history", "--history", path).stdout
    assert "slow  unfinished" in out.splitlines()[0]


def _writer(path: str, name: str, n: int) -> None:
    h = History(path)
    c = h.begin("climb", name, name + ".py", "cpu", "0", "2026-01-01T00:00:00", f"run-{name}", {})
    for i in range(n):
        h.point(c, {"id": f"p{i}", "rung": 1, "status": "passed", "seconds": 0.1, "hashes": {"out": f"{i:x}"}})
    h.end(c, "2026-01-01T00:01:00", "passed", 0, None, "cpu", [{"rung": 1, "verdict": "passed", "seconds": 1.0}])
    h.close()


def test_processes_writing_one_history_at_once_lose_no_row(tmp_path):
    path, n = str(tmp_path / "h.sqlite"), 150
    ctx = multiprocessing.get_context("spawn")          # fresh processes, as xdist workers and parallel climbs are
    procs = [ctx.Process(target=_writer, args=(path, f"w{k}", n)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 4
    h = History(path)
    climbs = h.climbs()
    assert sorted(c["spec"] for c in climbs) == ["w0", "w1", "w2", "w3"]
    for c in climbs:
        pts = h.points(c["id"])
        assert [p["id"] for p in pts] == [f"p{i}" for i in range(n)] and c["verdict"] == "passed"
        assert [p["hashes"]["out"] for p in pts] == [f"{i:x}" for i in range(n)]
    assert h.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    h.close()


def test_an_older_history_is_migrated_and_a_newer_one_refused(tmp_path):
    from kladder.history.store import MIGRATIONS, HistoryError, _statements
    path = str(tmp_path / "h.sqlite")
    db = sqlite3.connect(path)
    for s in _statements(MIGRATIONS[0]):
        db.execute(s)
    db.execute("INSERT INTO climbs (kind, spec, ref, started) VALUES ('climb', 'old', 'old.py', '2025-01-01T00:00:00')")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    h = History(path)
    assert h.db.execute("PRAGMA user_version").fetchone()[0] == VERSION
    assert [c["spec"] for c in h.climbs()] == ["old"]                  # version 1's rows kept
    h.close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match="newer kladder"):
        History(path)


def test_a_history_that_cannot_be_written_never_stops_the_climb(tmp_path):
    (tmp_path / "h.sqlite").write_text("not a database, " * 100)
    p = climb(tmp_path, "")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "history" in p.stderr and "goes on without it" in p.stderr


def test_the_same_code_climbed_beside_a_cpu_bound_process_is_not_worse(tmp_path):
    """Issue 33's gate: two climbs of the same code, the second beside CPU-bound processes (one a
    core), give exit 0 even with --fail-on slower: the load each point ran beside is recorded, and
    a slowdown at unlike load is not compared."""
    p = climb(tmp_path, "")
    assert p.returncode == 0, p.stdout + p.stderr
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        p = climb(tmp_path, "")
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert p.returncode == 0, p.stdout + p.stderr
    d = kladder(tmp_path, "diff", "--history", "h.sqlite", "--fail-on", "slower", "--json", "d.json")
    assert d.returncode == 0, d.stdout + d.stderr
    doc = json.loads((tmp_path / "d.json").read_text())
    t = doc["timing"]
    assert t["load_a"]["points"] > 0 and t["load_b"]["points"] > 0, t
    assert t["load_b"]["others_cores"] > 0.5, t                         # the hogs were seen beside the points
    assert not doc["worse"] and d.stdout.splitlines()[-1].startswith("not worse"), d.stdout
    assert doc["slower_rungs"] == [] or t["compared"]


def test_diff_with_too_few_climbs_is_a_usage_error(tmp_path):
    p = kladder(tmp_path, "diff", "--history", str(tmp_path / "h.sqlite"))
    assert p.returncode == 2 and "fewer than two climbs" in p.stderr


def _pts(seconds, status="passed", hashes=None, nondet=False, cores=0.1, wait=0.0, kernel=None):
    """Points as the history reads them: each ran beside `cores` other cores busy, its worker waiting
    `wait` of its time for a CPU; `kernel`: the kernel's stage seconds (else none timed)."""
    return [{"id": f"p{i}", "rung": 1, "status": status, "failure": None, "seconds": s,
             "stages": {} if kernel is None else {"kernel": kernel[i], "reference": s - kernel[i]},
             "hashes": hashes or {"out": "a"}, "nondeterministic": nondet, "point": None,
             "load": {"seconds": s, "host_cpu_s": cores * s, "worker_wait_s": wait * s, "lanes": 0, "processes": 0}}
            for i, s in enumerate(seconds)]


A, B = {"id": 1, "device": "cpu", "toolchain": {}}, {"id": 2, "device": "cpu", "toolchain": {}}
BASE = [0.5, 0.6, 0.55, 0.7, 0.52, 0.61, 0.58, 0.66, 0.5, 0.63]


def test_a_rung_is_slower_only_beyond_noise():
    from kladder.history.diff import diff
    a, b = A, B
    base = BASE
    twice = diff(a, _pts(base), b, _pts([2 * s for s in base]))
    assert [s.rung for s in twice.slower_rungs] == [1] and twice.timing.compared
    assert not twice.worse                                                  # a slowdown fails the gate only when asked
    assert diff(a, _pts(base), b, _pts([2 * s for s in base]), fail_on=("slower",)).worse
    assert twice.slower_rungs[0].ratio > 1.9 and twice.slower_rungs[0].p < 0.01
    noisy = [s * f for s, f in zip(base, [1.6, 0.7, 1.5, 0.8, 1.4, 0.75, 1.3, 0.9, 1.5, 0.8], strict=True)]
    assert diff(a, _pts(base), b, _pts(noisy)).slower_rungs == []          # some slower, some faster: noise
    one = base[:-1] + [base[-1] * 20]
    assert diff(a, _pts(base), b, _pts(one)).slower_rungs == []            # one slow point is not a slower rung
    few = diff(a, _pts(base[:4]), b, _pts([3 * s for s in base[:4]]))
    assert few.slower_rungs == []                                           # too few pairs to tell


def test_timings_at_unlike_load_or_device_are_not_compared():
    """Issue 33: the same code climbed twice, the second time beside a busier machine, was 'worse:
    rung 3 slower x1.96'. Load that differs past the limits, another device, or no load recorded:
    the timing is not compared, and the words say why."""
    from kladder.history.diff import diff
    from kladder.report.history_text import diff_text
    slow = [2 * s for s in BASE]
    busy = diff(A, _pts(BASE), B, _pts(slow, cores=1.8, wait=0.45), fail_on=("slower",))
    assert busy.slower_rungs == [] and not busy.worse and busy.timing.why == "load"
    assert busy.timing.differed == ["others_cores", "wait_share"]
    text = diff_text(busy)
    assert "timing not compared: load differed (other processes kept 1.80 cores busy on average during #2, 0.10 " \
           "during #1; #2's workers waited for a CPU 45% of the time, #1's 0%)" in text, text
    assert text.splitlines()[-1] == "not worse"
    other = diff(A, _pts(BASE), {**B, "device": "cuda", "toolchain": {"device": "NVIDIA H100"}}, _pts(slow))
    assert other.timing.why == "device" and other.slower_rungs == []
    assert "timing not compared: the device differed (#1 on cpu, #2 on cuda (NVIDIA H100))" in diff_text(other)
    old = [{k: v for k, v in p.items() if k != "load"} for p in _pts(BASE)]
    unknown = diff(A, old, B, _pts(slow))
    assert unknown.timing.why == "not_recorded" and "not recorded for #1" in diff_text(unknown)


def test_a_slowdown_within_each_climbs_own_spread_is_not_called_slower():
    """Comparable load (the waits within 10 points of each other) where both climbs' points waited
    for a CPU half their time: a x1.9 ratio is within the x2 their waits alone can stretch."""
    from kladder.history.diff import diff
    d = diff(A, _pts(BASE, wait=0.45), B, _pts([1.9 * s for s in BASE], wait=0.5), fail_on=("slower",))
    assert d.timing.compared and d.slower_rungs == [] and not d.worse
    e = diff(A, _pts(BASE, wait=0.05), B, _pts([1.9 * s for s in BASE], wait=0.05), fail_on=("slower",))
    assert [s.rung for s in e.slower_rungs] == [1] and e.worse and e.slower_rungs[0].spread_b < 1.1


def test_the_kernels_own_stage_is_what_is_timed():
    """A point whose reference got slower (kladder's own stage) did not slow the kernel."""
    from kladder.history.diff import diff
    kernel = [0.1 * s for s in BASE]
    d = diff(A, _pts(BASE, kernel=kernel), B, _pts([3 * s for s in BASE], kernel=kernel))
    assert d.slower_rungs == []
    e = diff(A, _pts(BASE, kernel=kernel), B, _pts([3 * s for s in BASE], kernel=[3 * k for k in kernel]))
    assert e.slower_rungs == [] or e.slower_rungs[0].kernel_stage     # 0.3 s more in all: under MIN_S
    f = diff(A, _pts([5 * s for s in BASE], kernel=[4 * s for s in BASE]), B,
             _pts([15 * s for s in BASE], kernel=[12 * s for s in BASE]))
    assert [s.kernel_stage for s in f.slower_rungs] == [True]


def test_bits_changed_where_points_still_pass_are_one_line_unless_verbose():
    from kladder.history.diff import diff
    from kladder.report.history_text import diff_text
    d = diff(A, _pts([0.1] * 162), B, _pts([0.1] * 162, hashes={"out": "b"}))
    text = diff_text(d)
    assert "output bits changed at 162 points (162 passing in both); --verbose lists them" in text, text
    assert "p17" not in text and len(text.splitlines()) < 6
    assert "  p17: out (passed -> passed)" in diff_text(d, verbose=True)


def test_nondeterministic_outputs_are_never_compared_bit_for_bit():
    from kladder.history.diff import diff
    a, b = A, B
    d = diff(a, _pts([0.1] * 3, nondet=True), b, _pts([0.1] * 3, hashes={"out": "b"}))
    assert d.bits_changed == [] and d.nondeterministic == ["p0", "p1", "p2"] and not d.worse
    d = diff(a, _pts([0.1] * 3), b, _pts([0.1] * 3, hashes={"out": "b"}))
    assert [r.id for r in d.bits_changed] == ["p0", "p1", "p2"] and not d.worse


def test_history_as_a_page_lists_the_climbs_newest_first_escaped(tmp_path):
    path = str(tmp_path / "h.sqlite")
    h = History(path)
    for k, (spec, verdict) in enumerate((("scale", "passed"), ("<script>x()</script>", "failed"), ("scale", None))):
        c = h.begin("climb", spec, "s.py", "cpu", "0.1.0", f"2026-01-0{k + 1}T00:00:00", f"run-{k}",
                    {"device_name": "cpu", "torch": "2.13"})
        h.point(c, {"id": "p0", "rung": 1, "status": "failed" if verdict == "failed" else "passed", "hashes": {}})
        if verdict:
            h.end(c, "2026-01-01T00:01:00", verdict, 0 if verdict == "passed" else 1, None, "cpu", [])
    h.close()
    p = kladder(tmp_path, "history", "--history", path, "--html", "h.html")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 3, p.stdout + p.stderr
    page = (tmp_path / "h.html").read_text()
    rows = re.findall(r"<tr><td>#(\d+)</td>", page)
    assert rows == ["3", "2", "1"] and 'id="history"' in page
    assert "<script>x()" not in page and "&lt;script&gt;x()&lt;/script&gt;" in page
    assert 'class="v-failed">failed' in page and 'class="v-unfinished">unfinished' in page and "torch 2.13" in page
    one = kladder(tmp_path, "history", "scale", "--history", path, "--html", "s.html")
    assert one.returncode == 0 and re.findall(r"<tr><td>#(\d+)</td>", (tmp_path / "s.html").read_text()) == ["3", "1"]
