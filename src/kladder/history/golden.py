"""Golden hashes: a finished climb's output hashes kept for the (device, toolchain) it ran on
(`kladder golden record SPEC`), and a later climb's points checked against them (--golden).

The golden target is the toolchain a kernel's bits follow (store.toolchain: device name,
torch, Triton, CUDA/ROCm, driver). A climb on the same target compares with that target's
hashes; on another, with the newest golden of the spec, and the check names what changed in
the toolchain (other bits there may be the toolchain's, not the kernel's). Points with a
nondeterministic output (a NONDETERMINISTIC warning, rung 5's bitwise differences) are listed
apart and never kept or compared as if their bits were stable."""
from __future__ import annotations

import datetime

from ..core.facts import GoldenChangedFacts, GoldenFacts, GoldenRecordFacts
from .store import toolchain


def _finished(h, spec: str, climb: str | None) -> dict | None:
    if climb is not None:
        c = h.climb(climb)
        return c if c is not None and c["spec"] == spec else None
    done = [c for c in h.climbs(spec) if c["kind"] == "climb" and c["ended"]]
    return done[0] if done else None


def record(h, spec: str, climb: str | None = None) -> GoldenRecordFacts | None:
    c = _finished(h, spec, climb)
    if c is None:
        return None
    points = h.points(c["id"])
    stable = [p for p in points if p["hashes"] and not p["nondeterministic"]]
    target = c["toolchain"] or toolchain(c["fingerprint"])
    recorded = datetime.datetime.now().isoformat(timespec="seconds")
    h.keep_golden(spec, target, c["id"], recorded, stable)
    return GoldenRecordFacts(spec=spec, climb=c["id"], target=target, kept=len(stable), recorded=recorded,
                             nondeterministic=[p["id"] for p in points if p["nondeterministic"]],
                             no_hashes=[p["id"] for p in points if not p["hashes"] and not p["nondeterministic"]])


def check(h, spec: str, fingerprint: dict, rows: list[dict], strict: bool = False) -> GoldenFacts:
    """Each point of a climb (history/record.point_row's rows) against the golden hashes:
    equal, changed (which outputs), not kept (no golden for it), or nondeterministic (never
    compared). A spec with no golden hashes at all: recorded None, every point not kept (with
    `strict`, a failure: a gate on the bits that has nothing to compare with must not pass)."""
    target = toolchain(fingerprint or {})
    kept = h.golden(spec, target)
    if not kept:
        every = sorted(h.golden(spec), key=lambda g: g["recorded"], reverse=True)
        newest = every[0]["target"] if every else None
        kept = [g for g in every if g["target"] == newest]
    by_id = {g["id"]: g for g in kept}
    was = kept[0]["target"] if kept else {}
    equal, changed, not_kept, nondeterministic = [], [], [], []
    for r in rows:
        g = by_id.get(r["id"])
        if r["nondeterministic"]:
            nondeterministic.append(r["id"])
        elif g is None or not r["hashes"]:
            not_kept.append(r["id"])
        else:
            outs = sorted(n for n in set(g["hashes"]) | set(r["hashes"]) if g["hashes"].get(n) != r["hashes"].get(n))
            if outs:
                changed.append(GoldenChangedFacts(id=r["id"], outputs=outs))
            else:
                equal.append(r["id"])
    tools = {k: [was.get(k), target.get(k)] for k in sorted(set(was) | set(target)) if kept and was.get(k) != target.get(k)}
    return GoldenFacts(recorded=kept[0]["recorded"] if kept else None, target=was, toolchain=tools, strict=strict,
                       fails=strict and bool(changed or not kept), equal=equal, changed=changed, not_kept=not_kept,
                       nondeterministic=nondeterministic)


def unreadable(rows: list[dict], strict: bool = False) -> GoldenFacts:
    """The check when the history cannot be read: no golden hashes to compare with (with
    `strict`, a failure, as for a spec that has none)."""
    return GoldenFacts(recorded=None, target={}, toolchain={}, strict=strict, fails=strict, equal=[], changed=[],
                       not_kept=[r["id"] for r in rows if not r["nondeterministic"]],
                       nondeterministic=[r["id"] for r in rows if r["nondeterministic"]])
