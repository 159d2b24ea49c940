"""The words of rung 7 (what ran, flags, imports) and rung 6 (collectives)."""
from __future__ import annotations

from ...core.facts import (
    CaughtImportFacts,
    CollectiveFacts,
    DispatchFacts,
    FlagNoEffectFacts,
    ImportContractFacts,
    RanksHungFacts,
)
from .base import ints, says


def launch_text(x: dict) -> str:
    """A Triton launch: `_decode_kernel(BLOCK_N=64, num_warps=4)`."""
    params = ", ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in x["params"].items())
    return f"{x['name']}({params})"


def _some(names: list, total: int) -> str:
    more = f", ... ({total} in all)" if total > len(names) else ""
    return ", ".join(names) + more


def ran_text(x) -> str:
    """What a call ran (facts.RanFacts): its Triton launches, GPU kernels and Python functions."""
    parts = []
    if x.launches:
        parts.append("Triton " + _some([launch_text(one) for one in x.launches], x.n_launches))
    if x.gpu:
        parts.append("GPU kernels " + _some([g[:80] for g in x.gpu], x.n_gpu))
    if x.functions:
        parts.append("Python " + _some(x.functions, x.n_functions))
    return "; ".join(parts) or "no Triton kernel, GPU kernel or Python function of the kernel's own"


def expect_text(e: dict) -> str:
    what = f"`{e['kernel']}`" + (f" launched with {', '.join(f'{k}={v}' for k, v in e['launch'].items())}" if e["launch"] else "")
    return f"{e['label']} ({what})" if e["label"] else what


def env_values(env: dict) -> str:
    """{'MYLIB_FAST': '1', 'OTHER': None} -> 'MYLIB_FAST=1, OTHER unset'."""
    return ", ".join(f"{k} unset" if v is None else f"{k}={v}" for k, v in env.items())


def env_setting(env: dict, env_set: str | None, started: dict | None) -> str:
    """How a point set its variables, in words."""
    if env_set == "after_import":
        done = ", ".join(f"{k} removed" if v is None else f"{k}={v} set" for k, v in env.items())
        return (f"{done} after the kernel's module was imported and the kernel called once (the process "
                f"started with {env_values(started or {}) or 'them unset'})")
    return f"{env_values(env)} in the environment from the process's start"


@says(DispatchFacts)
def _dispatch(f, x: DispatchFacts) -> str:
    wanted = "; ".join(expect_text(e) for e in x.expected)
    where = f", with {env_setting(x.env, x.env_set, x.started)}" if x.env else ""
    late = (". A launcher that reads the variable once, at import or at its first call, keeps the value it read: "
            "a program that sets it later, as a serving launcher does from its config, never gets that path"
            if x.env_set == "after_import" else "")
    if not x.expected:                      # only runs=False expectations: what must not run ran
        banned = "; ".join(expect_text(e) for e in x.forbidden or [])
        return (f"{banned} must not run here{where} (the spec says the launcher refuses: runs=False), and the call "
                f"returned, having run: {ran_text(x.ran)}")
    also = (f". And {'; '.join(expect_text(e) for e in x.forbidden)} must not run here, but did"
            if x.forbidden else "")
    return (f"expected {wanted} to run here{where}, and it did not: the call took another path. Ran instead: "
            f"{ran_text(x.ran)}{late}{also}")


def _shown(x: FlagNoEffectFacts, v) -> str:
    """A flag's value as a run had it: `KLT_FAST=1`, `KLT_FAST unset` (a variable), `TWICE=True` (a keyword)."""
    if x.variable is not None:
        return f"{x.variable} unset" if v is None else f"{x.variable}={v}"
    return f"{x.flag}={v!r}"


@says(FlagNoEffectFacts)
def _flag_no_effect(f, x: FlagNoEffectFacts) -> str:
    seen = {"binary": "the same compiled binaries", "source": "the same code (kernel source and the constexprs it "
            "reads, argument specialisation, launch options: Triton's interpreter compiles nothing)",
            "names": "the same GPU kernels"}[x.how]
    ran = "; ".join(_shown(x, r["value"]) + (f" (started with {_shown(x, r['started'])})" if x.set else "")
                    + " ran " + (", ".join(launch_text(one) for one in r["launches"]) or ", ".join(g[:80] for g in r["gpu"]))
                    for r in x.runs)
    values = ", ".join("unset" if v is None and x.variable is not None else repr(v) for v in x.values)
    if x.set == "after_import":
        return (f"the variable {x.variable} changes nothing when it is set after the kernel's module was imported and the "
                f"kernel called once: its values {values}, each set then in a process that started with the first, all "
                f"ran {seen}. {ran}. The launcher reads it once (at import or at its first call) and keeps that value: "
                "a program that sets it from its config after importing the library, as serving launchers do, never "
                "gets what it asked for")
    return (f"the flag {x.flag} changes nothing: its values {values} all ran {seen}. "
            f"{ran}. The flag never reaches code generation, so no test can tell it on from off")


@says(ImportContractFacts)
def _import_contract(f, x: ImportContractFacts) -> str:
    if x.problem == "missing":
        return (f"downstream code imports {x.name}, and it does not resolve: {x.error}: {x.text}. "
                "A copy that imports it breaks, or falls back quietly")
    return (f"downstream code imports {x.name}, which resolves to {x.object}, and the kernel's call never runs it: "
            "the spec tests another object than the one downstream code uses")


@says(CaughtImportFacts)
def _caught_import(f, x: CaughtImportFacts) -> str:
    return (f"importing `{x.module}` raised {x.error} at {x.where} ({x.text}) and caught it: the module "
            "took another path and said nothing; rung 7's dispatch points show which kernels ran instead")


# ---------------------------------------------------------------------------- rung 6
_WRONG_KIND = {"values": "wrong values", "guard": "writes past its tensors (guard bytes)",
               "contract": "outputs of the wrong dtype, shape or device"}


@says(CollectiveFacts)
def _collective(f, x: CollectiveFacts) -> str:
    """The verdict, each rank's wrong calls, then what the collective returned: a line each."""
    ranks = "; ".join(f"rank {r}{' (lagging)' if int(r) == x.lag else ''} in {_calls_text(calls, x.queued)}"
                      for r, calls in x.ranks.items())
    where = (f"at every size of {x.dim}" if x.sizes_wrong == x.sizes else
             f"only at {x.dim} = {ints(x.sizes_wrong)} (of {ints(x.sizes)})")
    return (f"{f.mismatched:,} of {f.total:,} outputs wrong ({_ratio(f.mismatched, f.total)}) over {x.world} ranks "
            f"and {x.queued} calls queued before one synchronisation, {where}:\n{ranks}.\nThe collective completed "
            f"and returned {' and '.join(_WRONG_KIND.get(k, k) for k in x.kinds)}; the first wrong call of each "
            "rank follows")


def _calls_text(calls: list, queued: int) -> str:
    if not calls:
        return "none of its calls"
    shown = ", ".join(map(str, calls[:8])) + (f" and {len(calls) - 8} more" if len(calls) > 8 else "")
    return f"{len(calls)} of {queued} calls ({shown})"


def _ratio(n: int, total: int) -> str:
    return f"{100 * n / max(total, 1):.0f}%"


@says(RanksHungFacts)
def _ranks_hung(f, x: RanksHungFacts) -> str:
    places = "; ".join(_place_text(p, x) for p in x.ranks)
    return (f"the collective hung: no rank made progress for {x.waited_s:g} s (watchdog {x.watchdog_s:g} s), "
            f"and the ranks were killed: {places}")


def _place_text(p: dict, x: RanksHungFacts) -> str:
    who = f"rank {p['rank']}{' (lagging)' if p['rank'] == x.lag else ''}"
    n, phase, done = x.queued, p["phase"], p["finished"]
    size = f" ({x.dim} = {p['size']:,})" if p.get("size") is not None else ""
    if phase == "calls":
        where = f"in call {done + 1} of {n}{size}" if p["launched"] > done else f"before call {done + 1} of {n}{size}"
        return f"{who} stopped {where}, {done} finished"
    if phase == "sync":
        return f"{who} had queued all {n} calls; call {done + 1}{size} never finished"
    if phase == "done":
        return f"{who} had finished every call"
    if phase == "setup":
        return f"{who} stopped in setup (building its communicator)"
    return f"{who} stopped in its {phase} phase"
