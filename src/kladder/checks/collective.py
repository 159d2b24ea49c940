"""A collective's ranks (rung 6): every call of every rank against the reference collective,
and how the run ended. A wrong protocol rarely gives a wrong number in a unit test: it hangs,
or completes and returns stale data in some calls of some ranks (aiter #4812: 127 of 128
outputs wrong). So the finding counts the wrong calls by rank and by message size, says which
rank lagged, and keeps the first wrong call of each rank as its own finding (values, guard
bytes, contract), located as any other output is.

A hang (the watchdog's), a raise, a crash and a device fault in a rank are findings too,
naming the rank and the call."""
from __future__ import annotations

from ..core.outcome import Check, Finding
from ..core.facts import CollectiveFacts, ContractFacts, CrashedFacts, DeviceFaultFacts, RaisedFacts, RanksHungFacts
from ..core.sizes import ITEMSIZE, dtype_of, shape_of
from . import contract, guards, values
from .pattern import where_of


def judge(spec, point, seen, device: str) -> list[Finding]:
    """`seen` is a run/modes/base.Ranks: the calls each rank finished, and how the run ended."""
    how = seen.ended["how"]
    if how == "hung":
        return [_hung(seen)]
    if how in ("raised", "died"):
        return [_stopped(seen.ended)]
    wrong = []
    for rc in seen.calls:
        found = call_findings(spec, point, rc, device)
        for f in found:
            f.call = rc.label
        if found:
            wrong.append((rc, found))
    if not wrong:
        return []
    return [_summary(spec, seen, wrong)] + _first_of_each_rank(wrong)


def call_findings(spec, point, rc, device: str) -> list[Finding]:
    """One rank's call: guard bytes, then each output's contract, then its values."""
    sizes = {**point.sizes, spec.message_dim: rc.size}
    found = []
    for name, (before, after) in rc.damaged.items():
        f = guards.guards(name, list(before), list(after), ITEMSIZE[dtype_of(spec, name, point.dtype_of)])
        if f:
            found.append(f)
    for name in spec.outputs:
        dtype, shape = dtype_of(spec, name, point.dtype_of), shape_of(spec, name, sizes)
        if name in rc.returned:
            found.append(Finding(Check.CONTRACT, name, facts=ContractFacts(not_tensor=rc.returned[name])))
            continue
        out = rc.outputs[name]
        bad = contract.contract(name, out, shape, dtype, "cpu")      # read back to the CPU; its device is below
        got = rc.devices.get(name, "cpu")
        if got.split(":")[0] != device and (bad is None or bad.facts.problems is not None):
            problems = (bad.facts.problems if bad else []) + [["device", got, device]]
            bad = Finding(Check.CONTRACT, name, facts=ContractFacts(problems=problems))
        if bad:
            found.append(bad)
            continue
        about = {"dtype": dtype, "shape": list(shape), "mode": "collective"}
        f = values.compare(name, out, rc.expected[name], spec.tolerance_for(dtype, point.config), where_of(spec, name), about)
        if f:
            found.append(f)
    return found


def _summary(spec, seen, wrong) -> Finding:
    by_rank = {str(r): [] for r in range(seen.world)}
    for rc, _ in wrong:
        by_rank[str(rc.rank)].append(rc.call + 1)
    kinds = sorted({str(f.check) for _, found in wrong for f in found})
    facts = CollectiveFacts(ranks=by_rank, sizes_wrong=sorted({rc.size for rc, _ in wrong}), sizes=sorted(set(seen.sizes)),
                            dim=spec.message_dim, world=seen.world, lag=seen.lag, queued=len(seen.sizes), kinds=kinds)
    return Finding(Check.COLLECTIVE, next(iter(spec.outputs)), mismatched=len(wrong), total=len(seen.calls),
                   facts=facts)


def _first_of_each_rank(wrong) -> list[Finding]:
    seen_ranks, out = set(), []
    for rc, found in wrong:
        if rc.rank not in seen_ranks:
            seen_ranks.add(rc.rank)
            out += found
    return out


def _hung(seen) -> Finding:
    e = seen.ended
    facts = RanksHungFacts(watchdog_s=e["watchdog_s"], waited_s=e["waited_s"], queued=e["queued"], dim=e["dim"],
                           lag=seen.lag, ranks=e["ranks"])
    return Finding(Check.RANKS_HUNG, call=e["label"], facts=facts)


def _stopped(e: dict) -> Finding:
    """A rank that raised, faulted the device or died while the others waited for it."""
    if e["how"] == "died":
        return Finding(Check.CRASHED, call=e["label"], facts=CrashedFacts(signal=e["signal"], frames=[], rank=e["rank"]))
    if e["kind"] == "device_fault":
        return Finding(Check.DEVICE_FAULT, call=e["label"], facts=DeviceFaultFacts(error=e["error"], text=e["text"], in_call=True))
    return Finding(Check.RAISED, call=e["label"], facts=RaisedFacts(error=e["error"], text=e["text"]))
