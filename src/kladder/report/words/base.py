"""What every family of words shares: the tables that choose a message by the facts' class,
the words of a pattern, and a few small phrases."""
from __future__ import annotations

from typing import Callable

from ...core.outcome import Pattern, Span
from ...core.sizes import human_bytes

# facts class -> its words: (finding, facts) -> str for findings, (facts, sized) -> str for notes
MESSAGES: dict[type, Callable] = {}
NOTES: dict[type, Callable] = {}


def says(*classes: type) -> Callable:
    """Register a finding's message for facts of these classes (facts/)."""
    def put(fn):
        for c in classes:
            MESSAGES[c] = fn
        return fn
    return put


def notes(*classes: type) -> Callable:
    """Register a note's text for facts of these classes (facts/)."""
    def put(fn):
        for c in classes:
            NOTES[c] = fn
        return fn
    return put


# ---------------------------------------------------------------------------- patterns
def pattern_text(p: Pattern) -> str:
    """"the last 7 columns (N % 8 = 7) of every row", "rows 0..201 (whole rows)", ..."""
    if p.kind == "single":
        return "the single element"
    if p.kind == "every":
        return "every element"
    if p.kind == "elements":
        return span_text("elements", p.cols)
    if p.kind == "block":
        rows = rows_words(p.rows)
        if p.cols is None:
            return f"{rows} (whole rows)" if p.rows != ("every",) else "every element"
        return f"{span_text('columns', p.cols)} of {rows}"
    if p.kind == "whole_rows":
        more = ", ..." if p.n_bad > len(p.ids) else ""
        return (f"{p.n_bad:,} whole rows of {p.n_rows:,}{' checked' if p.checked else ''} "
                f"(rows {', '.join(map(str, p.ids))}{more})")
    if p.kind == "runs":
        amount = "most elements" if p.most else "scattered elements"
        return f"{amount} of {rows_words(p.rows)} ({p.n_bad:,} of {p.n_total:,})"
    return f"scattered, {p.n_bad:,} of {p.n_total:,} elements (first at {tuple(p.first)})"


def rows_words(rows: tuple) -> str:
    kind = rows[0]
    if kind == "every":
        return "every row"
    if kind == "one":
        return f"row {rows[1]}"
    if kind == "from":
        return f"every row from {rows[1]} on (rows {rows[1]}..{rows[2]})"
    if kind == "range":
        return f"rows {rows[1]}..{rows[2]}"
    return "rows " + ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in rows[1])


def span_text(unit: str, s: Span) -> str:
    k = s.last - s.first + 1
    if s.last == s.n - 1:
        text = f"the last {k} {unit}" if k > 1 else f"the last {unit[:-1]}"
        return text + (f" ({s.tile_note[0]} % {s.tile_note[1]} = {s.tile_note[2]})" if s.tile_note else "")
    if s.first == 0:
        return f"the first {k} {unit}" if k > 1 else f"the first {unit[:-1]}"
    return f"{unit} {s.first}..{s.last}"


# ---------------------------------------------------------------------------- small phrases
def during(f) -> str:
    return f" ({f.call})" if f.call else ""


def counted(n: int, what: str) -> str:
    """'1 point', '2 points' (`what` a noun whose plural takes an s)."""
    return f"{n} {what}{'s' if n != 1 else ''}"


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def ints(v: list) -> str:
    return ", ".join(f"{i:,}" for i in v)


def status_word(s) -> str:
    """A status as a reader says it: "not judged" for not_judged, else its value."""
    return str(s).replace("_", " ")


def load_text(x) -> str:
    """What else used the device or the host while a point ran (facts.LoadFacts)."""
    parts = []
    if x.processes:
        parts.append(f"{x.processes} other process{'es' if x.processes > 1 else ''} on the device")
    if x.device_used_bytes:
        total = f" of {human_bytes(x.device_total_bytes)}" if x.device_total_bytes else ""
        parts.append(f"{human_bytes(x.device_used_bytes)}{total} in use by others")
    if x.lanes:
        parts.append(f"{x.lanes} other lane{'s' if x.lanes > 1 else ''} of this climb running")
    if x.host_cpu_s:
        parts.append(f"other processes used {x.host_cpu_s:.1f} s of CPU in its {x.seconds:.1f} s")
    if x.host_used_bytes and x.host_total_bytes:
        parts.append(f"{human_bytes(x.host_used_bytes)} of the host's {human_bytes(x.host_total_bytes)} memory in use")
    if x.oom_kills:
        parts.append(f"the out-of-memory killer killed {x.oom_kills} process{'es' if x.oom_kills > 1 else ''}")
    if x.waited_s:
        parts.append(f"the run alone waited {x.waited_s:.0f} s for memory to free")
    return ", ".join(parts) or "other work on the host"
