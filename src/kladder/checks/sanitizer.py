"""compute-sanitizer's errors as findings (run/modes/sanitize.py parsed them): one finding per
distinct error (tool, kind, kernel, source line, access), counting how many times it was
reported. racecheck's warnings (hazards the tool itself rates as possibly benign, such as two
threads writing the same value) are warnings here too; every other error fails the point."""
from __future__ import annotations

from ..core.outcome import Check, Finding, Note, NoteKind
from ..core.facts import SanitizerFacts

KEYS = ("tool", "kind", "text", "kernel", "file", "line", "access", "size", "address", "detail", "thread", "block",
        "severity")


def judge(s) -> tuple[list[Finding], list[Finding], Note | None]:
    """(findings, warnings, note) for one sanitizer run."""
    groups: dict[tuple, dict] = {}
    for e in s.errors:
        key = (e["kind"], e["text"] if e["kind"] != "race" else "", e["kernel"], e["file"], e["line"], e["access"],
               str(e.get("second")))
        if key in groups:
            groups[key]["count"] += e.get("count", 1)
        else:
            groups[key] = {**{k: e.get(k, "") for k in KEYS}, "count": e.get("count", 1), "second": e.get("second")}
    label = f"compute-sanitizer {s.tool}"
    findings, warnings = [], []
    for facts in groups.values():
        f = Finding(Check.SANITIZER, call=label, facts=SanitizerFacts(**facts))
        (warnings if facts["severity"] in ("warning", "info") else findings).append(f)
    if not groups and s.summary:
        # the tool counted errors kladder could not read: still a failure, never a pass
        findings.append(Finding(Check.SANITIZER, call=label, facts=SanitizerFacts(tool=s.tool, kind="unread", count=s.summary)))
    note = None if findings else Note.of(NoteKind.SANITIZER_CLEAN, tool=s.tool, calls=s.calls)
    return findings, warnings, note
