"""The HTML report: one self-contained file rendered from the JSON report, every written
string escaped, and the page checked in a real browser (headless Chromium: screenshots not
blank, the ladder and the error map there, no console message)."""
import base64
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import run_cli

from kladder.core.outcome import Status
from kladder.core.results import ClimbReport, RungReport
from kladder.report.html import report_html
from kladder.report.jsonout import report_dict, strict
from kladder.report.terminal import render_text

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "golden"))
HOSTILE = '<script>alert("x")</script><b onmouseover="y()">bold</b>\x1b[31m\x00\x07&amp; $\\frac{1}{$'  # markup, a script, ANSI and C0 controls, mathtext


def golden_doc(name: str) -> dict:
    from make import report_of
    with open(os.path.join(HERE, "golden", name + ".json")) as f:
        return strict(report_dict(report_of(json.load(f))))


def passing_doc() -> dict:
    """A real climb's passing points (the zoo's rmsnorm climb, its passing points only)."""
    from make import report_of
    with open(os.path.join(HERE, "golden", "rmsnorm_n_tail.json")) as f:
        report = report_of(json.load(f))
    for r in report.rungs:
        r.outcomes = [o for o in r.outcomes if o.status == Status.PASSED]
    return strict(report_dict(report))


def rate_doc() -> dict:
    """Rung 5 for real: a launcher wrong every 10th call, and a clean one (tests/test_rung5.py's)."""
    from test_rung5 import Calls, _double, _every_tenth_drops_the_tail, _repeat_point, _right

    from kladder.run.trial import run_point
    Calls.n = 0
    bad = run_point(_double(_every_tenth_drops_the_tail), _repeat_point(), "cpu").outcome
    good = run_point(_double(_right), _repeat_point(calls=40), "cpu").outcome
    report = ClimbReport("double", "tests/test_rung5.py", "cpu", device_name="cpu", started="2026-12-02T00:00:00",
                         kladder_version="0.1.0")
    report.rungs.append(RungReport(5, "repetition", [bad, good], seconds=1.0))
    return strict(report_dict(report))


@pytest.fixture(scope="module")
def stream_report():
    """Rung 5's stream for real (tests/specs/stream_state.py): ring_bad, wrong from call 1,025 on
    (its ring of 1,024 slots wraps), 1,100 calls; ring_good's 40 clean calls."""
    from test_calls import _load, _stream
    bad = _stream(_load("ring_bad"), calls=1100, seconds=120.0)
    good = _stream(_load("ring_good"), calls=40, seconds=120.0)
    assert bad.status == "failed" and good.status == "passed", (bad.note, good.note)
    report = ClimbReport("ring_bad", "tests/specs/stream_state.py::ring_bad", "cpu", device_name="cpu",
                         started="2026-12-02T00:00:00", kladder_version="0.1.0")
    report.rungs.append(RungReport(5, "repetition", [bad, good], seconds=1.0))
    return report


def _hostile_doc() -> dict:
    doc = golden_doc("rmsnorm_n_tail")
    doc["spec"], doc["ref"] = HOSTILE, HOSTILE
    doc["fingerprint"] = {"env": {"TRITON_X": HOSTILE}, "torch": HOSTILE}
    for r in doc["rungs"]:
        for p in r["points"]:
            p["id"], p["why"], p["output"], p["repro"], p["reason"] = HOSTILE, HOSTILE, HOSTILE, HOSTILE, HOSTILE
            p["warnings"] = [HOSTILE]
            for f in p["findings"]:
                f["message"], f["output"], f["pattern"], f["call"] = HOSTILE, HOSTILE, HOSTILE, HOSTILE
                f["facts"] = {**f["facts"], "text": HOSTILE}
            if p["status"] == "passed":
                p["status"], p["reason"] = "skipped", HOSTILE
    return doc


@pytest.mark.filterwarnings("error")                         # no glyph warning: the maps' titles get no control character
def test_every_string_a_user_or_a_kernel_wrote_is_escaped():
    html = report_html(_hostile_doc())
    assert html.count("<script") == 1                         # the page's own copy button, nothing else
    assert "<b onmouseover" not in html and 'alert("x")' not in html
    assert "&lt;script&gt;alert(" in html and "&lt;b onmouseover=" in html
    assert "&amp;amp;" in html                                 # an entity written by the kernel stays text
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", html)
    assert "\\x1b[31m\\x00\\x07" in html                       # control characters shown, not passed on


def test_the_page_is_self_contained():
    html = report_html(golden_doc("rmsnorm_n_tail"))
    links = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert links and all(u.startswith("data:image/png;base64,") for u in links)
    assert "default-src 'none'" in html                        # the browser refuses any fetch the page might try
    assert "http://" not in html and "https://" not in html


def test_a_failure_has_its_error_maps_worst_element_and_repro():
    doc = golden_doc("padding_scale_read")
    html = report_html(doc)
    failed = [p for r in doc["rungs"] for p in r["points"] if p["status"] in ("failed", "flaky")]
    assert failed and all(p["id"] in html for p in failed)
    assert html.count('class="error-map"') >= 1 and "worst element" in html
    assert all(p["repro"].replace("'", "&#39;").replace('"', "&#34;") in html for p in failed)
    assert html.count('class="copy"') == len(failed)
    for uri in re.findall(r'class="error-map" alt="[^"]*" src="data:image/png;base64,([^"]+)"', html):
        import matplotlib.image
        img = matplotlib.image.imread(io.BytesIO(base64.b64decode(uri)), format="png")
        assert img.shape[0] > 50 and img.shape[1] > 50


def test_the_map_folds_a_big_output_and_marks_its_tile_grid():
    from kladder.report.maps import MAX_COLS, MAX_ROWS, grid
    where = {"kind": "block", "rows": ["every"], "cols": {"first": 4096 - 3, "last": 4095, "n": 4096, "tile_note": ["N", 8, 3]}}
    cells, fold, n_rows, n_cols, _ = grid(where, [3, 1000, 4096])
    assert (n_rows, n_cols) == (3000, 4096) and len(cells) <= MAX_ROWS and len(cells[0]) <= MAX_COLS
    assert fold == [-(-3000 // MAX_ROWS), -(-4096 // MAX_COLS)] or tuple(fold) == (-(-3000 // MAX_ROWS), -(-4096 // MAX_COLS))
    assert all(row[-1] == 2 and row[0] == 0 for row in cells)            # the last columns, every row
    cells, *_ , unlocated = grid({"kind": "whole_rows", "ids": [1, 5], "n_bad": 9, "n_rows": 10}, [10, 4])
    assert [r[0] for r in cells] == [0, 2, 0, 0, 0, 2, 0, 0, 0, 0] and unlocated == {"rows_not_located": 7}


def test_the_map_draws_an_even_sample_of_scattered_wrong_elements_at_their_own_rows():
    """A scattered failure over a big output, its rows sampled (a big point checks some rows): the
    pattern keeps an even sample of the wrong elements as indices into the whole output, each one
    really wrong, spread over the wrong rows; the map draws them all, not only the first, and says
    how many are left undrawn."""
    import torch

    from kladder.checks.pattern import SAMPLE, Where, describe
    from kladder.report.maps import WRONG, grid
    from kladder.core.outcome import _pattern_dict
    g = torch.Generator().manual_seed(0)
    bad = torch.rand(400, 1000, generator=g) < 0.01                    # ~4,000 wrong of the 400 rows checked
    bad[:50] = False                                                   # none in the first 50 checked rows
    rows = list(range(0, 40000, 100))                                  # the checked rows of a 40,000-row output
    p = describe(bad, Where(("M", "N"), row_ids={0: rows}))
    assert p.kind == "scattered" and 100 <= len(p.sample) <= SAMPLE
    for m, n in p.sample:                                              # each an index into the whole output, wrong there
        assert m % 100 == 0 and bad[m // 100, n]
    ms = sorted(m for m, _ in p.sample)
    assert ms[0] < 8000 and ms[-1] > 35000                             # spread over the wrong rows (5,000 .. 39,900)
    cells, (fr, _), *_, unlocated = grid(_pattern_dict(p), [40000, 1000])
    wrong_rows = {r for r, row in enumerate(cells) if WRONG in row}
    assert len(wrong_rows) > 50 and min(wrong_rows) * fr >= 5000 - fr
    assert unlocated["elements_drawn"] == len(set(p.sample) | {p.first})
    assert unlocated["elements_not_located"] == p.n_bad - unlocated["elements_drawn"]
    whole = describe(torch.ones(30, 8, dtype=torch.bool).index_fill_(0, torch.arange(0, 30, 3), False), Where(("M", "N")))
    assert whole.kind == "whole_rows" and whole.n_bad == 20 and len({m for m, _ in whole.sample}) == 20
    cells, *_, unlocated = grid(_pattern_dict(whole), [30, 8])
    assert unlocated == {"rows_not_located": 0} and sum(WRONG in row for row in cells) == 20


def test_rung5_shows_the_rate_with_its_interval_and_the_curve():
    html = report_html(rate_doc())
    assert "rate <b>0.1</b> (95% CI 0.0" in html and html.count('class="rate-curve"') == 2
    assert "the rate of a wrong call is below" in html


def test_rung5_s_stream_shows_its_first_wrong_call_and_its_rate(stream_report):
    """The stream's finding (StreamFacts): its first wrong call, its rate with the interval and the
    curve, in the page as in the terminal; the clean stream's bound in the proved section."""
    x = stream_report.outcomes[0].findings[0].facts
    assert x.first_wrong == 1025 and x.judged == 1099
    html = report_html(strict(report_dict(stream_report)))
    assert 'the first wrong call is <b class="first-wrong">call 1,025</b> (step 257 of the pattern AABB, input set A)' in html
    assert f"{x.wrong:,} of 1,099 calls of the stream wrong" in html and "wrong calls 1,025, 1,026," in html
    assert f"rate <b>{x.rate:.2g}</b> (95% CI {x.lo:.2g} to {x.hi:.2g})" in html
    assert html.count('class="rate-curve"') == 2                               # the failure's and the clean one's
    assert "0 of 39 calls of the stream wrong against the reference of their own inputs; the rate of a wrong call is " \
           f"below {stream_report.outcomes[1].note.facts.bound:.2g} (95% confidence)" in html
    text = render_text(stream_report)
    assert "the first is call 1,025 (step 257, input set A)" in text and f"Rate {x.rate:.2g} (95% CI" in text
    assert "0 of 39 calls wrong against the reference of their own inputs" in text


def test_kladder_report_renders_a_json_file(tmp_path):
    src, out = tmp_path / "r.json", tmp_path / "r.html"
    src.write_text(json.dumps(golden_doc("flaky")))
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "report", str(src), "--html", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "FLAKY" in out.read_text()
    bad = run_cli([sys.executable, "-m", "kladder.tools.cli", "report", str(tmp_path / "none.json"), "--html", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "REPORT.json" in bad.stderr


# ---------------------------------------------------------------------------- in a real browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NEEDS = pytest.mark.skipif(not CHROMIUM and not os.environ.get("KLADDER_REQUIRE_BROWSER"),
                           reason="headless Chromium not installed (Debian's chromium; .ci/run installs it)")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--window-size=1200,1800", "--force-device-scale-factor=1"]


def _browse(html_path, *args) -> subprocess.CompletedProcess:
    assert CHROMIUM, "KLADDER_REQUIRE_BROWSER is set and no chromium is installed: apt-get install -y chromium"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={html_path.parent / 'profile'}", *args,
                           html_path.as_uri()], capture_output=True, text=True, timeout=120)


def _shoot(tmp_path, name: str, doc: dict):
    """The page rendered: its DOM after the scripts ran, its screenshot (RGB array), and the
    console's messages (none may come: a script error, a blocked fetch, a CSP violation)."""
    import matplotlib.image
    page = tmp_path / f"{name}.html"
    page.write_text(report_html(doc))
    dom = _browse(page, "--dump-dom")
    shot = tmp_path / f"{name}.png"
    run = _browse(page, f"--screenshot={shot}")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() + run.stderr.splitlines() if ":CONSOLE" in line]
    return dom.stdout, matplotlib.image.imread(str(shot))[..., :3], console, shot


def _not_blank(img) -> None:
    assert img.std() > 0.05                                   # not one colour
    assert (img[:600].min(axis=2) < 0.5).mean() > 0.005       # dark pixels at the top: the title and the ladder's text


@NEEDS
def test_in_chromium_a_passing_climb(tmp_path):
    dom, img, console, _ = _shoot(tmp_path, "passing", passing_doc())
    assert console == []
    _not_blank(img)
    assert 'id="ladder"' in dom and "passed (exit 0)" in dom and "Failures" not in dom


@NEEDS
def test_in_chromium_a_zoo_failure_with_its_map(tmp_path):
    dom, img, console, shot = _shoot(tmp_path, "failure", golden_doc("rmsnorm_n_tail"))
    assert console == []
    _not_blank(img)
    assert 'id="ladder"' in dom and 'class="error-map"' in dom and "copy</button>" in dom
    red = (abs(img[..., 0] - 0xc0 / 255) < 0.02) & (abs(img[..., 1] - 0x39 / 255) < 0.02) & (abs(img[..., 2] - 0x2b / 255) < 0.02)
    assert red.sum() > 2000                                   # the map's wrong cells, on screen
    if os.environ.get("KLADDER_SCREENSHOTS"):                 # docs/html/ keeps this one and the rate's (README)
        shutil.copy(shot, os.path.join(os.environ["KLADDER_SCREENSHOTS"], "html-failure.png"))


@NEEDS
def test_in_chromium_a_rung5_rate(tmp_path):
    dom, img, console, shot = _shoot(tmp_path, "rate", rate_doc())
    assert console == []
    _not_blank(img)
    assert 'class="rate-curve"' in dom and "rate <b>0.1</b>" in dom
    if os.environ.get("KLADDER_SCREENSHOTS"):
        shutil.copy(shot, os.path.join(os.environ["KLADDER_SCREENSHOTS"], "html-rate.png"))


def test_golden_bits_are_typed_in_the_json_and_shown_with_the_nondeterministic_apart():
    from make import report_of

    from kladder.core.facts import GoldenFacts
    with open(os.path.join(HERE, "golden", "rmsnorm_n_tail.json")) as f:
        report = report_of(json.load(f))
    ids = [o.point.id for o in report.outcomes]
    report.golden = GoldenFacts(recorded="2026-12-01T09:00:00", target={"triton": "3.5"},
                                toolchain={"triton": ["3.5", "3.6"]}, strict=False, fails=False, equal=ids[2:],
                                changed=[{"id": ids[0], "outputs": ["out"]}], not_kept=[], nondeterministic=[ids[1]])
    doc = strict(report_dict(report))
    points = {p["id"]: p for r in doc["rungs"] for p in r["points"]}
    assert points[ids[0]]["golden"] == {"bits": "changed", "since": "2026-12-01T09:00:00", "outputs": ["out"]}
    assert points[ids[1]]["golden"] == {"bits": "nondeterministic", "since": "2026-12-01T09:00:00"}
    assert points[ids[2]]["golden"]["bits"] == "equal" and doc["golden"]["nondeterministic"] == [ids[1]]
    html = report_html(doc)
    assert "bits changed since 2026-12-01T09:00:00 (toolchain: triton 3.5 -> 3.6)" in html
    assert f"Not compared, their outputs are nondeterministic (1): <code>{ids[1]}</code>" in html
    assert f"{len(ids) - 2} points' bits equal to golden of 2026-12-01T09:00:00" in html


def test_the_map_marks_the_first_row_past_a_size_cliff_from_the_typed_fact():
    """last_tile_wrap's shape (aiter #6397: M = 14134 rows of N = 151936 float32): the rows checked
    around 2^31 bytes wrong from the first that starts past it; the finding carries the output's
    cliffs as data (facts.cliffs), the map draws the row, never parsed from the point's why."""
    import torch

    from kladder.checks.pattern import Where
    from kladder.checks.values import compare
    from kladder.report.jsonout import finding_dict
    from kladder.report.maps import cliff_marks, error_map
    from kladder.core.spec import DEFAULT_TOLERANCES
    M, N = 14134, 151936
    first_past = -(-(1 << 29) // N)                                       # 2^31 bytes = 2^29 float32 elements
    rows = [0, 1, first_past - 2, first_past - 1, first_past, first_past + 1, M - 1]
    ref = torch.randn(len(rows), 64, dtype=torch.float64)                # 64 columns of each checked row stand in
    out = ref.to(torch.float32)
    out[4:] = 0                                                           # every row from the first past the cliff
    f = compare("out", out, ref, DEFAULT_TOLERANCES["float32"], Where(("M", "N"), row_ids={0: rows}),
                {"dtype": "float32", "shape": [M, N], "mode": "eager"})
    d = finding_dict(f)
    assert d["facts"]["cliffs"] == [[31, "bytes", 1 << 29], [32, "bytes", 1 << 30]]
    marks = cliff_marks(d["facts"]["cliffs"], M, N)
    assert [(m["axis"], m["at"], m["labels"]) for m in marks] == [("row", first_past, ["2^31 bytes"]),
                                                                   ("row", -(-(1 << 30) // N), ["2^32 bytes"])]
    drawn = error_map(d["where"], [M, N], d["index"], "last_tile_wrap", d["facts"]["cliffs"])
    plain = error_map(d["where"], [M, N], d["index"], "last_tile_wrap")
    assert drawn["cliffs"] == marks and plain["cliffs"] == [] and drawn["png"] != plain["png"]
    assert cliff_marks([[31, "bytes", 1 << 29]], 1, 1 << 30) == [{"axis": "col", "at": 1 << 29, "labels": ["2^31 bytes"]}]
    assert cliff_marks([[31, "bytes", 1 << 29]], 2, 1 << 28) == []       # past its last row: nothing to mark
    doc = golden_doc("rmsnorm_n_tail")
    p = next(p for r in doc["rungs"] for p in r["points"] if p["status"] == "failed")
    p["findings"] = [strict(d)]
    html = report_html(doc)
    assert f"Dashed: the first row past 2^31 bytes (row {first_past:,})." in html


def test_the_budget_is_one_line_and_its_derivation_a_details_element():
    import torch

    from kladder.checks import peer
    from kladder.checks.pattern import Where
    from kladder.checks.values import compare
    from kladder.report.jsonout import finding_dict
    from kladder.core.spec import DEFAULT_TOLERANCES
    g = torch.Generator().manual_seed(3)
    ref = 100 * torch.randn(8, 256, generator=g, dtype=torch.float64)
    wrong = ref.to(torch.float32)
    wrong[2, 5] *= 1.01
    f = compare("y", wrong, ref, DEFAULT_TOLERANCES["float32"], Where(("M", "N")),
                {"dtype": "float32", "shape": [8, 256], "mode": "eager"}, peer=ref.to(torch.float32),
                unit=peer.UNIT_ROUNDOFF["float32"])
    doc = golden_doc("rmsnorm_n_tail")
    p = next(p for r in doc["rungs"] for p in r["points"] if p["status"] == "failed")
    p["findings"] = [strict(finding_dict(f))]
    html = report_html(doc)
    line = p["findings"][0]["budget"]
    assert line.startswith("allowed ") and "= float32 default (a float32 implementation is off by" in line
    assert line in html
    details = html.index('<details class="budget"><summary>how the budget was set</summary>')
    assert html.index(line) < details and "the honest peers allow no more" in html[details:details + 600]


@NEEDS
def test_in_chromium_rung5_s_stream(tmp_path, stream_report):
    dom, img, console, _ = _shoot(tmp_path, "stream", strict(report_dict(stream_report)))
    assert console == []
    _not_blank(img)
    assert 'id="ladder"' in dom and 'class="first-wrong">call 1,025</b>' in dom and 'class="rate-curve"' in dom
    band = [0.6 * c / 255 + 0.4 for c in (0xf4, 0xb1, 0x83)]    # maps.rate_curve's interval, alpha 0.6 on white
    orange = (abs(img[..., 0] - band[0]) < 0.03) & (abs(img[..., 1] - band[1]) < 0.03) & (abs(img[..., 2] - band[2]) < 0.03)
    assert orange.sum() > 2000                                # the curves' interval bands, on screen


# ---------------------------------------------------------------------------- issue 33: a report people look at
def _failed_report(name: str):
    from make import report_of
    with open(os.path.join(HERE, "golden", name + ".json")) as f:
        return report_of(json.load(f))


@pytest.mark.parametrize("name", ["rmsnorm_n_tail", "padding_scale_read", "assumes_contiguous", "faulty", "flaky"])
def test_the_page_groups_the_failures_exactly_as_the_terminal_does(name):
    """One grouping function (report/data.failure_groups) for both: the page once put 20 points in
    one group where the terminal showed two (it keyed on the pattern's kind, the terminal on its
    shape)."""
    from kladder.report.data import failure_groups
    report = _failed_report(name)
    groups = failure_groups(report.failures)
    html = report_html(strict(report_dict(report)))
    assert html.count('<div class="group">') == len(groups)
    text = render_text(report)
    for g in groups:                                          # each group's first point heads it on both
        assert g[0].point.id in html and g[0].point.id in text
        if len(g) > 1:
            assert f"and {len(g) - 1} more like it" in html


def test_two_pattern_shapes_of_one_kind_are_two_groups_on_the_page():
    """Two block failures of one check and output, one in the last columns (a tile's remainder) and
    one in the first: two groups in the terminal, two on the page."""
    from kladder.core.facts import ValuesFacts
    from kladder.core.outcome import Check, Finding, Largest, Outcome, Pattern, Span
    from kladder.core.point import Point
    from kladder.report.data import failure_groups

    def failed(n, cols):
        p = Point("s", 1, (("M", 4), ("N", n)))
        f = Finding(Check.VALUES, "y", pattern=Pattern("block", cols=cols, rows=("every",)), mismatched=4, total=4 * n,
                    largest=Largest((0, n - 1), 1.0, 2.0, 0.01), facts=ValuesFacts())
        return Outcome(p, Status.FAILED, [f], repro=f"kladder repro s {n}")
    outs = [failed(n, Span(n - n % 8, n - 1, n, ("N", 8, n % 8))) for n in (9, 17, 25)]
    outs += [failed(n, Span(0, 1, n)) for n in (40, 48)]
    report = ClimbReport("s", "s.py", "cpu", started="2026-12-06T00:00:00", kladder_version="0.1.0")
    report.rungs.append(RungReport(1, "shapes", outs, seconds=1.0))
    assert [len(g) for g in failure_groups(report.failures)] == [3, 2]
    html = report_html(strict(report_dict(report)))
    assert html.count('<div class="group">') == 2
    assert "and 2 more like it" in html and "and 1 more like it" in html
    assert "3 points: M = 4, N = 9..25 (N % 8 != 0)" in html           # the terminal's words for what a group stands for


def test_similar_points_fold_into_one_card_that_opens():
    """Forty near-identical cards made a 14,000-pixel page: a group's first point is shown, the rest
    folded in a <details> that opens to them (every repro still in the page)."""
    from kladder.core.facts import ValuesFacts
    from kladder.core.outcome import Check, Finding, Largest, Outcome, Pattern, Span
    from kladder.core.point import Point
    outs = []
    for n in range(9, 9 + 8 * 20, 8):
        f = Finding(Check.VALUES, "y", pattern=Pattern("block", cols=Span(n - 1, n - 1, n, ("N", 8, 1)), rows=("every",)),
                    mismatched=4, total=4 * n, largest=Largest((0, n - 1), 1.0, 2.0, 0.01), facts=ValuesFacts())
        outs.append(Outcome(Point("s", 1, (("M", 4), ("N", n))), Status.FAILED, [f], repro=f"kladder repro s N={n}"))
    report = ClimbReport("s", "s.py", "cpu", started="2026-12-06T00:00:00", kladder_version="0.1.0")
    report.rungs.append(RungReport(1, "shapes", outs, seconds=1.0))
    html = report_html(strict(report_dict(report)))
    head, _, folded = html.partition('<details class="more"><summary>and 19 more like it')
    assert folded and "kladder repro s N=9" in head and "kladder repro s N=17" not in head
    assert all(f"kladder repro s N={n}" in folded for n in range(17, 9 + 8 * 20, 8))
    assert html.count('<details class="more">') == 1


def test_a_dense_failure_is_drawn_as_a_density_not_a_samples_stripes():
    """94% of each row's elements wrong: the pattern keeps the share of wrong elements per cell, and
    the map draws it (every cell of the wrong rows dense) instead of an even sample of 256 indices
    (regular stripes that read like a periodic column bug)."""
    import torch

    from kladder.checks.pattern import Where, describe
    from kladder.core.outcome import _pattern_dict
    from kladder.report.maps import density, error_map, grid
    g = torch.Generator().manual_seed(0)
    bad = torch.rand(17, 2880, generator=g) < 0.94
    p = describe(bad, Where(("M", "N")))
    assert p.kind == "runs" and p.density
    where = json.loads(json.dumps(_pattern_dict(p)))
    cells, fold = density(where, [17, 2880])
    assert fold == (1, 45) and len(cells) == 17 and all(len(r) == 64 for r in cells)
    assert min(min(r) for r in cells) >= 80 and max(max(r) for r in cells) <= 100     # dense everywhere: no stripes
    sampled, *_ = grid(where, [17, 2880])
    assert sum(c == 2 for c in sampled[0]) < len(sampled[0]) / 2                      # what the sample drew: stripes
    m = error_map(where, [17, 2880], [3, 100], "r2-M=17-N=2880: out")
    assert m["density"] and m["fold"] == [1, 45]
    sparse = torch.zeros(100, 70, dtype=torch.bool)
    sparse[3, 5] = sparse[50, 69] = True
    q = describe(sparse, Where(("M", "N")))
    assert q.kind == "scattered" and q.density[:2] == (4, 2)
    assert [(i, j, v) for i, r in enumerate(q.density[2]) for j, v in enumerate(r) if v] == [(0, 2, 13), (12, 34, 13)]
    checked = describe(bad, Where(("M", "N"), row_ids={0: list(range(0, 1700, 100))}))
    assert checked.density == ()                                      # some rows checked: the cells would not be the output's


def test_the_page_has_the_smallest_failing_points_with_what_decides_them():
    doc = golden_doc("rmsnorm_n_tail")
    doc["shrunk"] = [{
        "rung": 2, "failed_id": "r2-M=17-N=513-x:huge", "from": {}, "check": "values", "method": "", "runs": 14,
        "complete": True, "passes_at": {}, "smallest": {"spec": "s", "rung": 2, "dims": [["M", 1], ["N", 1]],
                                                        "values": [["x", "huge"]]},
        "smallest_id": "r2-M=1-N=1-x:huge", "cannot_shrink": None, "repro": "kladder repro s.py '{...}' --device cpu",
        "cause": {"kind": "values", "values": [["x", "huge"]], "milder": "passed", "milder_at": [["M", 17], ["N", 513]],
                  "floors": True, "every_shape": True, "shapes": 12, "edges": []}}]
    html = report_html(doc)
    assert 'id="smallest"' in html and "Smallest failing points" in html
    assert "fails for x: huge at every shape tried (12), down to M = 1, N = 1" in html
    assert "kladder repro s.py &#39;{...}&#39; --device cpu" in html
