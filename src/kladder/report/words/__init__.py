"""The words for kladder's typed facts: every sentence a report shows about a finding, a
pattern, a note, a replay or the rows checked is made here, from typed data only, for every
renderer (terminal, JSON). Nothing here computes a verdict.

A finding's message and a note's text are chosen by the class of its facts (facts/), from
the tables in base.py that each family fills: values (comparisons, bias, invariants, the
model), contracts (outputs, guards, inputs, the reference), modes (raised, crashed, hung,
captures, bitwise, the sanitizer), repetition (rung 5), toolchain (rungs 6 and 7), notes."""
from __future__ import annotations

from ...core.facts import NondeterministicFacts, RepeatsFacts, StreamFacts
from ...core.outcome import REPLAYS_TO_SETTLE, Cause, Check, Finding, Outcome, Replay, RowsChecked
from . import contracts, modes, notes, repetition, toolchain, values  # noqa: F401  (each fills the tables)
from .base import MESSAGES, NOTES, load_text, pattern_text, rows_words, status_word
from .environment import (
    collection_failed_text,
    device_holders_text,
    device_start_error,
    device_start_text,
    fingerprint_text,
    nothing_ran_text,
    target_warning_text,
)
from .modes import CANNOT_SEE, sanitizer_kind, trace_lines
from .notes import INTERPRETER_FEATURES, INTERPRETER_PROBES, STAGE_WORDS, WAIT_WORDS, note_text, waiting_text, waits_text
from .repetition import count_text, repeats_clean_text, time_budget_text
from .reuse import accumulated_text, reuse_text, reused_text, stopped_text
from .toolchain import expect_text, launch_text, ran_text
from .values import budget_headline, budget_text, describe, model_detail, model_samples

__all__ = [
    "CANNOT_SEE", "INTERPRETER_FEATURES", "INTERPRETER_PROBES", "MESSAGES", "NOTES", "STAGE_WORDS", "accumulated_text",
    "budget_headline",
    "budget_text",
    "collection_failed_text", "describe", "device_holders_text", "device_start_error", "device_start_text", "expect_text",
    "fingerprint_text", "launch_text", "load_text", "message", "model_detail", "model_samples", "note_text",
    "nothing_ran_text", "pattern_label", "pattern_shape_text", "pattern_text", "points_text", "ran_text", "reason",
    "repeats_clean_text", "replay_text", "reuse_text", "reused_text", "rows_text", "status_word", "stopped_text",
    "target_warning_text", "trace_lines", "WAIT_WORDS", "waiting_text", "waits_text", "time_budget_text",
]


def message(f: Finding) -> str:
    """The finding in words: what, where, how much and what was allowed. A message with
    several statistics gives the verdict on its first line and one statistic a line below."""
    return MESSAGES[type(f.facts)](f, f.facts)


_LABELS = {Check.RAISED: "raised", Check.DEVICE_FAULT: "device fault", Check.CAPTURE: "capture failed",
           Check.UNCAPTURED: "not capturable (graphs not claimed)",
           Check.HANG: "hang", Check.INVALID_REFERENCE: "invalid reference", Check.INVARIANT: "invariant",
           Check.NONFINITE: "accepted NaN/Inf", Check.DISPATCH: "another path ran",
           Check.FLAG_NO_EFFECT: "the flag changes no code", Check.IMPORT_CONTRACT: "import contract",
           Check.CAUGHT_IMPORT: "a caught ImportError"}


def pattern_label(f: Finding) -> str:
    """The one-line `pattern:` of a finding: where the wrong elements are, or what happened."""
    x = f.facts
    if isinstance(x, (RepeatsFacts, NondeterministicFacts)):
        what = "not bit for bit the first call" if x.bitwise else "wrong"
        worst = f"; the worst: {pattern_text(f.pattern)}" if f.pattern is not None else ""
        return f"{count_text(x)} of {x.compared:,} calls {what}{worst}"
    if isinstance(x, StreamFacts):
        worst = f"; call {x.first_wrong:,}: {pattern_text(f.pattern)}" if f.pattern is not None else ""
        return f"{x.wrong:,} of {x.judged:,} calls of the stream wrong, the first call {x.first_wrong:,}{worst}"
    if f.pattern is not None:
        return pattern_text(f.pattern)
    if f.check in _LABELS:
        return _LABELS[f.check]
    if f.check == Check.GUARD:
        return "a write past the end" if x.n_after else "a write before the start"
    if f.check == Check.CRASHED:
        return f"crash ({x.signal})" if x.signal is not None else f"crash (exit status {x.exit_status})"
    if f.check == Check.NOT_BITWISE:
        return {Cause.ABA: "A after B differs from A", Cause.CACHEKEY: "B on A's cache differs from B on an empty one",
                Cause.RUN_TO_RUN: "A twice differs (deterministic=True)"}.get(
            x.cause, "warm cache differs from cold")
    if f.check == Check.MODEL:
        if x.metric == "nll":
            return f"NLL {x.rise:+.1%}"
        return f"score {x.baseline:.3f} -> {x.kernel:.3f}"
    if f.check == Check.COLLECTIVE:
        return f"{f.mismatched:,} of {f.total:,} calls wrong"
    if f.check == Check.RANKS_HUNG:
        return "hang (watchdog)"
    if f.check == Check.SANITIZER:
        return f"{x.tool}: {sanitizer_kind(x)}"
    return ""


def pattern_shape_text(f: Finding) -> str | None:
    """The pattern of a group of failures in general words ("the last N % 8 columns of every
    row"), or None when the representative's own pattern says it best."""
    p = f.pattern
    if p is None or p.cols is None or not p.cols.tile_note or p.cols.last != p.cols.n - 1:
        return None
    sym, tile, _ = p.cols.tile_note
    unit = "columns" if p.kind == "block" else "elements"
    span = f"the last {sym} % {tile} {unit}"
    return span if p.kind == "elements" else f"{span} of {rows_words(p.rows)}"


def points_text(outcomes: list[Outcome]) -> str:
    """The points a group of failures stands for: how many, and where their dims sit
    ("21 points: M = 1..4096, N = 7..16383 (N % 8 != 0); bfloat16, float16")."""
    dims: dict[str, list[int]] = {}
    for o in outcomes:
        for d, v in o.point.dims:
            dims.setdefault(d, []).append(v)
    parts = []
    notes_ = {o.headline.pattern.cols.tile_note[:2] for o in outcomes
              if o.headline and o.headline.pattern and o.headline.pattern.cols and o.headline.pattern.cols.tile_note}
    for d, vs in dims.items():
        lo, hi = min(vs), max(vs)
        text = f"{d} = {lo}" if lo == hi else f"{d} = {lo}..{hi}"
        text += "".join(f" ({d} % {t} != 0)" for sym, t in sorted(notes_) if sym == d and lo != hi)
        parts.append(text)
    dtypes = sorted({v for o in outcomes for _, v in o.point.dtypes})
    configs = {o.point.config for o in outcomes}
    tail = ("; " + ", ".join(dtypes)) if len(dtypes) > 1 else ""
    tail += f"; {len(configs)} configs" if len(configs) > 1 else ""
    return f"{len(outcomes)} points: " + ", ".join(parts) + tail


def replay_text(o: Outcome) -> str:
    if o.replay == Replay.FAILED_AGAIN:
        return "replayed: failed again"
    if o.replay == Replay.NOT_REPLAYED:
        return (f"not replayed: its rung's first {REPLAYS_TO_SETTLE} failures of this check were replayed and each "
                "failed again")
    if o.replay == Replay.FLAKY:
        return f"failed 1 of 2 runs (the replay {o.replay_status}): a race or uninitialised state, not rounding"
    return ("passes when run alone in a fresh process: this failure depends on state left by earlier points in the "
            "same worker (rung 4's A-B-A gap); its repro command will pass")


def reason(o: Outcome) -> str:
    """The outcome's one reason: what a replay showed, else its note."""
    if o.replay is not None:
        return replay_text(o)
    return note_text(o.note) if o.note is not None else ""


def rows_text(r: RowsChecked) -> str:
    return (f"{r.checked:,} of {r.rows:,} rows of {r.dim}: the first and last tiles, the tiles at each 2^31 / 2^32 "
            f"byte boundary, and {r.sampled} sampled")
