"""`kladder history`, `kladder diff`, `kladder golden record`, `kladder report`, and the
--history / --no-history / --html / --golden options of climb and repro."""
from __future__ import annotations

import contextlib
import sys

from ..core.errors import UsageProblem

HISTORY_HELP = "the history file (default .kladder/history.sqlite, or $KLADDER_HISTORY)"


def add_store_options(p) -> None:
    """`kladder climb`'s options of the outcome store (history/outcomes.py), of -x and of --lf."""
    from .store import STORE_SIZE as DEFAULT_SIZE
    p.add_argument("--fresh", action="store_true", help="reuse no outcome from the store: run every point (this "
                   "climb's outcomes are kept for the next)")
    p.add_argument("--accumulate", action="store_true", help="run rung 5's clean repetition points again even where "
                   "their key is unchanged, adding their calls to those kept (the bound tightens with every climb)")
    p.add_argument("--store-size", type=int, default=DEFAULT_SIZE, metavar="N", help=f"outcomes the store keeps, the "
                   f"least recently used going first (default {DEFAULT_SIZE:,})")
    p.add_argument("-x", "--exitfirst", action="store_true", help="stop after the first rung with a failure (and, "
                   "with several specs, climb no spec after it)")
    p.add_argument("--lf", action="store_true", help="run last time's failures first (from the history): the specs "
                   "whose last climb failed, and in each rung the points that failed")


def outcome_store(args):
    """The outcome store of the history file (--history, $KLADDER_HISTORY, .kladder/history.sqlite),
    or None: --no-history, KLADDER_STORE=0, or a command without the store's options."""
    import os
    if not hasattr(args, "fresh") or getattr(args, "no_history", False) or os.environ.get("KLADDER_STORE") == "0":
        return None
    if args.store_size < 0:
        raise UsageProblem(f"--store-size {args.store_size}: give a number of outcomes, 0 or more (0 keeps none)")
    from .outcomes import OutcomeStore
    from .store import default_path
    return OutcomeStore(args.history or default_path(), size=args.store_size, fresh=args.fresh,
                        accumulate=args.accumulate)


def last_failures(args, spec: str, ref: str) -> tuple[int | None, list[str]]:
    """--lf: the spec's last climb in the history and its failed points' ids ((None, []) without one)."""
    from .store import History, HistoryError, default_path
    if getattr(args, "no_history", False):
        return None, []
    try:
        h = History(args.history or default_path())
    except HistoryError:
        return None, []
    try:
        return h.last_failures(spec, ref)
    finally:
        h.close()


def add_climb_options(p) -> None:
    p.add_argument("--history", metavar="PATH", help=HISTORY_HELP)
    p.add_argument("--no-history", action="store_true", help="do not record this climb in the history")
    p.add_argument("--html", metavar="FILE", help="write the report as one self-contained HTML file")
    p.add_argument("--golden", nargs="?", const="warn", choices=("warn", "strict"), metavar="strict",
                   help="compare each point's output bits with the golden hashes (`kladder golden record`): a "
                   "change is a warning, a failure with --golden=strict")


def add_parsers(sub) -> None:
    h = sub.add_parser("history", help="the climbs recorded, newest first, one line each")
    h.add_argument("spec", nargs="?", metavar="SPEC", help="only this spec's climbs (its name)")
    h.add_argument("--history", metavar="PATH", help=HISTORY_HELP)
    h.add_argument("-n", "--limit", type=int, default=50, metavar="N", help="at most N climbs (default 50)")
    h.add_argument("--html", metavar="FILE", help="write the climbs as one self-contained HTML file")
    d = sub.add_parser("diff", help="what changed between two climbs (default: the last two of the same spec); exit 1 "
                       "when a point newly fails (or, with --fail-on slower, a rung got slower beyond noise)")
    d.add_argument("a", nargs="?", metavar="A", help="a climb's number (#N in `kladder history`) or run id, or a "
                   "spec's name (its last two climbs)")
    d.add_argument("b", nargs="?", metavar="B", help="the later climb (default: the newest of A's spec)")
    d.add_argument("--history", metavar="PATH", help=HISTORY_HELP)
    d.add_argument("--json", metavar="PATH", help="write the diff as JSON to PATH")
    d.add_argument("--html", metavar="FILE", help="write the diff as one self-contained HTML file")
    d.add_argument("--fail-on", choices=("slower",), metavar="slower", help="exit 1 on a rung slower beyond noise too "
                   "(compared only on the same device at comparable load); a new failure always exits 1")
    d.add_argument("-v", "--verbose", action="store_true", help="list every point whose output bits changed")
    g = sub.add_parser("golden", help="golden output hashes for a (device, toolchain)")
    gsub = g.add_subparsers(dest="golden_cmd", required=True)
    gr = gsub.add_parser("record", help="keep the last finished climb's output hashes of SPEC as its golden ones")
    gr.add_argument("spec", metavar="SPEC", help="the spec's name (as `kladder history` shows it)")
    gr.add_argument("--history", metavar="PATH", help=HISTORY_HELP)
    gr.add_argument("--climb", metavar="N", help="this climb instead of the last finished one")
    r = sub.add_parser("report", help="render a climb's JSON report (--json) again: as HTML with --html")
    r.add_argument("json", metavar="REPORT.json")
    r.add_argument("--html", metavar="FILE", required=True, help="the HTML file to write")


def golden_check(report, args) -> None:
    """--golden: each point's bits against the golden hashes (history/golden.check), kept in
    the report (report.golden: facts.GoldenFacts) before it is written."""
    report.golden = None
    if not getattr(args, "golden", None) or report.start_error:
        return
    from .golden import check, unreadable
    from .record import point_row
    rows = [point_row(o) for o in report.outcomes]
    try:
        h = open_history(args)
    except UsageProblem as e:
        print(f"kladder: --golden: {e}", file=sys.stderr)
        report.golden = unreadable(rows, strict=args.golden == "strict")
        return
    from .store import HistoryError
    try:
        report.golden = check(h, report.spec, report.fingerprint, rows, strict=args.golden == "strict")
    except HistoryError as e:               # a damaged page: no golden hashes to read, never the end of the climb
        print(f"kladder: warning: --golden: {e}; the points are compared with none", file=sys.stderr)
        report.golden = unreadable(rows, strict=args.golden == "strict")
    finally:
        h.close()
    for row in h.damaged:                    # a golden row that is not what kladder wrote: that point has none
        print(f"kladder: warning: --golden: the history {h.path!r} is damaged: {row}; that row is left out (`kladder "
              "golden record` writes it again)", file=sys.stderr)


def open_history(args):
    from .store import History, HistoryError, default_path
    try:
        return History(args.history or default_path())
    except HistoryError as e:
        raise UsageProblem(f"--history: {e}") from None


FIX = ("move the file aside (the next climb or repro makes a new one; `sqlite3 FILE .recover` may save the rest) or give "
       "another --history PATH")


@contextlib.contextmanager
def reading(args):
    """The history opened for a command that reads it (history, diff, golden record): a damaged
    file (a garbage page, a row whose JSON is not kladder's) is exit 2 with the file, the first
    damaged row and what to do, never a traceback nor an answer drawn from half the rows."""
    from .store import HistoryError
    h = open_history(args)
    try:
        yield h
    except HistoryError as e:
        raise UsageProblem(f"--history: {e}; {FIX}") from None
    except UsageProblem:
        if not h.damaged:                    # "no climb #3": because its row is damaged, say that instead
            raise
    finally:
        h.close()
    damaged = list(dict.fromkeys(h.damaged))     # a row read twice is named once
    if damaged:
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        raise UsageProblem(f"--history {h.path!r} is damaged: {damaged[0]}{more}; {FIX}")


def cmd_history(args) -> int:
    from ..report.history_text import history_text
    with reading(args) as h:
        climbs = h.climbs(args.spec, limit=args.limit)
    sys.stdout.write(history_text(climbs))
    if getattr(args, "html", None):
        from ..report.html import history_html
        from .store import default_path
        _write_html(args.html, history_html(climbs, args.spec, args.history or default_path()))
    return 0


def _pick(h, a: str | None, b: str | None):
    from .diff import last_two
    if a is None or (b is None and h.climb(a) is None):
        pair = last_two(h, a)
        if pair is None:
            what = f"spec {a!r}" if a else "any spec"
            raise UsageProblem(f"the history has fewer than two climbs of {what}; climb twice first, or give two climbs' "
                               "numbers (`kladder history` lists them)")
        return pair
    ca = h.climb(a)
    if ca is None:
        raise UsageProblem(f"A: no climb {a!r} in the history; `kladder history` lists them (#N or the run id)")
    if b is None:
        later = [c for c in h.climbs(ca["spec"]) if c["kind"] == ca["kind"] and c["id"] > ca["id"]]
        if not later:
            raise UsageProblem(f"A: climb #{ca['id']} is the newest of {ca['spec']!r}; give B, an earlier climb as A")
        return ca, later[0]
    cb = h.climb(b)
    if cb is None:
        raise UsageProblem(f"B: no climb {b!r} in the history; `kladder history` lists them (#N or the run id)")
    return ca, cb


def cmd_diff(args) -> int:
    from ..report.history_text import diff_text
    from .diff import diff
    with reading(args) as h:
        a, b = _pick(h, args.a, args.b)
        d = diff(a, h.points(a["id"]), b, h.points(b["id"]), fail_on=(args.fail_on,) if args.fail_on else ())
    sys.stdout.write(diff_text(d, verbose=args.verbose))
    if args.json:
        from ..report.jsonout import dumps, write_atomic
        write_atomic(args.json, dumps(d.to_dict(), indent=1))
    if args.html:
        from ..report.html import diff_html
        _write_html(args.html, diff_html(d))
    return 1 if d.worse else 0


def cmd_golden(args) -> int:
    from .golden import record
    with reading(args) as h:
        result = record(h, args.spec, args.climb)
    if result is None:
        raise UsageProblem(f"SPEC: no finished climb of {args.spec!r} in the history; climb it first "
                           "(`kladder history` lists the specs climbed)")
    from ..report.history_text import golden_record_text
    sys.stdout.write(golden_record_text(result))
    return 0


def cmd_report(args) -> int:
    import json
    from ..report.html import report_html
    try:
        with open(args.json) as f:
            doc = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        raise UsageProblem(f"REPORT.json {args.json!r}: cannot read a report there ({e}); give the file a climb's "
                           "--json wrote") from None
    if not isinstance(doc, dict) or "rungs" not in doc:
        raise UsageProblem(f"REPORT.json {args.json!r}: not a climb's report (no 'rungs'); give the file a climb's --json "
                           "wrote")
    problem = report_problem(doc)
    if problem is None:
        try:
            text = report_html(doc)
        except (TypeError, KeyError, AttributeError, ValueError, IndexError, RecursionError) as e:
            problem = f"it cannot be drawn ({type(e).__name__}: {str(e)[:120]})"
    if problem is not None:
        raise UsageProblem(f"REPORT.json {args.json!r}: {problem}: not a report as kladder writes it; validate it "
                           "against docs/report.schema.json first (any JSON Schema validator), or give the file a "
                           "climb's --json wrote")
    _write_html(args.html, text)
    return 0


# What the page reads of a report, by type (docs/report.schema.json says all of it): a report
# edited by hand is refused naming the first field that is not so, before it is drawn.
OBJECT, LIST, TEXT, NUMBER = dict, list, str, (int, float)
REPORT_SHAPE = {"rungs": LIST, "fingerprint": (OBJECT, None), "golden": (OBJECT, None), "start_error": (OBJECT, None),
                "kladder_error": (OBJECT, None), "exit_code": (int, None), "spec": (TEXT, None)}
RUNG_SHAPE = {"points": LIST, "rung": int, "counts": (OBJECT, None), "verdict": (TEXT, None), "title": (TEXT, None),
              "seconds": (NUMBER, None)}
POINT_SHAPE = {"id": TEXT, "status": TEXT, "rung": int, "findings": (LIST, None), "warnings": (LIST, None),
               "note": (OBJECT, None), "point": (OBJECT, None), "stages": (OBJECT, None), "hashes": (OBJECT, None),
               "seconds": (NUMBER, None), "golden": (OBJECT, None)}
FINDING_SHAPE = {"check": TEXT, "facts": (OBJECT, None), "where": (OBJECT, None), "index": (LIST, None),
                 "output": (TEXT, None)}


def report_problem(doc: dict) -> str | None:
    """The first field of `doc` whose type is not a report's, as 'rungs[0].points[2] is a str,
    not an object', or None."""
    problem = _shape(doc, REPORT_SHAPE, "")
    for i, r in enumerate(doc["rungs"] if problem is None else ()):
        problem = problem or _shape(r, RUNG_SHAPE, f"rungs[{i}]")
        for j, p in enumerate(r["points"] if problem is None else ()):
            where = f"rungs[{i}].points[{j}]"
            problem = problem or _shape(p, POINT_SHAPE, where)
            for k, f in enumerate((p.get("findings") or []) if problem is None else ()):
                problem = problem or _shape(f, FINDING_SHAPE, f"{where}.findings[{k}]")
    return problem


def _shape(v, shape: dict, where: str) -> str | None:
    if not isinstance(v, dict):
        return f"{where or 'the report'} is {_a(v)}, not an object"
    for key, kinds in shape.items():
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        optional = None in kinds
        types = tuple(k for k in kinds if k is not None)
        if key not in v:
            if not optional:
                return f"{where + '.' if where else ''}{key} is missing"
            continue
        x = v[key]
        if (x is None and optional) or (isinstance(x, types) and not isinstance(x, bool)):
            continue
        want = " or ".join([_WORD[t] for t in types] + (["null"] if optional else []))
        return f"{where + '.' if where else ''}{key} is {_a(x)}, not {want}"
    return None


_WORD = {dict: "an object", list: "a list", str: "a string", int: "an integer", NUMBER: "a number"}


def _a(v) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null", bool: "true/false", int: "an integer",
            float: "a number"}.get(type(v), f"a {type(v).__name__}")


def _write_html(path: str, text: str) -> None:
    from ..report.jsonout import write_atomic
    try:
        write_atomic(path, text)
    except OSError as e:
        raise UsageProblem(f"--html {path!r}: cannot write it ({e.strerror or e}); give a file in a folder you can "
                           "write to") from None
