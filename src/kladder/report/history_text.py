"""The history and a diff in words (facts from history/store.py and history/diff.py; a
report/words family module once words.py is split)."""
from __future__ import annotations

from .words.base import counted


def _counts(c: dict) -> str:
    n = c.get("counts") or {}
    total = sum(n.values())
    bad = n.get("failed", 0) + n.get("flaky", 0)
    parts = [counted(total, "point")]
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


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


LOAD_WORDS = {
    "others_cores": lambda la, lb, a, b: (f"other processes kept {lb.others_cores:.2f} cores busy on average during "
                                          f"{b}, {la.others_cores:.2f} during {a}"),
    "wait_share": lambda la, lb, a, b: (f"{b}'s workers waited for a CPU {_pct(lb.wait_share)} of the time, {a}'s "
                                        f"{_pct(la.wait_share)}"),
    "lanes": lambda la, lb, a, b: f"{lb.lanes:.1f} other lanes on average during {b} (--jobs), {la.lanes:.1f} during {a}",
    "device_processes": lambda la, lb, a, b: (f"{lb.device_processes:.1f} other processes on the device during {b}, "
                                              f"{la.device_processes:.1f} during {a}"),
}


def timing_text(d) -> str:
    """Whether the timings were compared, and why not (facts.TimingFacts)."""
    t, a, b = d.timing, f"#{d.a.id}", f"#{d.b.id}"
    if t.why == "device":
        return f"timing not compared: the device differed ({a} on {t.device_a}, {b} on {t.device_b})"
    if t.why == "not_recorded":
        which = " and ".join(n for n, x in ((a, t.load_a), (b, t.load_b)) if x is None)
        return f"timing not compared: what ran beside the points was not recorded for {which} (an older kladder's climb)"
    if t.why == "load":
        return "timing not compared: load differed (" + "; ".join(
            LOAD_WORDS[k](t.load_a, t.load_b, a, b) for k in t.differed) + ")"
    return ""


def slower_line(s) -> str:
    what = "the kernel's seconds" if s.kernel_stage else "seconds"
    return (f"rung {s.rung} slower: x{s.ratio:.2f} per point in {what} (median of {s.pairs} points, {s.before_s:.1f} s "
            f"-> {s.after_s:.1f} s, Wilcoxon p = {s.p:.1g}), past each climb's own spread (x{s.spread_a:.2f}, "
            f"x{s.spread_b:.2f}: waits for a CPU)")


def bits_lines(d, verbose: bool, more: str = "; --verbose lists them") -> list[str]:
    if not d.bits_changed:
        return []
    pairs: dict[tuple[str, str], int] = {}
    for r in d.bits_changed:
        pairs[(r.before, r.after)] = pairs.get((r.before, r.after), 0) + 1
    kinds = ", ".join(f"{n} {'passing' if a == 'passed' else a} in both" if a == b else f"{n} {a} -> {b}"
                      for (a, b), n in pairs.items())
    n = len(d.bits_changed)
    if not verbose:
        return [f"output bits changed at {n} point{'s' * (n != 1)} ({kinds}){more}"]
    return [f"output bits changed ({n}: {kinds}):",
            *[f"  {r.id}: {', '.join(r.outputs)} ({r.before} -> {r.after})" for r in d.bits_changed]]


def verdict_line(d) -> str:
    slower = ", ".join(f"rung {s.rung}" for s in d.slower_rungs)
    n = len(d.newly_failing)
    if d.worse:
        why = [f"{n} point{'s' * (n != 1)} newly fail{'s' * (n == 1)}"] if n else []
        why += [f"{slower} slower (--fail-on slower)"] if "slower" in d.fail_on and slower else []
        return "worse: " + "; ".join(why)
    if slower:
        return f"not worse ({slower} slower: a failure of the gate only with --fail-on slower)"
    return "not worse"


def diff_text(d, verbose: bool = False) -> str:
    """`kladder diff` (facts.DiffFacts) in words; `verbose` lists every point whose bits changed."""
    lines = [f"{d.a.spec}: {_climb_name(d.a)} -> {_climb_name(d.b)}"]
    if d.toolchain:
        lines.append("toolchain: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in d.toolchain.items()))
    for title, rows in (("newly failing", d.newly_failing), ("newly passing", d.newly_passing)):
        if rows:
            lines.append(f"{title} ({len(rows)}):")
            lines += [f"  {r.id}: {r.before} -> {r.after}" + (f" ({r.failure_after})" if r.failure_after else "")
                      for r in rows]
    lines += bits_lines(d, verbose)
    if d.nondeterministic:
        lines.append(f"not compared bit for bit (nondeterministic outputs): {counted(len(d.nondeterministic), 'point')}")
    lines += [slower_line(s) for s in d.slower_rungs]
    timing = timing_text(d)
    if timing:
        lines.append(timing)
    for title, ids in (("only in the first", d.only_a), ("only in the second", d.only_b)):
        if ids:
            lines.append(f"{title}: {counted(len(ids), 'point')}")
    if not (d.newly_failing or d.newly_passing or d.bits_changed or d.slower_rungs):
        lines.append("no change: the same verdicts, the same bits" + (", no rung slower beyond noise"
                                                                      if d.timing.compared else ""))
    lines.append(verdict_line(d))
    return "\n".join(lines) + "\n"


def golden_record_text(r) -> str:
    """`kladder golden record` (facts.GoldenRecordFacts) in words."""
    lines = [f"golden hashes of {r.spec} kept from climb #{r.climb}: {counted(r.kept, 'point')}, for {_tools(r.target)}"]
    if r.nondeterministic:
        lines.append(f"not kept, nondeterministic outputs ({len(r.nondeterministic)}): " + ", ".join(r.nondeterministic))
    if r.no_hashes:
        lines.append(f"not kept, no output made (skipped, crashed, ...): {counted(len(r.no_hashes), 'point')}")
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
    whose = "1 point's" if len(g.equal) == 1 else f"{len(g.equal)} points'"
    lines = [f"golden ({how}): {whose} bits equal to golden of {date}{tool}"
             + (f"; {len(g.changed)} changed" if g.changed else "")]
    for c in g.changed:
        lines.append(f"  {c.id}: bits changed since {date}{tool}: {', '.join(c.outputs)}")
    if g.nondeterministic:
        lines.append(f"  not compared, nondeterministic outputs ({len(g.nondeterministic)}): "
                     + ", ".join(g.nondeterministic))
    if g.not_kept:
        lines.append(f"  no golden hashes for {counted(len(g.not_kept), 'point')}")
    return "\n".join(lines) + "\n"


def golden_summary_text(g) -> str:
    """The summary line's tail when the golden check fails the climb (--golden=strict)."""
    if g is None or not g.fails:
        return ""
    if g.recorded is None:
        return "; golden: none kept (--golden=strict fails the climb)"
    return f"; golden: bits changed at {counted(len(g.changed), 'point')} (--golden=strict fails the climb)"
