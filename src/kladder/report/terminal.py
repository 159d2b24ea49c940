"""The ladder in the terminal (rich). Returns text; the CLI prints it.

Every piece is a rich Text built from kladder's own styles and literal strings: nothing a
user wrote (a path, a point's dims, an exception's message, a kernel's prints) is ever parsed
as markup, and control characters in it (an ANSI escape, an OSC-8 hyperlink) are shown as
escapes, not obeyed. Failures that differ only in where their dims sit are shown once, with
the points they stand for; the JSON lists every point with its repro."""
from __future__ import annotations

import io
from collections import defaultdict

from ..core.outcome import Check, NoteKind, Outcome, Replay, Status
from . import words
from ..core.results import ClimbReport, RungReport
from .data import bias_group, failure_groups, note_group, note_key, reason_group
from .history_text import golden_check_text, golden_summary_text
from .words.base import counted

PASSED, FAILED, FLAKY, SKIPPED, OOM, BROKEN = (Status.PASSED, Status.FAILED, Status.FLAKY, Status.SKIPPED, Status.OOM,
                                               Status.BROKEN)
NOT_JUDGED = Status.NOT_JUDGED
VERDICT_STYLE = {"failed": "bold red", "passed": "green", "incomplete": "yellow", "interrupted": "bold yellow",
                 "nothing ran": "yellow", "not climbed": "dim"}
SHOWN_IDS = 6               # ids listed under a group of failures (the JSON has them all)
OUTPUT_LINES = 12           # lines of a failed point's output shown


def literal(s) -> str:
    """`s` with every control character but newline and tab shown as an escape (\\x1b), so a
    string from outside cannot move the cursor, change colours or open a hyperlink."""
    s = str(s)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in s)


def _text(*parts):
    """A rich Text from (string, style) pairs and plain strings, each taken literally."""
    from rich.text import Text
    t = Text()
    for p in parts:
        if isinstance(p, Text):
            t.append_text(p)
        elif isinstance(p, tuple):
            t.append(literal(p[0]), style=p[1])
        else:
            t.append(literal(p))
    return t


def _console(buf, color: bool, width: int):
    from rich.console import Console
    # soft_wrap: a repro command must stay one line, so that it pastes as it is
    return Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False,
                   soft_wrap=True, markup=False, emoji=False)


def render_text(report: ClimbReport, color: bool = False, width: int = 120, verbose: bool = False) -> str:
    """The report; `verbose` (-v) adds each budget's derivation under its one line."""
    buf = io.StringIO()
    console = _console(buf, color, width)
    for part in renderables(report, verbose):
        console.print(part)
    return buf.getvalue()


def renderables(report: ClimbReport, verbose: bool = False) -> list:
    parts = [_header(report), _ladder_table(report)]
    if any(rr.waits for rr in report.rungs):
        parts.append(_waited(report))
    failures = report.failures
    if failures:
        parts.append(_text(("\n" + counted(len(failures), "failed point"), "bold red")))
        parts += [_joined(_failure_lines(group[0], group[1:], verbose=verbose)) for group in failure_groups(failures)]
    if report.shrunk:
        parts.append(_shrunk(report.shrunk))
    other = [o for o in report.outcomes if o.status in (OOM, BROKEN, NOT_JUDGED)]
    if other:
        parts.append(_text(("\nPoints that could not be judged", "bold yellow")))
        parts += _not_judged(other)
    skipped = [o for o in report.outcomes if o.status == SKIPPED]
    if skipped:
        parts.append(_skips(skipped))
    warned = [o for o in report.outcomes if o.warnings]
    if warned:
        parts.append(_warnings(warned))
    ran = [o for o in report.outcomes if o.note is not None and o.note.kind == NoteKind.RAN]
    if ran:
        parts.append(_ran(ran))
    proved = [o for o in report.outcomes if o.status == PASSED and o.note is not None and o.note.kind in PROVED]
    if proved:
        parts.append(_proved(proved))
    if report.budget is not None:
        parts.append(_text("\n" + words.time_budget_text(report.budget)))
    if report.golden is not None:
        parts.append(_text(("\n" + golden_check_text(report.golden).rstrip("\n"), "bold red" if report.golden.fails else "")))
    parts.append(_summary(report))
    return parts


def _header(report: ClimbReport):
    where = report.device_name or report.device
    if report.device == "cpu":
        where = "cpu (Triton interpreter)"
    lines = [_text(("kladder climb", "bold"), f" {report.ref}  on {where}  (kladder {report.kladder_version})")]
    if report.fingerprint:
        lines.append(_text(f"  env: {words.fingerprint_text(report.fingerprint)}"))
        lines += [_text("  ", ("warning:", "bold yellow"), f" {words.target_warning_text(w)}")
                  for w in report.fingerprint.get("warnings", [])]
    return _joined(lines)


def _ladder_table(report: ClimbReport):
    from rich.table import Table
    t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col, just in (("rung", "right"), ("gap", "left"), ("points", "right"), ("passed", "right"),
                      ("failed", "right"), ("skipped", "right"), ("other", "right"), ("time", "right"),
                      ("verdict", "left")):
        t.add_column(col, justify=just)
    for rr in report.rungs:
        t.add_row(*_ladder_row(rr, report.stopped_at))
    return t


def _waited(report: ClimbReport):
    lines = [_text(("\nWaited", "bold"), " (a lane idle before its point could run):")]
    lines += [_text(f"  rung {rr.rung}: {words.waits_text(rr.waits)}") for rr in report.rungs if rr.waits]
    return _joined(lines)


def _verdict(rr: RungReport):
    return _text((rr.verdict.upper() if rr.verdict == "failed" else rr.verdict, VERDICT_STYLE.get(rr.verdict, "")))


def _ladder_row(rr: RungReport, stopped_at: int | None = None) -> list:
    if not rr.climbed:
        note = f"stopped at rung {stopped_at} (-x)" if rr.stopped and stopped_at is not None else rr.note
        return [_text(str(rr.rung)), _text(rr.title), *[_text("")] * 6, _text((note, "dim"))]
    c = rr.counts
    cells = [str(rr.rung), rr.title, str(len(rr.outcomes)), str(c[PASSED]), str(c[FAILED] + c[FLAKY]),
             str(c[SKIPPED]), str(c[OOM] + c[BROKEN] + c[NOT_JUDGED]), f"{rr.seconds:.1f} s"]
    return [_text(x) for x in cells] + [_verdict(rr)]


# ---------------------------------------------------------------------------- failures
def _failure_lines(o: Outcome, like: list[Outcome] = (), lead: str = "\n", verbose: bool = False) -> list:
    head = o.headline
    word = "FLAKY" if o.status == FLAKY else "FAILED"
    title = [(lead + word, "red"), " ", (o.point.id, "bold"),
             f"  rung {o.point.rung}, {head.check if head else '?'}" + (f", output `{head.output}`" if head and head.output else "")]
    if like:
        title.append((f"  and {counted(len(like), 'more point')} like it", "bold"))
    lines = [_text(*title)]
    if like:
        lines.append(_text(f"  points:   {words.points_text([o, *like])}"))
        ids = [x.point.id for x in like[:SHOWN_IDS]]
        more = f", ... ({len(like) - SHOWN_IDS} more; every point with its repro in --json)" if len(like) > SHOWN_IDS else ""
        lines.append(_text(f"  also:     {', '.join(ids)}{more}"))
    if o.point.why:
        lines.append(_text(f"  why:      {o.point.why}"))
    if head:
        shape = words.pattern_shape_text(head) if like else None
        lines.append(_text(f"  pattern:  {shape or words.pattern_label(head) or '-'}"))
        if head.call:
            lines.append(_text(f"  call:     {head.call} ({o.point.mode} mode)"))
    for f in o.findings:
        if head is not None and f is not head and f.call and f.call != head.call:
            lines.append(_text(f"  in:       {f.call}"))
        lines += [_text(x) for x in _finding_lines(f, verbose)]
    if o.rows is not None:
        lines.append(_text(f"  rows:     {words.rows_text(o.rows)}"))
    if o.status == FLAKY:
        lines.append(_text(f"  flaky:    {words.reason(o)}"))
    elif o.replay == Replay.ALONE_PASSES:
        lines.append(_text(f"  state:    {words.reason(o)}"))
    lines += _output_lines(o)
    if o.repro:                 # a point run in-process (run_point) has no command
        lines.append(_text(f"  repro:    {o.repro}"))
    return lines


def _joined(lines: list):
    from rich.text import Text
    return Text("\n").join(lines)


def _output_lines(o: Outcome) -> list:
    """What the kernel printed during the point (its last lines)."""
    text = o.output.strip()
    if not text:
        return []
    rows = text.splitlines()
    shown = rows[-OUTPUT_LINES:]
    head = f"  output:   (last {len(shown)} of {len(rows)} lines)" if len(rows) > len(shown) else "  output:"
    return [_text(head)] + [_text(f"    | {r}") for r in shown]


def _finding_lines(f, verbose: bool = False) -> list[str]:
    if f.check != Check.VALUES:
        return [f"  {f.check + ':':9} {_indented(words.message(f), 12)}", *_trace_lines(getattr(f.facts, "trace", None))]
    x, big = f.facts, f.largest
    nonfinite = f"; {x.nonfinite:,} non-finite where the reference is finite" if x.nonfinite else ""
    lines = [f"  largest:  kernel {big.kernel:.6g} vs reference {big.reference:.6g} at {big.index} "
             f"(up to {big.allowed:.3g} allowed)",
             f"  wrong:    {f.mismatched:,} / {f.total:,}{' checked' if x.sampled else ''} elements ({_pct(f.mismatched, f.total)}) "
             f"of `{f.output}` ({words.describe(f)}){nonfinite}"]
    short, derivation = words.budget_headline(f), words.budget_text(x)
    lines += [f"  budget:   {short}"] if short else []
    return lines + ([f"            {derivation}"] if verbose and derivation else [])


def _trace_lines(trace) -> list[str]:
    """The kernel's traceback under its error, the first line labelled `trace:`."""
    lines = words.trace_lines(trace)
    return [f"  {'trace:' if i == 0 else '':9} {line}" for i, line in enumerate(lines)]


def _indented(text: str, indent: int) -> str:
    """A message of several lines with its later lines indented under its first."""
    return text.replace("\n", "\n" + " " * indent)


def _pct(n: int, total: int) -> str:
    p = 100 * n / max(total, 1)
    return f"{p:.0f}%" if p >= 10 or p == 0 else f"{p:.2g}%"


# ---------------------------------------------------------------------------- the rest
def _not_judged(other: list[Outcome]) -> list:
    """Points that could not be judged, grouped by what they say (one broken reference is
    one message, however many points it broke)."""
    groups: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in other:
        groups[reason_group(o)].append(o)
    parts = []
    for group in groups.values():
        o = group[0]
        lines = [_text(f"  {words.status_word(o.status).upper():7} {o.point.id}: {words.reason(o)}")]
        if len(group) > 1:
            lines.append(_text(f"          and {counted(len(group) - 1, 'more point')} with the same reason: "
                               + ", ".join(g.point.id for g in group[1:4]) + (" ..." if len(group) > 4 else "")))
        if o.repro:
            lines.append(_text(f"          repro: {o.repro}"))
        parts.append(_joined(lines))
    return parts


def _skips(skipped: list[Outcome]):
    by_note: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in skipped:
        by_note[note_group(o.note)].append(o)
    lines = [_text(("\nSkipped (" + str(len(skipped)) + ")", "bold"), ", each with its reason:")]
    for group in by_note.values():
        lines.append(_text(f"  {len(group)} x {words.note_text(group[0].note, sized=len(group) == 1)}"))
        for o in group[:6]:
            lines.append(_text(f"      {o.point.id}: {o.point.why}"))
        if len(group) > 6:
            lines.append(_text(f"      ... and {len(group) - 6} more (see --json)"))
    return _joined(lines)


def _warnings(warned: list[Outcome]):
    """Warnings (a bias inside the tolerance), each once, with the points that showed it."""
    lines = [_text(("\nWarnings (" + counted(len(warned), "point") + ")", "bold yellow"),
                   ": not failures; each says what a model or a deployment will feel")]
    by_kind: dict[tuple, list[Outcome]] = defaultdict(list)
    shown: dict[tuple, object] = {}                 # each group's first warning (a point may have several kinds)
    for o in warned:
        for w in o.warnings:
            shown.setdefault(bias_group(w), w)
            by_kind[bias_group(w)].append(o)
    kinds = list(by_kind.items())
    for n, (key, group) in enumerate(kinds):
        if n == WARNING_KINDS_SHOWN:
            rest = kinds[n:]
            lines.append(_text(f"  and {counted(len(rest), 'more kind')} of warning on "
                               f"{counted(len({id(o) for _, g in rest for o in g}), 'point')}: every one is in the "
                               "JSON report (--json) and the log"))
            break
        o = group[0]
        lines.append(_text(f"  {o.point.id}: {_indented(words.message(shown[key]), 6)}"))
        if len(group) > 1:
            lines.append(_text(f"      and {len(group) - 1} more point{'s' if len(group) > 2 else ''} like it: "
                               + ", ".join(g.point.id for g in group[1:4]) + (" ..." if len(group) > 4 else "")))
    return _joined(lines)


# Kinds of warning the terminal shows one by one; the rest are counted, never dropped unsaid
# (until 2026-12-07 the section was cut at 40 lines, mid-warning, with nothing said).
WARNING_KINDS_SHOWN = 20


def _ran(ran: list[Outcome]):
    """Rung 7's dispatch points: what ran at each, points that ran the same shown together."""
    by_note: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in ran:
        by_note[note_key(o.note)].append(o)
    lines = [_text(("\nWhat ran", "bold"), f" (rung 7, {counted(len(ran), 'dispatch point')}):")]
    for group in by_note.values():
        ids = ", ".join(o.point.id for o in group[:4]) + (f" and {len(group) - 4} more" if len(group) > 4 else "")
        lines.append(_text(f"  {ids}: {words.note_text(group[0].note)}"))
    return _joined(lines)


# What a passing point measured that a user should read: the bound a clean repetition proves.
PROVED = (NoteKind.REPEATS_CLEAN, NoteKind.STREAM_CLEAN, NoteKind.SANITIZER_CLEAN)


def _shrunk(shrunk: list):
    from .words.shrinking import shrunk_lines
    lines = [_text(("\nSmallest failing points", "bold"), " (each rung's first failure, shrunk):")]
    lines += [_text("  ", line) for s in shrunk for line in shrunk_lines(s)]
    return _joined(lines)


def _proved(outcomes: list[Outcome]):
    lines = [_text(("\nWhat the passing rung-5 points proved", "bold"), f" ({len(outcomes)}):")]
    for o in outcomes[:20]:
        reused = f" ({words.reused_text(o.reused)})" if o.reused is not None else ""
        lines.append(_text(f"  {o.point.id}: {words.note_text(o.note)}{reused}"))
    if len(outcomes) > 20:
        lines.append(_text(f"  ... and {len(outcomes) - 20} more (see --json)"))
    return _joined(lines)


def _summary(report: ClimbReport):
    total = len(report.outcomes)
    c = {s: sum(o.status == s for o in report.outcomes) for s in (PASSED, FAILED, FLAKY, SKIPPED, OOM, BROKEN, NOT_JUDGED)}
    parts = [f"{c[FAILED]} failed", f"{c[PASSED]} passed", f"{c[SKIPPED]} skipped"]
    parts += [f"{c[s]} {words.status_word(s)}" for s in (FLAKY, OOM, BROKEN, NOT_JUDGED) if c[s]]
    low = report.lowest_failing_rung
    tail = [f" of {counted(total, 'point')} in {report.seconds:.1f} s" + (f"; lowest failing rung: {low}" if low else "")
            + golden_summary_text(report.golden)]
    if report.interrupted:
        tail += ["; ", ("interrupted", "bold yellow"), ": the report holds the points run so far"]
    elif report.nothing_ran:
        tail.append(("\n" + words.nothing_ran_text(total), "bold yellow"))
    if report.reuse is not None:
        tail.append("\n" + words.reuse_text(report.reuse))
    if report.stopped_at is not None:
        tail.append(("\n" + words.stopped_text(report.stopped_at, [r.rung for r in report.rungs if r.stopped]), "bold yellow"))
    if report.log_path:
        tail.append(f"\noutcomes logged to {report.log_path}")
    return _text(("\n" + ", ".join(parts), "bold"), *tail)


def render_outcome(o: Outcome, color: bool = False, width: int = 120, fingerprint: dict | None = None,
                   verbose: bool = False) -> str:
    """One point's outcome, as `kladder repro` prints it (after the environment it ran in)."""
    buf = io.StringIO()
    console = _console(buf, color, width)
    if fingerprint:
        console.print(_text(f"env: {words.fingerprint_text(fingerprint)}"))
    if o.status in (FAILED, FLAKY):
        console.print(_joined(_failure_lines(o, lead="", verbose=verbose)))
    else:
        why = words.reason(o)
        console.print(_text(f"{o.status.upper()} {o.point.id}" + (f": {why}" if why else "") + f"  ({o.seconds:.2f} s)"))
        trace = getattr(o.note.facts, "trace", None) if o.note is not None and o.replay is None else None
        if trace is not None:               # a skip for the kernel's exception (the interpreter's, a layout refused)
            console.print(_joined([_text(line) for line in _trace_lines(trace)]))
    return buf.getvalue()


def render_case_text(title: str, bug: ClimbReport, twin: ClimbReport, color: bool = False, width: int = 120) -> str:
    """A zoo case: the buggy kernel's ladder (climbed rungs), its first failure, the twin's."""
    buf = io.StringIO()
    console = _console(buf, color, width)
    console.print(_text(("\n" + title, "bold")))
    for label, rep in (("buggy kernel", bug), ("fixed twin", twin)):
        if rep.rungs and not any(rr.climbed for rr in rep.rungs):      # a GPU case's buggy kernel off CUDA (zoo_run.py)
            console.print(_text(f"  {label:13} not climbed on {rep.device}"))
        for rr in rep.rungs:
            if rr.climbed:
                c = rr.counts
                console.print(_text(f"  {label:13} rung {rr.rung} {rr.title}: {len(rr.outcomes)} points, {c[PASSED]} passed, "
                                    f"{c[FAILED]} failed, {c[SKIPPED]} skipped  ", _verdict(rr), f"  [{rr.seconds:.1f} s]"))
    if bug.failures:
        lines = _failure_lines(bug.failures[0], lead="")
        console.print(_joined([_text("  first failure:"), *[_text("  ", line) for line in lines]]))
    from .words.shrinking import shrunk_lines
    for s in bug.shrunk:
        if s.rung == bug.lowest_failing_rung:
            console.print(_joined([_text("  smallest failing point:"), *[_text("    ", line) for line in shrunk_lines(s)]]))
    return buf.getvalue()
