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

from ..facts import GoldenFacts
from .store import toolchain


def _finished(h, spec: str, climb: str | None) -> dict | None:
    if climb is not None:
        c = h.climb(climb)
        return c if c is not None and c["spec"] == spec else None
    done = [c for c in h.climbs(spec) if c["kind"] == "climb" and c["ended"]]
    return done[0] if done else None


def record(h, spec: str, climb: str | None = None) -> dict | None:
    c = _finished(h, spec, climb)
    if c is None:
        return None
    points = h.points(c["id"])
    stable = [p for p in points if p["hashes"] and not p["nondeterministic"]]
    target = c["toolchain"] or toolchain(c["fingerprint"])
    recorded = datetime.datetime.now().isoformat(timespec="seconds")
    h.keep_golden(spec, target, c["id"], recorded, stable)
    return {"spec": spec, "climb": c["id"], "target": target, "kept": len(stable), "recorded": recorded,
            "nondeterministic": [p["id"] for p in points if p["nondeterministic"]],
            "no_hashes": [p["id"] for p in points if not p["hashes"] and not p["nondeterministic"]]}


def check(h, spec: str, fingerprint: dict, rows: list[dict], strict: bool = False) -> GoldenFacts | None:
    """Each point of a climb (history/record.point_row's rows) against the golden hashes:
    equal, changed (which outputs), not kept (no golden for it), or nondeterministic. None
    when the spec has no golden hashes at all."""
    target = toolchain(fingerprint or {})
    kept = h.golden(spec, target)
    if not kept:
        every = sorted(h.golden(spec), key=lambda g: g["recorded"], reverse=True)
        if not every:
            return None
        newest = every[0]["target"]
        kept = [g for g in every if g["target"] == newest]
    by_id = {g["id"]: g for g in kept}
    was = kept[0]["target"]
    out = {"recorded": kept[0]["recorded"], "target": was, "strict": strict,
           "toolchain": {k: [was.get(k), target.get(k)] for k in sorted(set(was) | set(target)) if was.get(k) != target.get(k)},
           "equal": [], "changed": [], "not_kept": [], "nondeterministic": []}
    for r in rows:
        g = by_id.get(r["id"])
        if r["nondeterministic"]:
            out["nondeterministic"].append(r["id"])
        elif g is None or not r["hashes"]:
            out["not_kept"].append(r["id"])
        else:
            changed = sorted(n for n in set(g["hashes"]) | set(r["hashes"]) if g["hashes"].get(n) != r["hashes"].get(n))
            (out["changed"] if changed else out["equal"]).append({"id": r["id"], "outputs": changed} if changed else r["id"])
    return GoldenFacts(**out)
