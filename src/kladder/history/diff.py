"""What changed between two climbs of one spec, as facts (report/history_text.py words them):
points newly failing and newly passing, points whose output bits changed, points only one
climb ran, and rungs that got slower beyond noise. Points are matched by their id (the spec's
points are the same from one climb to the next: generators are seeded).

A gate that does not cry wolf: a new failure fails it; a slowdown only when asked
(`fail_on=("slower",)`, `kladder diff --fail-on slower`) and only where the timings can be
compared at all:
- on the same device (the toolchain's device name, and cpu or cuda);
- at comparable load: each climb's points' loads (outcome.Load, measured by run/sampling.py
  for every point and kept in the history) summed into the cores other processes kept busy, the
  share of time the workers waited for a CPU, the climb's other lanes and other processes on
  the device; two climbs differing by more than LOAD_CORES cores, WAIT_SHARE of the time,
  LANES lanes or DEVICE_PROCESSES processes are not compared ("timing not compared: load
  differed (...)"): a climb beside a CPU-bound process is slower for it, not for its kernel;
- beyond the spread each climb measured within itself: a point's time stretched by waiting
  for a CPU (seconds / (seconds - its worker's run-queue wait)); the rung's median stretch in
  each climb is how much its times could be the machine's, and the rung's ratio must exceed both.
Then a rung is slower when its points paired between the climbs (the kernel's stage seconds
where both timed it, else the points' seconds) have a median ratio of at least SLOWER and past
both spreads, a one-sided Wilcoxon signed-rank test of the log ratios gives p < ALPHA (at least
MIN_PAIRED pairs), and the rung took at least MIN_S seconds more: one slow point on a busy
machine is not a slower rung."""
from __future__ import annotations

import math
import statistics

from ..core.facts import (
    ClimbLoadFacts,
    DiffBitsFacts,
    DiffClimbFacts,
    DiffFacts,
    DiffPointFacts,
    SlowerRungFacts,
    TimingFacts,
)

GOOD = ("passed",)
BAD = ("failed", "flaky")
# MIN_PAIRED: the exact one-sided Wilcoxon test's smallest p at n pairs is 2^-n; at 6 it is 1/64,
# never below ALPHA (a 6-pair rung could not be called slower however slow): 7 pairs, 1/128.
SLOWER, ALPHA, MIN_PAIRED, MIN_S = 1.25, 0.01, 7, 0.5
# comparable load: at most this far apart
LOAD_CORES, WAIT_SHARE, LANES, DEVICE_PROCESSES = 0.5, 0.10, 0.5, 0.5
MAX_WAIT = 0.9           # a point that waited more of its time than this stretches by 10, not more


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


def diff(a: dict, pa: list[dict], b: dict, pb: list[dict], fail_on: tuple[str, ...] = ()) -> DiffFacts:
    """The changes from climb `a` (points `pa`) to the later climb `b` (points `pb`); `fail_on`:
    ("slower",) makes a slower rung fail the gate too."""
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
    timing = _timing(a, pa, b, pb)
    slower = []
    if timing.compared:
        slower = [s for s in (_slower(r, ka, kb, both) for r in sorted({kb[k]["rung"] for k in both})) if s]
    worse = bool(failing) or ("slower" in fail_on and bool(slower))
    return DiffFacts(a=_climb(a), b=_climb(b), newly_failing=failing, newly_passing=passing, bits_changed=bits,
                     nondeterministic=unstable, only_a=[k for k in ka if k not in kb], only_b=[k for k in kb if k not in ka],
                     slower_rungs=slower, timing=timing, toolchain=_toolchain_change(a, b), fail_on=list(fail_on),
                     worse=worse)


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


# ---------------------------------------------------------------------------- may the timings be compared
def _device(c: dict) -> str | None:
    kind, name = c.get("device"), (c.get("toolchain") or {}).get("device") or c.get("device_name")
    return f"{kind} ({name})" if kind and name else kind or name


def climb_load(points: list[dict]) -> ClimbLoadFacts | None:
    """The load a climb's points ran beside, summed over the points whose load was recorded."""
    loads = [p["load"] for p in points if p.get("load") and (p["load"].get("seconds") or 0) > 0]
    if not loads:
        return None
    wall = sum(x["seconds"] for x in loads)
    return ClimbLoadFacts(points=len(loads), seconds=round(wall, 3),
                          others_cores=round(sum(x.get("host_cpu_s") or 0.0 for x in loads) / wall, 3),
                          wait_share=round(sum(x.get("worker_wait_s") or 0.0 for x in loads) / wall, 3),
                          lanes=round(statistics.mean(x.get("lanes") or 0 for x in loads), 3),
                          device_processes=round(statistics.mean(x.get("processes") or 0 for x in loads), 3))


LIMITS = {"others_cores": LOAD_CORES, "wait_share": WAIT_SHARE, "lanes": LANES, "device_processes": DEVICE_PROCESSES}


def differed(la: ClimbLoadFacts, lb: ClimbLoadFacts) -> list[str]:
    """The measures of load on which two climbs differ past their limits (none: comparable)."""
    return [k for k, limit in LIMITS.items() if abs(getattr(la, k) - getattr(lb, k)) > limit]


def _timing(a: dict, pa: list[dict], b: dict, pb: list[dict]) -> TimingFacts:
    da, db = _device(a), _device(b)
    la, lb = climb_load(pa), climb_load(pb)
    apart = differed(la, lb) if la is not None and lb is not None else []
    if da != db:
        why = "device"
    elif la is None or lb is None:
        why = "not_recorded"
    elif apart:
        why = "load"
    else:
        why = "compared"
    return TimingFacts(compared=why == "compared", why=why, device_a=da, device_b=db, load_a=la, load_b=lb,
                       differed=apart)


# ---------------------------------------------------------------------------- slower rungs
def _seconds(x: dict, y: dict) -> tuple[float, float, bool]:
    """A point's seconds in each climb: the kernel's stage where both timed it, else the whole point's."""
    kx, ky = (x.get("stages") or {}).get("kernel"), (y.get("stages") or {}).get("kernel")
    if kx and ky and kx > 0 and ky > 0:
        return kx, ky, True
    return x["seconds"] or 0.0, y["seconds"] or 0.0, False


def stretch(p: dict) -> float:
    """How much waiting for a CPU stretched a point's time: seconds / (seconds - the wait); 1.0
    where its load is not recorded or it never waited."""
    load = p.get("load") or {}
    wall, wait = load.get("seconds") or 0.0, load.get("worker_wait_s") or 0.0
    if wall <= 0:
        return 1.0
    return 1.0 / (1.0 - min(wait / wall, MAX_WAIT))


def _slower(rung: int, ka: dict, kb: dict, both: list[str]) -> SlowerRungFacts | None:
    keys = [k for k in both if kb[k]["rung"] == rung]
    timed = {k: _seconds(ka[k], kb[k]) for k in keys}
    keys = [k for k in keys if timed[k][0] > 0 and timed[k][1] > 0]
    if len(keys) < MIN_PAIRED:
        return None
    logs = [math.log(timed[k][1] / timed[k][0]) for k in keys]
    ratio = math.exp(statistics.median(logs))
    before, after = sum(timed[k][0] for k in keys), sum(timed[k][1] for k in keys)
    spread_a = statistics.median(stretch(ka[k]) for k in keys)
    spread_b = statistics.median(stretch(kb[k]) for k in keys)
    if ratio < max(SLOWER, spread_a, spread_b) or after - before < MIN_S:
        return None
    from scipy.stats import wilcoxon
    p = float(wilcoxon(logs, alternative="greater").pvalue)
    if not p < ALPHA:
        return None
    return SlowerRungFacts(rung=rung, ratio=ratio, p=p, pairs=len(keys), before_s=before, after_s=after,
                           spread_a=round(spread_a, 3), spread_b=round(spread_b, 3),
                           kernel_stage=all(timed[k][2] for k in keys))


COMPARED = ("climb", "pytest")      # what a diff compares: climbs, and pytest runs of a spec (never a repro's one point)


def last_two(history, spec: str | None) -> tuple[dict, dict] | None:
    """The newest climb or pytest run (of `spec`, or of any spec) and the one before it of the
    same spec and kind."""
    newest = [c for c in history.climbs(spec, limit=50) if c["kind"] in COMPARED][:1]
    if not newest:
        return None
    kind = newest[0]["kind"]
    two = [c for c in history.climbs(newest[0]["spec"], limit=50) if c["kind"] == kind][:2]
    return (two[1], two[0]) if len(two) == 2 else None
