"""What changed between two climbs of one spec, as facts (report/history_text.py words them):
points newly failing and newly passing, points whose output bits changed, points only one
climb ran, and rungs that got slower beyond noise. Points are matched by their id (the spec's
points are the same from one climb to the next: generators are seeded).

Slower beyond noise: a rung's points paired between the two climbs, the ratio of each point's
seconds; the rung is slower when the median ratio is at least SLOWER and a one-sided Wilcoxon
signed-rank test of the log ratios gives p < ALPHA (at least MIN_PAIRED pairs, and the rung
at least MIN_S seconds longer in all): one slow point on a busy machine is not a slower rung."""
from __future__ import annotations

import math
import statistics

from ..facts import DiffBitsFacts, DiffClimbFacts, DiffFacts, DiffPointFacts, SlowerRungFacts

GOOD = ("passed",)
BAD = ("failed", "flaky")
SLOWER, ALPHA, MIN_PAIRED, MIN_S = 1.25, 0.01, 6, 0.5


def _keyed(points: list[dict]) -> dict[str, dict]:
    """Points by id; a second point with the same id gets '#2' (ids are readable, not unique)."""
    out: dict[str, dict] = {}
    for p in points:
        key, n = p["id"], 1
        while key in out:
            n += 1
            key = f"{p['id']}#{n}"
        out[key] = p
    return out


def diff(a: dict, pa: list[dict], b: dict, pb: list[dict]) -> DiffFacts:
    """The changes from climb `a` (points `pa`) to the later climb `b` (points `pb`)."""
    ka, kb = _keyed(pa), _keyed(pb)
    both = [k for k in kb if k in ka]
    failing = [_pair(k, ka[k], kb[k]) for k in both if kb[k]["status"] in BAD and ka[k]["status"] not in BAD]
    passing = [_pair(k, ka[k], kb[k]) for k in both if ka[k]["status"] in BAD and kb[k]["status"] in GOOD]
    bits, unstable = [], []
    for k in both:
        x, y = ka[k], kb[k]
        if x["status"] != y["status"]:
            continue                         # a new verdict says more than its bits
        if x["nondeterministic"] or y["nondeterministic"]:
            unstable.append(k)
            continue
        changed = sorted(n for n in set(x["hashes"]) & set(y["hashes"]) if x["hashes"][n] != y["hashes"][n])
        if changed:
            bits.append(DiffBitsFacts(**_pair(k, x, y).to_dict(), outputs=changed))
    slower = [s for s in (_slower(r, ka, kb, both) for r in sorted({kb[k]["rung"] for k in both})) if s]
    worse = bool(failing or slower)
    return DiffFacts(a=_climb(a), b=_climb(b), newly_failing=failing, newly_passing=passing, bits_changed=bits,
                     nondeterministic=unstable, only_a=[k for k in ka if k not in kb], only_b=[k for k in kb if k not in ka],
                     slower_rungs=slower, toolchain=_toolchain_change(a, b), worse=worse)


def _pair(key: str, x: dict, y: dict) -> DiffPointFacts:
    return DiffPointFacts(id=key, rung=y["rung"], before=x["status"], after=y["status"], failure_before=x["failure"],
                          failure_after=y["failure"])


def _climb(c: dict) -> DiffClimbFacts:
    return DiffClimbFacts(id=c["id"], run_id=c.get("run_id"), spec=c.get("spec") or "", started=c.get("started"),
                          ended=c.get("ended"), verdict=c.get("verdict"), git_commit=c.get("git_commit"),
                          kladder_version=c.get("kladder_version"), toolchain=c.get("toolchain") or {})


def _toolchain_change(a: dict, b: dict) -> dict:
    ta, tb = a.get("toolchain") or {}, b.get("toolchain") or {}
    return {k: [ta.get(k), tb.get(k)] for k in sorted(set(ta) | set(tb)) if ta.get(k) != tb.get(k)}


def _slower(rung: int, ka: dict, kb: dict, both: list[str]) -> SlowerRungFacts | None:
    pairs = [(ka[k]["seconds"], kb[k]["seconds"]) for k in both if kb[k]["rung"] == rung
             and (ka[k]["seconds"] or 0) > 0 and (kb[k]["seconds"] or 0) > 0]
    if len(pairs) < MIN_PAIRED:
        return None
    logs = [math.log(y / x) for x, y in pairs]
    ratio = math.exp(statistics.median(logs))
    extra = sum(y for _, y in pairs) - sum(x for x, _ in pairs)
    if ratio < SLOWER or extra < MIN_S:
        return None
    from scipy.stats import wilcoxon
    p = float(wilcoxon(logs, alternative="greater").pvalue)
    if not p < ALPHA:
        return None
    return SlowerRungFacts(rung=rung, ratio=ratio, p=p, pairs=len(pairs), before_s=sum(x for x, _ in pairs),
                           after_s=sum(y for _, y in pairs))


def last_two(history, spec: str | None) -> tuple[dict, dict] | None:
    """The newest climb (of `spec`, or of any spec) and the one before it of the same spec."""
    newest = [c for c in history.climbs(spec, limit=50) if c["kind"] == "climb"][:1]
    if not newest:
        return None
    two = [c for c in history.climbs(newest[0]["spec"], limit=50) if c["kind"] == "climb"][:2]
    return (two[1], two[0]) if len(two) == 2 else None
