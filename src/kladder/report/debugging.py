"""Sentences for the debugging commands (bisect, bench, explore), from the facts their modules
compute; nothing here computes a verdict or reads English back."""
from __future__ import annotations


def _step_line(s: dict) -> str:
    return f"  {s['verdict']:5} {s['commit'][:10]}  {s['subject'][:60]}  ({s['why']})"


def bisect_step(s: dict) -> str:
    return _step_line(s)


def bisect_text(r: dict) -> str:
    lines = [f"bisect {r['spec']} in {r['repo']}: good {r['good'][:10]}, bad {r['bad'][:10]} on {r['device']}"]
    ends = r.get("ends", {})
    for which in ("bad", "good"):
        if ends.get(which):
            lines.append(f" {which} end:" + _step_line(ends[which])[1:])
    if r["steps"]:
        lines.append(" steps:")
        lines += [_step_line(s) for s in r["steps"]]
    outcome = r.get("outcome")
    if outcome == "found":
        lines.append(f"first bad commit: {r['first_bad']} {r.get('first_bad_subject', '')}")
    elif outcome == "ambiguous":
        lines.append("the first bad commit is one of these (the commits between were skipped, so git cannot tell):")
        lines += [f"  {c['commit']} {c['subject']}" for c in r["candidates"]]
    elif outcome == "ends_wrong":
        e = {k: (v or {}).get("verdict", "not judged") for k, v in ends.items()}
        lines.append(f"nothing to bisect: GOOD is {e.get('good')} and BAD is {e.get('bad')}; the point must pass at "
                     "GOOD and fail at BAD (each end's reason is above).")
    elif outcome == "interrupted":
        lines.append("interrupted: the bisection was reset and its worktree removed; the repository is as it was.")
    else:
        lines.append("git bisect did not name a first bad commit; its output ends:")
        lines.append(r.get("git_output_tail", "")[-800:])
    return "\n".join(lines) + "\n"
