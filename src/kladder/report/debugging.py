"""Sentences for the debugging commands (bisect, bench, explore), from the facts their modules
compute; nothing here computes a verdict or reads English back."""
from __future__ import annotations

from .words.shrinking import explore_shrunk_lines


def _step_line(s) -> str:
    return f"  {s.verdict:5} {s.commit[:10]}  {s.subject[:60]}  ({s.why})"


def bisect_step(s) -> str:
    """One commit judged (a bisect.BisectStep)."""
    return _step_line(s)


def bisect_text(r) -> str:
    """`kladder bisect`'s result (a bisect.BisectResult) in words."""
    lines = [f"bisect {r.spec} in {r.repo}: good {r.good[:10]}, bad {r.bad[:10]} on {r.device}"]
    ends = r.ends
    for which in ("bad", "good"):
        if ends.get(which):
            lines.append(f" {which} end:" + _step_line(ends[which])[1:])
    if r.steps:
        lines.append(" steps:")
        lines += [_step_line(s) for s in r.steps]
    outcome = r.outcome
    if outcome == "found":
        lines.append(f"first bad commit: {r.first_bad} {r.first_bad_subject or ''}")
    elif outcome == "ambiguous":
        lines.append("the first bad commit is one of these (the commits between were skipped, so git cannot tell):")
        lines += [f"  {c.commit} {c.subject}" for c in r.candidates]
    elif outcome == "ends_wrong":
        e = {k: "not judged" if v is None else v.verdict for k, v in ends.items()}
        lines.append(f"nothing to bisect: GOOD is {e.get('good')} and BAD is {e.get('bad')}; the point must pass at "
                     "GOOD and fail at BAD (each end's reason is above).")
    elif outcome == "interrupted":
        lines.append("interrupted: the bisection was reset and its worktree removed; the repository is as it was.")
    else:
        lines.append("git bisect did not name a first bad commit; its output ends:")
        lines.append((r.git_output_tail or "")[-800:])
    return "\n".join(lines) + "\n"


def _t(s) -> str:
    if s is None:
        return "-"
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def _pct(v) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _rate(v, unit: str) -> str:
    return "-" if v is None else f"{v / 1e9:.1f} G{unit}/s"


def bench_text(r) -> str:
    """`kladder bench`'s result (a bench.BenchResult) in words."""
    dims = ", ".join(f"{k} = {v}" for k, v in r.point.dims)
    dtypes = ", ".join(f"{k} {v}" for k, v in r.point.dtypes)
    lines = [f"bench {r.point.spec} at {dims}" + (f" ({dtypes})" if dtypes else "") + f" on {r.device_name}:",
             f"  {r.rounds} interleaved rounds of {r.calls} calls each after {r.warmup} warm-up calls; "
             f"{r.between_calls} before each call; timed by {r.timer}",
             f"  {r.bytes} bytes in the point's tensors" + (f", {r.flops:.4g} FLOPs" if r.flops else "")]
    if r.peak_bandwidth:
        lines.append(f"  measured peak: {_rate(r.peak_bandwidth, 'B')} (1 GiB device-to-device copy)"
                     + (f", {r.peak_flops / 1e12:.1f} TFLOP/s (bfloat16 matmul)" if r.peak_flops else ""))
    head = f"  {'':2} {'median':>10} {'IQR':>10} {'min':>10} {'bytes/s':>12} {'FLOP/s':>12} {'roofline':>9}  spec"
    lines.append(head)
    for k, s in r.kernels.items():
        lines.append(f"  {k:2} {_t(s.median_s):>10} {_t(s.iqr_s):>10} {_t(s.min_s):>10} "
                     f"{_rate(s.bytes_per_s, 'B'):>12} {_rate(s.flops_per_s, 'FLOP'):>12} "
                     f"{_pct(s.roofline_pct):>9}  {s.ref}")
    c = r.comparison
    if c:
        how = f"Wilcoxon signed-rank over {c.rounds} paired rounds"
        if c.verdict == "faster":
            lines.append(f"B is {c.speedup:.3g}x faster, p = {c.p:.2g} ({how})")
        elif c.verdict == "slower":
            lines.append(f"B is {1 / c.speedup:.3g}x slower, p = {c.p:.2g} ({how})")
        else:
            lines.append(f"no difference shown, p = {c.p:.2g} ({how}; medians {_t(c.median_a)} and "
                         f"{_t(c.median_b)})")
    if r.device == "cpu":
        lines.append("on the CPU these numbers mean nothing for a GPU kernel (the host's time, Triton's interpreter "
                     "where the kernel is Triton, no L2 flush, no roofline); run it with --device cuda")
    return "\n".join(lines) + "\n"


def _dims(point) -> str:
    """A point's sizes, and its value kinds and layouts where it has them ("M = 2, N = 64; x: huge")."""
    kinds = [f"{k}: {v}" for k, v in [*point.values, *point.layouts]]
    return ", ".join(f"{k} = {v}" for k, v in point.dims) + ("; " + ", ".join(kinds) if kinds else "")


def explore_point(e) -> str:
    """One point explore ran (an explore.Explored)."""
    tag = " (replayed)" if e.replayed else ""
    check = f" [{e.check}]" if e.check else ""
    return f"  {e.status:7} {e.id}{check}{tag}"


def explore_text(r) -> str:
    """`kladder explore`'s result (an explore.ExploreResult) in words."""
    n = len(r.points)
    replayed = sum(e.replayed for e in r.points)
    lines = [f"explore {r.spec} (rungs {', '.join(map(str, r.rungs))}): {n} points drawn by Hypothesis in "
             f"{r.seconds:.1f} s" + (f", {replayed} replayed from earlier runs" if replayed else "")]
    counts: dict[str, int] = {}
    for e in r.points:
        counts[e.status] = counts.get(e.status, 0) + 1
    lines.append("  " + ", ".join(f"{c} {s}" for s, c in sorted(counts.items())))
    f = r.failure
    if f is None:
        why = {"budget": f"the budget ({r.budget_s:g} s) is spent", "exhausted": "Hypothesis ran out of points"}
        lines.append(f"no failure found ({why.get(r.stopped, r.stopped)}); this complements the fixed ladder "
                     "(`kladder climb`), it does not replace it")
        return "\n".join(lines) + "\n"
    lines.append(f"FAILED ({f.check}) at {_dims(f.point)}" + (" (replayed from an earlier run)" if f.replayed
                                                             else " (the sweep of value kinds and layouts)"
                                                             if f.swept else ""))
    s, h = r.shrunk, r.hypothesis_smallest
    lines += explore_shrunk_lines(s, h.point.dims if h else None)
    repro = s.repro if s is not None and s.repro is not None else f.repro
    lines.append(f"  repro: {repro}")
    return "\n".join(lines) + "\n"
