"""Budgets for a commit and for a release (issue 32, item 5): `--budget commit` (the default) runs
rung 5's time-budgeted points short, `--budget release` the long ones; the report says which ran
and what the longer one would add, from each point's own calls and seconds."""
import json
import os
import sys

import pytest
from conftest import run_cli

from kladder.core.budgets import COMMIT, RELEASE, call_budget, even_odds_rate, longer, named, summary
from kladder.core.facts import RepeatsCleanFacts, StreamCleanFacts
from kladder.core.outcome import Note, NoteKind, Outcome, Status
from kladder.core.point import Point
from kladder.report.words import time_budget_text
from kladder.core.stats import calls_to_see

TRIVIAL = os.path.join(os.path.dirname(__file__), "specs", "trivial.py")


def _stream(calls: int, seconds: float, stopped: str) -> Outcome:
    p = Point("s", 5, (("N", 2),), kind="repeat", mode="calls", repeat=(("calls", 10_000), ("seconds", 1.0)))
    facts = StreamCleanFacts(calls=calls, judged=calls - 1, wrong=0, sets=calls, pattern="A", fresh=True, count=10_000,
                             declared=False, seconds=seconds, stopped=stopped, batched=True)
    return Outcome(p, Status.PASSED, note=Note(NoteKind.STREAM_CLEAN, facts))


def _repeat(calls: int, seconds: float, stopped: str, n: int = 3) -> Outcome:
    p = Point("s", 5, (("N", n),), kind="repeat", mode="repeat", repeat=(("calls", 100), ("seconds", 5.0)))
    facts = RepeatsCleanFacts(calls=calls, compared=calls - 1, firsts=1, differ=0, wrong=0, deterministic=False,
                              launch="eager", inputs="same", load=False, seconds=seconds, stopped=stopped)
    return Outcome(p, Status.PASSED, note=Note(NoteKind.REPEATS_CLEAN, facts))


def test_the_two_budgets_and_their_order():
    assert named(None) is COMMIT and named("release") is RELEASE and longer("commit") is RELEASE
    assert longer("release") is None
    assert call_budget("cuda") == COMMIT.repeat["cuda"] and call_budget("cuda", budget="release").seconds == 10.0
    assert call_budget("cpu", 40) .calls == 40                  # --repeat N still overrides either
    assert COMMIT.tools == ("memcheck",) and len(RELEASE.tools) == 4


def test_the_summary_says_what_ran_and_scales_what_a_time_budget_stopped():
    s = summary("commit", "cpu", [_repeat(100, 0.3, "calls"), _stream(2_000, 1.0, "seconds")])
    assert (s.name, s.longer, s.points, s.calls, s.most, s.most_point) == ("commit", "release", 2, 2_100, 2_000, "r5-N=2-calls")
    assert s.even_odds == pytest.approx(even_odds_rate(2_000)) and calls_to_see(s.even_odds, 0.5) == 2_000
    assert s.example == pytest.approx(1e-4) and s.example_calls == calls_to_see(1e-4, 0.5) == 6_932
    assert s.longer_most == 6_000                               # 1 s -> 3 s of the same calls a second
    assert s.longer_seconds == {"repeat": 5.0, "stream": 3.0}
    capped = summary("commit", "cuda", [_stream(90_000, 1.0, "seconds")])
    assert capped.longer_most == 100_000                        # up to the release budget's calls
    calls_bound = summary("commit", "cpu", [_repeat(100, 0.3, "calls")])
    assert calls_bound.longer_most == 100                       # calls stopped it: the same calls at release
    last = summary("release", "cpu", [_stream(6_000, 3.0, "seconds")])
    assert last.longer is None and last.longer_most == 0


def test_the_words_of_the_summary():
    text = time_budget_text(summary("commit", "cpu", [_repeat(100, 0.3, "calls"), _stream(2_000, 1.0, "seconds")]))
    assert text.startswith("budget commit: rung 5 made 2,100 calls over 2 points, at most 2,000 at one point "
                           "(r5-N=2-calls): even odds of seeing a failure rate of 1 in 2,900; a rate of 1 in 10,000 "
                           "needs 6,932 calls there. --budget release: about 6,000 calls there (even odds down to "
                           "1 in 8,700); 5 s a repetition point, the stream 3 s.")
    gpu = time_budget_text(summary("commit", "cuda", []))
    assert "--budget release" in gpu and "racecheck, initcheck, synccheck besides" in gpu
    assert time_budget_text(summary("release", "cpu", [])).startswith("budget release (the longest)")


def _climb(tmp_path, *extra):
    out = tmp_path / "r.json"
    p = run_cli([sys.executable, "-m", "kladder.tools.cli", "climb", TRIVIAL, "--device", "cpu", "--rungs", "5",
                        "--quiet", "--json", str(out), "--log", str(tmp_path / "l.jsonl"), *extra],
                       capture_output=True, text=True, timeout=600)
    return p, (json.loads(out.read_text()) if out.exists() else None)


def test_a_climb_runs_the_named_budget_and_says_so(tmp_path):
    p, doc = _climb(tmp_path, "--budget", "release")
    assert p.returncode == 0, p.stderr[-2000:]
    assert doc["budget"]["name"] == "release" and doc["budget"]["longer"] is None
    stream = next(x for x in doc["rungs"][4]["points"] if x["mode"] == "calls")
    assert dict(stream["point"]["repeat"])["seconds"] == RELEASE.stream_s["cpu"]
    assert "budget release (the longest): rung 5 made" in p.stdout
    p, doc = _climb(tmp_path)
    # what the longer budget adds: "about N calls there" where the commit budget's calls were cut by its
    # seconds, its stream's seconds and tools otherwise (a loaded machine decides which: the words, not the count)
    assert doc["budget"]["name"] == "commit" and doc["budget"]["longer"] == "release" and "--budget release: " in p.stdout
    stream = next(x for x in doc["rungs"][4]["points"] if x["mode"] == "calls")
    assert dict(stream["point"]["repeat"])["seconds"] == COMMIT.stream_s["cpu"]


def test_an_unknown_budget_is_a_usage_error(tmp_path):
    p, doc = _climb(tmp_path, "--budget", "weekly")
    assert p.returncode == 2 and "--budget" in p.stderr and "commit" in p.stderr and doc is None
    pts = run_cli([sys.executable, "-m", "kladder.tools.cli", "points", TRIVIAL, "--device", "cpu", "--rungs", "5",
                          "--budget", "release"], capture_output=True, text=True, timeout=600)
    assert pts.returncode == 0 and "10,000 calls or 3 s" in pts.stdout and "racecheck" not in pts.stdout.split("r5-")[0]
