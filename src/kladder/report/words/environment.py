"""The words for a climb's environment, and for a climb that could not start or ran nothing."""
from __future__ import annotations

from ...core.results import StartErrorFacts
from ...core.sizes import human_bytes

ENV_SHOWN = 4


def fingerprint_text(fp: dict) -> str:
    """The environment in one line: "python 3.11.7, torch 2.13.0+cpu, triton 3.9.0, ..."."""
    if not fp:
        return "environment unknown"
    torch = f"torch {fp['torch']}"
    built = [f"CUDA {fp['cuda']}" if fp.get("cuda") else "", f"ROCm {fp['rocm']}" if fp.get("rocm") else "",
             f"driver {fp['driver']}" if fp.get("driver") else ""]
    if any(built):
        torch += f" ({', '.join(b for b in built if b)})"
    parts = [f"python {fp['python']}", torch, f"triton {fp['triton']}" if fp.get("triton") else "no triton",
             _device_text(fp.get("device")), f"kladder {fp['kladder']}"]
    git = fp.get("git")
    if git:
        parts.append(f"git {git['commit'][:10]}{' (uncommitted changes)' if git['dirty'] else ''}")
    env = fp.get("env") or {}
    shown = [f"{k}={v}" for k, v in list(env.items())[:ENV_SHOWN]]
    if len(env) > ENV_SHOWN:
        shown.append(f"+{len(env) - ENV_SHOWN} more (--json)")
    return ", ".join(parts) + ("; env " + " ".join(shown) if shown else "; no compile-steering env")


def _device_text(d: dict | None) -> str:
    if not d:
        return "device not queried"
    if d["kind"] == "cpu":
        return f"cpu ({d['name']})"
    more = f" x{d['count']}" if d.get("count", 1) > 1 else ""
    return f"{d['name']} ({d['arch']}, capability {d['capability']}){more}"


def target_warning_text(w: dict) -> str:
    return (f"{w['var']}={w['value']} names a build target that the live device ({w['name']}, {w['device']}) is not: "
            "code dispatched by the build target, not by the device, runs a kernel built or chosen for another GPU")


def nothing_ran_text(n_points: int) -> str:
    if n_points == 0:
        return "nothing ran: the rungs climbed generated no point for this spec, so nothing was tested"
    every = "the one point was" if n_points == 1 else f"all {n_points} points were"
    return (f"nothing ran: {every} skipped (each with its reason above), so nothing was tested; "
            "the climb exits 5, not 0")


# ---------------------------------------------------------------------------- a climb that could not start
def device_start_text(x: dict) -> str:
    """report.start_error's line when the device refused (devicestart.DeviceStartError's facts)."""
    gpu = f" on GPU {x['gpu']}" if x.get("gpu") not in (None, "") else ""
    head = f"{x['what']}{gpu} failed for {x['waited_s']:g} s: {x['error'] or 'no error text'}"
    return f"{head}; {device_holders_text(x)}; wait for them to finish, or give --devices a free GPU"


def device_start_error(facts: dict) -> StartErrorFacts:
    """report.start_error when the device refused: devicestart.DeviceStartError's facts and their line."""
    return StartErrorFacts(**facts, message=device_start_text(facts))


def device_holders_text(x: dict) -> str:
    if x.get("free_bytes") is None:
        mem = "the device's free memory is unknown (no nvidia-smi)"
    else:
        mem = f"the device had {human_bytes(x['free_bytes'])} free of {human_bytes(x['total_bytes'] or 0)}"
    holders = x.get("holders")
    if holders is None:
        return f"{mem}, held by processes unknown"
    if not holders:
        return f"{mem}, no process listed as holding it"
    shown = ", ".join(f"pid {h['pid']} {h['name']}" + (f" ({human_bytes(h['used_bytes'])})" if h.get("used_bytes")
                                                       is not None else "") for h in holders[:6])
    more = f" and {len(holders) - 6} more" if len(holders) > 6 else ""
    return f"{mem}, held by {len(holders)} process{'es' if len(holders) != 1 else ''}: {shown}{more}"


def collection_failed_text(errors: int, selected: int) -> str:
    """The pytest plugin: collection failed, so no kladder point ran (not 'all were skipped')."""
    which = f"{errors} error{'s' if errors != 1 else ''}, shown above" if errors else "a usage error: pytest's ERROR line"
    return (f"no point ran: pytest's collection failed ({which}), so nothing was tested "
            f"({selected} kladder point{'s' if selected != 1 else ''} had been collected)")
