"""The history and a diff in words (facts from history/store.py and history/diff.py; a
report/words family module once words.py is split)."""
from __future__ import annotations


def _counts(c: dict) -> str:
    n = c.get("counts") or {}
    total = sum(n.values())
    bad = n.get("failed", 0) + n.get("flaky", 0)
    parts = [f"{total} points"]
    if bad:
        parts.append(f"{bad} failed")
    return ", ".join(parts)


def _short(commit: str | None) -> str:
    return f"git {commit[:10]}" if commit else "no git"


def _tools(t: dict) -> str:
    keys = [k for k in ("device", "torch", "triton", "cuda") if t.get(k)]
    return " ".join(f"{k} {t[k]}" for k in keys)


def golden_reason(g: dict | None) -> str:
    """Why --golden made a climb's verdict, where it did (a strict climb whose points all passed):
    the history's `golden` column (facts.GoldenFacts as a dict), in words; "" where it did not."""
    if not g or not g.get("fails"):
        return ""
    if g.get("recorded") is None:
        return "(--golden=strict: no golden hashes kept)"
    n = len(g.get("changed") or [])
    return f"(--golden=strict: bits changed at {n} point{'s' * (n != 1)} since {g['recorded']})"


def history_line(c: dict) -> str:
    verdict = f"{c['verdict']} {golden_reason(c.get('golden'))}".rstrip() if c["verdict"] else "unfinished (killed, or still running)"
    kind = "" if c["kind"] == "climb" else f" [{c['kind']}]"
    return (f"#{c['id']:<4} {c['started']}  {c['spec']}{kind}  {verdict}  ({_counts(c)})  kladder {c['kladder_version']}  "
            f"{_short(c['git_commit'])}  {_tools(c.get('toolchain') or {})}").rstrip()


def history_text(climbs: list[dict]) -> str:
    if not climbs:
        return "no climbs in the history yet\n"
    return "".join(history_line(c) + "\n" for c in climbs)


def _climb_name(c) -> str:
    return f"#{c.id} ({c.started}, {c.verdict or 'unfinished'}, {_short(c.git_commit)})"


def diff_text(d) -> str:
    """`kladder diff` (facts.DiffFacts) in words."""
    lines = [f"{d.a.spec}: {_climb_name(d.a)} -> {_climb_name(d.b)}"]
    if d.toolchain:
        lines.append("toolchain: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in d.toolchain.items()))
    for title, rows in (("newly failing", d.newly_failing), ("newly passing", d.newly_passing)):
        if rows:
            lines.append(f"{title} ({len(rows)}):")
            lines += [f"  {r.id}: {r.before} -> {r.after}" + (f" ({r.failure_after})" if r.failure_after else "")
                      for r in rows]
    if d.bits_changed:
        lines.append(f"output bits changed ({len(d.bits_changed)}):")
        lines += [f"  {r.id}: {', '.join(r.outputs)} ({r.before} -> {r.after})" for r in d.bits_changed]
    if d.nondeterministic:
        lines.append(f"not compared bit for bit (nondeterministic outputs): {len(d.nondeterministic)} points")
    for s in d.slower_rungs:
        lines.append(f"rung {s.rung} slower: x{s.ratio:.2f} per point (median of {s.pairs} points, "
                     f"{s.before_s:.1f} s -> {s.after_s:.1f} s, Wilcoxon p = {s.p:.1g})")
    for title, ids in (("only in the first", d.only_a), ("only in the second", d.only_b)):
        if ids:
            lines.append(f"{title}: {len(ids)} points")
    if not (d.newly_failing or d.newly_passing or d.bits_changed or d.slower_rungs):
        lines.append("no change: the same verdicts, the same bits, no rung slower beyond noise")
    lines.append("worse" if d.worse else "not worse")
    return "\n".join(lines) + "\n"


def golden_record_text(r) -> str:
    """`kladder golden record` (facts.GoldenRecordFacts) in words."""
    lines = [f"golden hashes of {r.spec} kept from climb #{r.climb}: {r.kept} points, for {_tools(r.target)}"]
    if r.nondeterministic:
        lines.append(f"not kept, nondeterministic outputs ({len(r.nondeterministic)}): " + ", ".join(r.nondeterministic))
    if r.no_hashes:
        lines.append(f"not kept, no output made (skipped, crashed, ...): {len(r.no_hashes)} points")
    return "\n".join(lines) + "\n"


def _tool_change(g) -> str:
    tool = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in g.toolchain.items())
    return f" (toolchain: {tool})" if tool else ""


def golden_check_text(g) -> str:
    """A climb's golden check (facts.GoldenFacts), as the terminal report says it before its
    summary: the verdict on the bits first, then a line per changed point."""
    how = "--golden=strict: a change fails the climb" if g.strict else "--golden: a change is a warning"
    if g.recorded is None:
        head = (f"golden ({how}): no golden hashes of this spec in the history; record them with "
                "`kladder golden record SPEC`")
        return head + (" (the climb fails: nothing to compare the bits with)" if g.fails else "") + "\n"
    date, tool = g.recorded, _tool_change(g)
    lines = [f"golden ({how}): {len(g.equal)} points' bits equal to golden of {date}{tool}"
             + (f"; {len(g.changed)} changed" if g.changed else "")]
    for c in g.changed:
        lines.append(f"  {c.id}: bits changed since {date}{tool}: {', '.join(c.outputs)}")
    if g.nondeterministic:
        lines.append(f"  not compared, nondeterministic outputs ({len(g.nondeterministic)}): "
                     + ", ".join(g.nondeterministic))
    if g.not_kept:
        lines.append(f"  no golden hashes for {len(g.not_kept)} points")
    return "\n".join(lines) + "\n"


def golden_summary_text(g) -> str:
    """The summary line's tail when the golden check fails the climb (--golden=strict)."""
    if g is None or not g.fails:
        return ""
    if g.recorded is None:
        return "; golden: none kept (--golden=strict fails the climb)"
    return f"; golden: bits changed at {len(g.changed)} point{'s' if len(g.changed) != 1 else ''} (--golden=strict fails the climb)"
