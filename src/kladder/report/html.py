"""The report as one self-contained HTML file (`climb --html`, `kladder report R.json --html`):
CSS, the copy button's script and every picture (maps.py, PNG as data: URIs) inline, nothing
fetched. Its input is the JSON report (jsonout.report_dict, or the file a climb wrote), so a
report from another machine renders the same. Jinja2 with autoescape: every string a user
or a kernel wrote (ids, why, messages, what the kernel printed) is escaped, and control
characters are shown as \\xNN, never passed to the page."""
from __future__ import annotations

from . import maps

BAD = ("failed", "flaky")
UNJUDGED = ("skipped", "not_judged", "broken", "oom")
MAX_MAPS = 40             # error maps beyond each group's first point (a zoo climb's hundreds of failures)
RATE_CHECKS = ("repeats", "nondeterministic", "stream")     # rung 5's: a rate, its interval, the calls-to-see curve
PROVED = ("repeats_clean", "stream_clean")                   # rung 5's passing points: the bound they proved
RATE_FACTS = ("rate", "lo", "hi", "conf", "bound", "calls_50", "calls_95", "calls", "compared", "differ", "wrong",
              "bitwise", "judged", "first_wrong", "first_calls", "step", "letter", "pattern", "declared", "undecided",
              "truncated", "stopped", "seconds")
# C0 controls but tab, newline and carriage return, and DEL: each as the four characters \xNN
CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f]}


def _clean(v):
    """What Jinja2 prints: strings with control characters written as \\xNN (escaped after)."""
    if isinstance(v, str):
        return v.translate(CONTROL)
    return "" if v is None else v


def _env():
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("kladder.report", "templates"), autoescape=True,
                             finalize=_clean, undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _num
    env.filters["sig"] = lambda v: f"{v:.2g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else _clean(v)
    env.filters["secs"] = lambda s: f"{s:.2f} s" if isinstance(s, (int, float)) else _clean(s)
    return env


def _num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:.6g}"


def _outcome(p: dict):
    """A point of the JSON report as the Outcome that report/data.py's grouping reads (its point,
    status and findings with their patterns and facts), or None where the record cannot be read
    back as one (a report from another kladder): such a point is a group of its own."""
    from ..core.outcome import Finding, Outcome, Status
    from ..core.point import Point
    try:
        findings = [Finding.from_dict({"check": f["check"], "output": f.get("output", ""), "call": f.get("call", ""),
                                       "pattern": f.get("where"), "mismatched": f.get("mismatched", 0),
                                       "total": f.get("total", 0), "facts": f.get("facts")})
                    for f in p.get("findings") or []]
        return Outcome(Point.from_dict(p["point"]), Status(p["status"]), findings)
    except (KeyError, TypeError, ValueError):
        return None


def _groups(points: list[dict]) -> list[list[dict]]:
    """The failed points grouped exactly as the terminal groups them (data.failure_groups), each
    group with the words of the points it stands for."""
    from .data import failure_groups
    outcomes = [(p, _outcome(p)) for p in points]
    readable = [o for _, o in outcomes if o is not None]
    back = {id(o): p for p, o in outcomes if o is not None}
    groups = [[back[id(o)] for o in g] for g in failure_groups(readable)]
    return groups + [[p] for p, o in outcomes if o is None]


def _finding_view(f: dict, p: dict, budget: list, first: bool) -> dict:
    view = {"f": f, "map": None, "curve": None}
    facts = f.get("facts") or {}
    if (first or budget[0] > 0) and f.get("where"):
        view["map"] = maps.error_map(f["where"], facts.get("shape"), f.get("index"),
                                     f"{p['id']}: {f['output'] or f['check']}", facts.get("cliffs"))
        budget[0] -= view["map"] is not None and not first
    if f["check"] in RATE_CHECKS and facts.get("curve"):
        view["curve"] = maps.rate_curve(facts["curve"], f"{p['id']}: calls to see it")
    view["rate"] = {"check": f["check"], **{k: facts.get(k) for k in RATE_FACTS}} if f["check"] in RATE_CHECKS else None
    return view


def _failures(points: list[dict]) -> list[dict]:
    from . import words
    budget = [MAX_MAPS]
    out, n = [], 0
    for members in _groups(points):
        views = []
        for p in members:
            n += 1
            views.append({"p": p, "n": n, "findings": [_finding_view(f, p, budget, p is members[0]) for f in p["findings"]]})
        readable = [o for o in (_outcome(p) for p in members) if o is not None]
        like = words.points_text(readable) if len(readable) > 1 else ""
        out.append({"first": members[0], "members": views, "points": like})
    return out


def _rates(points: list[dict]) -> list[dict]:
    """Rung 5's passing points: what they proved (the bound on the rate, its interval); a
    stream's (stream_clean) counts the calls judged against their own reference."""
    out = []
    for p in points:
        note = p.get("note") or {}
        if p["rung"] == 5 and note.get("kind") in PROVED:
            facts = note.get("facts") or {}
            out.append({"p": p, "kind": note["kind"], "facts": facts,
                        "curve": maps.rate_curve(facts.get("curve"), f"{p['id']}: calls to see it")})
    return out


def report_html(doc: dict) -> str:
    points = [p for r in doc.get("rungs", []) for p in r.get("points", [])]
    from .words.shrinking import shrunk_lines
    view = {"doc": doc, "rungs": doc.get("rungs", []),
            "failures": _failures([p for p in points if p["status"] in BAD]),
            "shrunk": [{"lines": shrunk_lines(s, repro=False), "repro": s.get("repro") if s.get("smallest_id") not in
                        (None, s.get("failed_id")) else None} for s in doc.get("shrunk") or [] if "rung" in s],
            "unjudged": [p for p in points if p["status"] in UNJUDGED],
            "warned": [p for p in points if p["status"] not in BAD and p.get("warnings")],
            "rates": _rates(points), "max_maps": MAX_MAPS, "fingerprint": doc.get("fingerprint") or {},
            "verdict": {0: "passed", 1: "failed", 2: "could not start", 5: "nothing ran", 130: "interrupted"}.get(
                doc.get("exit_code"), f"exit {doc.get('exit_code')}")}
    return _env().get_template("report.html.j2").render(**view)


def diff_html(d) -> str:
    """`kladder diff --html` (facts.DiffFacts), its sentences history_text's."""
    from .history_text import bits_lines, slower_line, timing_text, verdict_line
    bits = bits_lines(d, False, more="")
    return _env().get_template("diff.html.j2").render(
        d=d, verdict=verdict_line(d), timing=timing_text(d), slower=[slower_line(s) for s in d.slower_rungs],
        bits=bits[0] if bits else "")


def history_html(climbs: list[dict], spec: str | None = None, path: str | None = None) -> str:
    """`kladder history --html`: the climbs (history/store.History.climbs), newest first."""
    from .history_text import golden_reason
    return _env().get_template("history.html.j2").render(climbs=climbs, spec=spec, path=path, golden_reason=golden_reason)
