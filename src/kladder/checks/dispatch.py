"""Dispatch (rung 7): the kernels a call ran, against the kernels the spec says must run there.
An expectation applies where its `when` matches the point: its dims, its config (a keyword the
call leaves out at the launcher's default), its environment ("$NAME": the value the point sets,
else the variable as the process that ran the call has it; None: unset) and the toolchain
("torch": ">=2.6", "triton", "cuda", "capability", read from the environment fingerprint where
the call ran). An expectation whose toolchain condition does not hold is not judged there, and
the point's note says which and why. One that applies holds when some launch, GPU kernel or
Python function of the call matches its glob and, with `launch`, a Triton launch carries those
constexpr and launch-option values. A point where one does not hold ran a fallback or another
path, and the finding names what ran instead (and how the point set its environment)."""
from __future__ import annotations

from fnmatch import fnmatchcase

from ..core.facts import DispatchFacts
from ..core.notation import EnvSet, Toolchain
from ..core.outcome import Check, Finding
from ..core.spec import when_holds, when_text
from ..core.versions import holds as version_holds

SHOWN = 12          # names of each kind kept in a finding or a note


def _listed(want) -> list:
    return list(want) if isinstance(want, (list, tuple)) else [want]


def applies(expect, point, defaults=None, env=None) -> bool:
    """Whether an expectation's `when` matches the point's dims, config and environment (a
    config key the point does not set matches the launcher's default for it, `defaults`; a key
    with no default there does not match; `env`: the variables as the call had them, Ran.env,
    else as the point sets them). Toolchain keys are judged apart (`unmet`)."""
    if not expect.when:
        return True
    given = {**(defaults or {}), **point.sizes, **point.kwargs}
    env = {**{k: v for k, v in point.env}, **(env or {})}
    for key, want in expect.when.items():
        if Toolchain.has(key):
            continue
        if key.startswith("$"):
            if env.get(key[1:]) not in _listed(want):
                return False
        elif key not in given or not when_holds(want, given[key]):
            return False
    return True


def toolchain_of(device: str) -> dict:
    """The toolchain a `when` may name, as the fingerprint of this process reads it: torch,
    triton and CUDA versions, the live device's capability (None on the CPU)."""
    from ..core.fingerprint import fingerprint
    fp = fingerprint(None, device, env={})          # versions and the device only: the judge reads no environment
    return {Toolchain.TORCH: fp["torch"], Toolchain.TRITON: fp["triton"], Toolchain.CUDA: fp["cuda"],
            Toolchain.CAPABILITY: (fp["device"] or {}).get("capability")}


def names_toolchain(spec) -> bool:
    """Whether some expectation's `when` names the toolchain (the fingerprint is read only then)."""
    return any(Toolchain.has(k) for e in spec.expectations for k in (e.when or {}))


def unmet(expect, have: dict) -> list[dict]:
    """Each toolchain condition of `expect` that does not hold with `have` (toolchain_of):
    [{key, want, have}] (have None: absent here, e.g. no CUDA build, no GPU)."""
    return [{"key": str(k), "want": w, "have": have.get(k)} for k, w in (expect.when or {}).items()
            if Toolchain.has(k) and not version_holds(w, have.get(k))]


def _same(a, b) -> bool:
    """Equal, and a bool only equals a bool (True is not the 1 of a block size)."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def refusal(spec, point, error: BaseException, device: str):
    """The runs=False expectation that applies at this point (its toolchain condition holding on
    `device`) and whose `raises` the kernel's exception is: the launcher refused as documented. Or None."""
    from ..core.spec import launcher_defaults
    for e in spec.expectations:
        if e.refuses(error) and applies(e, point, launcher_defaults(spec.kernel)) \
                and not (names_toolchain(spec) and unmet(e, toolchain_of(device))):
            return e
    return None


def refusing(spec, point) -> bool:
    """Some runs=False expectation with kernel '*' applies at this point: the launcher is documented
    to refuse there, so the call's values have nothing to be judged against."""
    from ..core.spec import launcher_defaults
    return any(not e.runs and e.kernel == "*" and applies(e, point, launcher_defaults(spec.kernel))
               for e in spec.expectations)


def holds(expect, ran) -> bool:
    if not expect.runs and expect.kernel == "*":
        return True                                   # a call that returned ran something
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
            "when": {k: when_text(v) for k, v in (expect.when or {}).items()}}


def started_env(spec, point) -> dict:
    """What each variable a point sets after import held when its process started (the flag's
    other value, Flag.before)."""
    flags = {f.env: f for f in spec.toolchain.flags if f.env is not None}
    return {k: flags[k].before(v) for k, v in point.env if k in flags}


def env_facts(spec, point) -> dict:
    """How the point set its environment, for a finding: {env, env_set, started} (started: what
    the variables were when the process started, for a point that sets them after import)."""
    if not point.env:
        return {}
    out = {"env": {k: v for k, v in point.env}, "env_set": str(point.env_set or EnvSet.AT_START)}
    if point.env_set == EnvSet.AFTER_IMPORT:
        out["started"] = started_env(spec, point)
    return out


def dispatch(spec, point, ran, have: dict | None = None) -> tuple[Finding | None, list[dict]]:
    """(the finding for the expectations that applied and did not hold, the expectations not
    judged because a toolchain condition does not hold here: [{kernel, label, unmet}])."""
    from ..core.spec import launcher_defaults
    defaults = launcher_defaults(spec.kernel)
    have = have if have is not None else {}
    missing, forbidden, skipped = [], [], []
    for e in spec.expectations:
        if not applies(e, point, defaults, getattr(ran, "env", None)):
            continue
        off = unmet(e, have)
        if off:
            skipped.append({"kernel": e.kernel, "label": e.label, "unmet": off})
        elif e.runs and not holds(e, ran):
            missing.append(e)
        elif not e.runs and holds(e, ran):
            forbidden.append(e)
    if not missing and not forbidden:
        return None, skipped
    return Finding(Check.DISPATCH, facts=DispatchFacts(expected=[expect_facts(e) for e in missing], ran=ran_facts(ran),
                                                       forbidden=[expect_facts(e) for e in forbidden] or None,
                                                       **env_facts(spec, point))), skipped
