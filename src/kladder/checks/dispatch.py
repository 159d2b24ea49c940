"""Dispatch (rung 7): the kernels a call ran, against the kernels the spec says must run there.
An expectation applies where its `when` matches the point (dims and config keys); it holds when
some launch, GPU kernel or Python function of the call matches its glob and, with `launch`,
a Triton launch carries those constexpr and launch-option values. A point where one does not
hold ran a fallback or another path, and the finding names what ran instead."""
from __future__ import annotations

from fnmatch import fnmatchcase

from ..outcome import Check, Finding
from ..facts import DispatchFacts

SHOWN = 12          # names of each kind kept in a finding or a note


def applies(expect, point) -> bool:
    """Whether an expectation's `when` matches the point's dims and config (a key the point
    does not set, a config key at the launcher's own config, does not match)."""
    if not expect.when:
        return True
    given = {**point.sizes, **point.kwargs}
    for key, want in expect.when.items():
        wanted = want if isinstance(want, (list, tuple)) else [want]
        if key not in given or not any(_same(given[key], w) for w in wanted):
            return False
    return True


def _same(a, b) -> bool:
    """Equal, and a bool only equals a bool (True is not the 1 of a block size)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def holds(expect, ran) -> bool:
    if expect.launch:
        return any(fnmatchcase(x["name"], expect.kernel) and _has(x["params"], expect.launch) for x in ran.launches)
    names = [x["name"] for x in ran.launches] + list(ran.gpu) + list(ran.functions)
    return any(fnmatchcase(n, expect.kernel) for n in names)


def _has(params: dict, want: dict) -> bool:
    return all(k in params and _same(params[k], v) for k, v in want.items())


def ran_facts(ran) -> dict:
    """What a call ran, as facts: each launch's name and params, the first GPU kernels and
    Python functions, and how many of each there were."""
    return {"launches": [{"name": x["name"], "params": x["params"]} for x in ran.launches[:SHOWN]],
            "n_launches": len(ran.launches), "gpu": list(ran.gpu)[:SHOWN], "n_gpu": len(ran.gpu),
            "functions": list(ran.functions)[:SHOWN], "n_functions": len(ran.functions)}


def expect_facts(expect) -> dict:
    return {"kernel": expect.kernel, "launch": dict(expect.launch or {}), "label": expect.label,
            "when": {k: list(v) if isinstance(v, tuple) else v for k, v in (expect.when or {}).items()}}


def dispatch(spec, point, ran) -> Finding | None:
    missing = [e for e in spec.expectations if applies(e, point) and not holds(e, ran)]
    if not missing:
        return None
    return Finding(Check.DISPATCH, facts=DispatchFacts(expected=[expect_facts(e) for e in missing], ran=ran_facts(ran)))
