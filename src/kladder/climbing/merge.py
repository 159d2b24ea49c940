"""`kladder merge R1.json R2.json ... --json ALL.json`: the reports of one climb's shards
(`kladder climb --shard I/N`, shard.py) made one report, with verdicts as if one climb ran:
each rung's points united in the order one climb runs them, the rung verdicts, the lowest
failing rung and the exit code computed again from the points, the notes united.

Refused (a MergeError, exit 2): a file that is not a shard's report, reports of different
specs, devices, kladder versions, shard counts or options (seed, rungs, timeout, repetition,
replay), two reports of one shard, and a point in two reports. A missing shard is a warning
that names it: the merged report then holds the other shards' points only."""
from __future__ import annotations

import json
import math

from ..core.errors import MergeError
from ..core.outcome import Outcome
from ..core.results import ClimbReport, RungReport

# what every shard of one climb shares: the points and their judgement depend on it
SAME = ("spec", "device", "kladder_version")
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def read_report(path: str) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise MergeError(f"{path!r}: cannot read it ({e.strerror or e}); give the --json report of a "
                         "`kladder climb --shard I/N`") from None
    except json.JSONDecodeError as e:
        raise MergeError(f"{path!r}: not JSON ({e.msg}, line {e.lineno}); give the --json report of a "
                         "`kladder climb --shard I/N`") from None
    if not isinstance(doc, dict) or "rungs" not in doc:
        raise MergeError(f"{path!r}: not a kladder report; give the --json report of a `kladder climb --shard I/N`")
    if not isinstance(doc.get("shard"), dict) or doc["shard"].get("index") is None:
        raise MergeError(f"{path!r}: not a shard's report (it has no shard field: a climb without --shard, or a merged "
                         "report); climb with --shard I/N and --json, then merge those reports")
    return doc


def check_same(docs: list[tuple[str, dict]]) -> list[str]:
    """MergeError where the reports are not one climb's shards; the warnings (missing shards,
    environments that differ) otherwise."""
    (p0, d0), warnings = docs[0], []
    for path, d in docs[1:]:
        for key in SAME:
            if d.get(key) != d0.get(key):
                raise MergeError(f"{path!r} climbed {key} {d.get(key)!r}, {p0!r} {key} {d0.get(key)!r}: merge only the "
                                 "shards of one climb (the same spec, device, kladder, seed and options)")
        if d["shard"]["count"] != d0["shard"]["count"]:
            raise MergeError(f"{path!r} is shard {_of(d)}, {p0!r} shard {_of(d0)}: the shards of one climb share N "
                             "(--shard I/N)")
        a, b = d["shard"]["options"], d0["shard"]["options"]
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                raise MergeError(f"{path!r} climbed with {key} {a.get(key)!r}, {p0!r} with {key} {b.get(key)!r}: merge "
                                 "only the shards of one climb (the same spec, device, kladder, seed and options)")
        ca, cb = (x["shard"].get("costs") or {} for x in (d, d0))
        if ca.get("digest") != cb.get("digest"):
            raise MergeError(f"{path!r} dealt its points by {_costs(ca)}, {p0!r} by {_costs(cb)}: the shards' slices "
                             "may overlap or leave points out; climb every shard with the same --history (a copy of one "
                             "file), or every one with --no-history")
        for rung in sorted(set(d["shard"]["dealt"]) & set(d0["shard"]["dealt"]), key=int):
            if d["shard"]["dealt"][rung] != d0["shard"]["dealt"][rung]:
                raise MergeError(f"rung {rung}: {path!r} dealt {d['shard']['dealt'][rung]} points among the shards, "
                                 f"{p0!r} {d0['shard']['dealt'][rung]}: the shards made different points (a different "
                                 "spec file or kladder on each machine?); climb every shard from the same tree")
        for key in ("torch", "triton", "git"):
            if (d.get("fingerprint") or {}).get(key) != (d0.get("fingerprint") or {}).get(key):
                warnings.append(f"{path!r} and {p0!r} ran with different {key} "
                                f"({(d.get('fingerprint') or {}).get(key)!r}, {(d0.get('fingerprint') or {}).get(key)!r})")
    seen: dict[int, str] = {}
    for path, d in docs:
        i = d["shard"]["index"]
        if i in seen:
            raise MergeError(f"{seen[i]!r} and {path!r} are both shard {_of(d)}: give each shard's report once")
        seen[i] = path
    count = d0["shard"]["count"]
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        warnings.insert(0, f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing: the merged report "
                           "holds the other shards' points only")
    return warnings


def _costs(c: dict) -> str:
    """The costs a shard dealt by, as its report says them (shard.Costs.record)."""
    if not c:
        return "count (a kladder before costs)"
    if c.get("source") == "history":
        return f"the costs of {c.get('known')} points in its history (table {c.get('digest')})"
    return "the points' bytes (no history)"


def _of(d: dict) -> str:
    return f"{d['shard']['index']}/{d['shard']['count']}"


def merge(paths: list[str]) -> tuple[ClimbReport, list[str]]:
    """The one report of the shards' reports at `paths`, and the warnings to print."""
    if not paths:
        raise MergeError("give the --json reports of the shards, e.g. kladder merge r1.json r2.json r3.json --json all.json")
    docs = [(p, read_report(p)) for p in paths]
    warnings = check_same(docs)
    docs.sort(key=lambda pd: pd[1]["shard"]["index"])
    d0 = docs[0][1]
    report = ClimbReport(d0["spec"], d0["ref"], d0["device"], device_name=d0.get("device_name", ""),
                         started=min(d.get("started", "") for _, d in docs), kladder_version=d0.get("kladder_version", ""),
                         fingerprint=d0.get("fingerprint") or {})
    report.seconds = max(d.get("seconds", 0.0) for _, d in docs)        # the matrix's wall time: its slowest shard
    report.interrupted = any(d.get("interrupted") for _, d in docs)
    report.start_error = next((d["start_error"] for _, d in docs if d.get("start_error")), None)
    report.kladder_error = next((d["kladder_error"] for _, d in docs if d.get("kladder_error")), None)
    report.rungs = _rungs(docs)
    report.shrunk = _shrunk(docs, report)
    report.shard = {"index": None, "count": d0["shard"]["count"], "options": d0["shard"]["options"],
                    **({"costs": d0["shard"]["costs"]} if d0["shard"].get("costs") else {}),
                    "dealt": _united(docs, "dealt"), "merged": [d["shard"]["index"] for _, d in docs],
                    "positions": {str(r.rung): list(range(len(r.outcomes))) for r in report.rungs if r.outcomes}}
    return report, warnings


def _shrunk(docs, report: ClimbReport) -> list[dict]:
    """Each shard shrank its own first failure of a rung: of those, the one whose point comes
    first in the merged rung's order (one climb's first failure, when a shard held it)."""
    order = {o.point.id: i for rr in report.rungs for i, o in enumerate(rr.outcomes)}
    best: dict[int, dict] = {}
    for _, d in docs:
        for s in d.get("shrunk") or []:
            if s["rung"] not in best or order.get(s["failed_id"], 1 << 30) < order.get(best[s["rung"]]["failed_id"], 1 << 30):
                best[s["rung"]] = s
    return [best[r] for r in sorted(best)]


def _united(docs, key: str) -> dict:
    out: dict = {}
    for _, d in docs:
        out.update(d["shard"][key])
    return out


def _rungs(docs: list[tuple[str, dict]]) -> list[RungReport]:
    """Every rung as the shards report it, its points from all of them in one climb's order."""
    rungs = []
    for r0 in docs[0][1]["rungs"]:
        rung = str(r0["rung"])
        mine = [next(r for r in d["rungs"] if r["rung"] == r0["rung"]) for _, d in docs]
        rr = RungReport(r0["rung"], r0["title"], climbed=any(r["climbed"] for r in mine),
                        note=next((r["note"] for r in mine if r["climbed"]), r0["note"]),
                        seconds=max(r.get("seconds", 0.0) for r in mine),      # wall time, as the report's
                        interrupted=any(r.get("verdict") == "interrupted" for r in mine))
        placed, where = [], {}
        for (path, d), r in zip(docs, mine, strict=True):
            outcomes = (d["shard"].get("outcomes") or {}).get(rung, [])
            positions = d["shard"]["positions"].get(rung, [])
            for pos, od in zip(positions, outcomes, strict=False):   # an interrupted rung: its points so far
                o = Outcome.from_dict(_finite(od))
                key = o.point.to_json()
                if key in where:
                    raise MergeError(f"point {o.point.id} is in both {where[key]!r} and {path!r}: a point belongs to "
                                     "one shard; merge the reports of one climb's shards (--shard 1/N ... N/N)")
                where[key] = path
                placed.append((pos, d["shard"]["index"], o))
            if len(outcomes) != len(r.get("points", outcomes)):
                raise MergeError(f"{path!r}: rung {rung} lists {len(r['points'])} points but its shard record "
                                 f"{len(outcomes)}: the report was edited or cut; climb the shard again")
        rr.outcomes = [o for _, _, o in sorted(placed, key=lambda t: (t[0], t[1]))]
        rungs.append(rr)
    return rungs


def _finite(v):
    """A lossless outcome record as written (strict JSON writes a non-finite float as "NaN",
    "Infinity", "-Infinity") with its numbers back: a kernel's NaN is data about it."""
    if isinstance(v, dict):
        return {k: _number(k, x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


NUMBERS = ("max_abs_err", "kernel", "reference", "allowed")


def _number(key: str, v):
    if key in NUMBERS and isinstance(v, str) and v in NON_FINITE:
        return NON_FINITE[v]
    if key == "facts" and isinstance(v, dict):
        return {k: NON_FINITE.get(x, x) if isinstance(x, str) else _finite(x) for k, x in v.items()}
    return _finite(v)
