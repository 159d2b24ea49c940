"""The ladder in the terminal (rich). Returns text; the CLI prints it."""
from __future__ import annotations

import io
from collections import defaultdict

from ..outcome import Check, Outcome, Replay, Status
from . import words
from .data import ClimbReport, RungReport

PASSED, FAILED, FLAKY, SKIPPED, OOM, BROKEN = (Status.PASSED, Status.FAILED, Status.FLAKY, Status.SKIPPED, Status.OOM,
                                               Status.BROKEN)

VERDICT_STYLE = {"failed": "bold red", "passed": "green", "incomplete": "yellow",
                 "nothing ran": "yellow", "not climbed": "dim"}


def render_text(report: ClimbReport, color: bool = False, width: int = 120) -> str:
    from rich.console import Console
    buf = io.StringIO()
    # soft_wrap: a repro command must stay one line, so that it pastes as it is
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width,
                      highlight=False, soft_wrap=True)
    for part in renderables(report):
        console.print(part)
    return buf.getvalue()


def renderables(report: ClimbReport) -> list:
    parts = [_header(report), _ladder_table(report)]
    failures = report.failures
    if failures:
        parts.append(f"\n[bold red]{len(failures)} failed point{'s' if len(failures) != 1 else ''}[/]")
        parts += [_failure_block(o) for o in failures]
    other = [o for o in report.outcomes if o.status in (OOM, BROKEN)]
    if other:
        parts.append("\n[bold yellow]Points that could not be judged[/]")
        parts += [f"  {o.status.upper():7} {o.point.id}: {words.reason(o)}\n          repro: {o.repro}" for o in other]
    skipped = [o for o in report.outcomes if o.status == SKIPPED]
    if skipped:
        parts.append(_skips(skipped))
    warned = [o for o in report.outcomes if o.warnings]
    if warned:
        parts.append(_warnings(warned))
    parts.append(_summary(report))
    return parts


def _header(report: ClimbReport) -> str:
    where = report.device_name or report.device
    if report.device == "cpu":
        where = "cpu (Triton interpreter)"
    return f"[bold]kladder climb[/] {report.ref}  on {where}  (kladder {report.kladder_version})"


def _ladder_table(report: ClimbReport):
    from rich.table import Table
    t = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for col, just in (("rung", "right"), ("gap", "left"), ("points", "right"), ("passed", "right"),
                      ("failed", "right"), ("skipped", "right"), ("other", "right"), ("time", "right"),
                      ("verdict", "left")):
        t.add_column(col, justify=just)
    for rr in report.rungs:
        t.add_row(*_ladder_row(rr))
    return t


def _ladder_row(rr: RungReport) -> list[str]:
    style = VERDICT_STYLE.get(rr.verdict, "")
    verdict = f"[{style}]{rr.verdict.upper() if rr.verdict == 'failed' else rr.verdict}[/]"
    if not rr.climbed:
        return [str(rr.rung), rr.title, "", "", "", "", "", "", f"[dim]{rr.note}[/]"]
    c = rr.counts
    return [str(rr.rung), rr.title, str(len(rr.outcomes)), str(c[PASSED]), str(c[FAILED] + c[FLAKY]),
            str(c[SKIPPED]), str(c[OOM] + c[BROKEN]), f"{rr.seconds:.1f} s", verdict]


def _failure_block(o: Outcome) -> str:
    head = o.headline
    word = "FLAKY" if o.status == FLAKY else "FAILED"
    lines = [f"\n[red]{word}[/] [bold]{o.point.id}[/]  rung {o.point.rung}, {head.check if head else '?'}"
             + (f", output `{head.output}`" if head and head.output else "")]
    if o.point.why:
        lines.append(f"  why:      {_escape(o.point.why)}")
    if head:
        lines.append(f"  pattern:  {_escape(words.pattern_label(head) or '-')}")
        if head.call:
            lines.append(f"  call:     {_escape(head.call)} ({o.point.mode} mode)")
    for f in o.findings:
        lines += _finding_lines(f)
    if o.rows is not None:
        lines.append(f"  rows:     {words.rows_text(o.rows)}")
    if o.status == FLAKY:
        lines.append(f"  flaky:    {words.reason(o)}")
    elif o.replay == Replay.ALONE_PASSES:
        lines.append(f"  state:    {words.reason(o)}")
    lines.append(f"  repro:    {_escape(o.repro)}")
    return "\n".join(lines)


def _finding_lines(f) -> list[str]:
    if f.check != Check.VALUES:
        return [f"  {f.check + ':':9} {_escape(words.message(f))}"]
    x, big = f.facts, f.largest
    nonfinite = f"; {x['nonfinite']:,} non-finite where the reference is finite" if x.get("nonfinite") else ""
    lines = [f"  largest:  kernel {big.kernel:.6g} vs reference {big.reference:.6g} at {big.index} "
             f"(up to {big.allowed:.3g} allowed)",
             f"  wrong:    {f.mismatched:,} / {f.total:,}{' checked' if x.get('sampled') else ''} elements ({_pct(f.mismatched, f.total)}) "
             f"of `{f.output}` ({words.describe(f)}){nonfinite}"]
    budget = words.budget_text(x)
    return lines + ([f"  budget:   {_escape(budget)}"] if budget else [])


def _pct(n: int, total: int) -> str:
    p = 100 * n / max(total, 1)
    return f"{p:.0f}%" if p >= 10 or p == 0 else f"{p:.2g}%"


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def _skips(skipped: list[Outcome]) -> str:
    by_note: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in skipped:
        by_note[words.note_group(o.note)].append(o)
    lines = [f"\n[bold]Skipped ({len(skipped)})[/], each with its reason:"]
    for group in by_note.values():
        lines.append(f"  {len(group)} x {_escape(words.note_text(group[0].note, sized=len(group) == 1))}")
        for o in group[:6]:
            lines.append(f"      {o.point.id}: {_escape(o.point.why)}")
        if len(group) > 6:
            lines.append(f"      ... and {len(group) - 6} more (see --json)")
    return "\n".join(lines)


def _warnings(warned: list[Outcome]) -> str:
    """Warnings (a bias inside the tolerance), each once, with the points that showed it."""
    lines = [f"\n[bold yellow]Warnings ({len(warned)} point{'s' if len(warned) != 1 else ''})[/]: not failures; "
             "they point at what a model will feel"]
    by_kind: dict[tuple, list[Outcome]] = defaultdict(list)
    for o in warned:
        for w in o.warnings:
            by_kind[words.bias_group(w)].append(o)
    for group in by_kind.values():
        o = group[0]
        lines.append(f"  {o.point.id}: {_escape(words.message(o.warnings[0]))}")
        if len(group) > 1:
            lines.append(f"      and {len(group) - 1} more point{'s' if len(group) > 2 else ''} like it: "
                         + ", ".join(g.point.id for g in group[1:4]) + (" ..." if len(group) > 4 else ""))
    return "\n".join(lines[:40])


def _summary(report: ClimbReport) -> str:
    total = len(report.outcomes)
    c = {s: sum(o.status == s for o in report.outcomes) for s in (PASSED, FAILED, FLAKY, SKIPPED, OOM, BROKEN)}
    parts = [f"{c[FAILED]} failed", f"{c[PASSED]} passed", f"{c[SKIPPED]} skipped"]
    parts += [f"{c[s]} {s}" for s in (FLAKY, OOM, BROKEN) if c[s]]
    low = report.lowest_failing_rung
    tail = f"; lowest failing rung: {low}" if low else ""
    if report.interrupted:
        tail += "; [bold yellow]interrupted[/]: the report holds the points run so far"
    log = f"\noutcomes logged to {report.log_path}" if report.log_path else ""
    return f"\n[bold]{', '.join(parts)}[/] of {total} points in {report.seconds:.1f} s{tail}{log}"


def render_outcome(o: Outcome, color: bool = False, width: int = 120) -> str:
    """One point's outcome, as `kladder repro` prints it."""
    from rich.console import Console
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False,
                      soft_wrap=True)
    if o.status in (FAILED, FLAKY):
        console.print(_failure_block(o).lstrip("\n"))
    else:
        why = words.reason(o)
        extra = f": {why}" if why else ""
        console.print(f"{o.status.upper()} {o.point.id}{_escape(extra)}  ({o.seconds:.2f} s)")
    return buf.getvalue()


def render_case_text(title: str, bug: ClimbReport, twin: ClimbReport, color: bool = False, width: int = 120) -> str:
    """A zoo case: the buggy kernel's ladder (climbed rungs), its first failure, the twin's."""
    from rich.console import Console
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False,
                      soft_wrap=True)
    console.print(f"\n[bold]{_escape(title)}[/]")
    for label, rep in (("buggy kernel", bug), ("fixed twin", twin)):
        for rr in rep.rungs:
            if rr.climbed:
                c = rr.counts
                verdict = _ladder_row(rr)[-1]
                console.print(f"  {label:13} rung {rr.rung} {rr.title}: {len(rr.outcomes)} points, {c[PASSED]} passed, "
                              f"{c[FAILED]} failed, {c[SKIPPED]} skipped  {verdict}  [{rr.seconds:.1f} s]")
    if bug.failures:
        console.print("  first failure:" + _failure_block(bug.failures[0]).replace("\n", "\n  "))
    return buf.getvalue()
