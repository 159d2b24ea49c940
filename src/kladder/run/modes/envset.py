"""Runs with environment variables set (rung 7): a point's call in a child process of its own,
on an empty cache, with the variables the point names either in the environment the process
starts with, or set after the kernel's module was imported and the kernel called once (what a
serving launcher does when it sets a variable from its config after importing the library; a
launcher that reads the variable once, at import or at its first call, then keeps the value it
read). None unsets a variable. The call is traced (tracing.traced_call: Triton launches, Python
functions, GPU kernels on CUDA) and its outputs come back for the judge. The dispatch and flags
modes use it; nothing here judges.

The child is `python -m kladder.run.modes.envset REF DEVICE OUT JOB`, JOB a JSON object
{point, env, after_import}; it writes the outputs to OUT (safetensors) and what ran to OUT.json."""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass

from ...core.outcome import NoteKind, Skip
from .base import Ran
from .jitcache import CACHE_VARS, REF_ENV, child_raised, run_child, with_env


@dataclass
class EnvRun:
    """One child process: the point it calls, the variables it sets (None: unset), whether it
    sets them after import and one call, and the variables as the process starts then."""
    label: str
    point: object
    env: dict
    after_import: bool = False
    started: dict | None = None


def run_env(h, runs: list[EnvRun]) -> list[tuple[dict, Ran]]:
    """Each run in a child process of its own, on an empty cache: (its outputs by name, what ran).
    A child whose kernel raised is the kernel's error; any other failure is kladder's or the spec's."""
    from safetensors.torch import load_file

    from ..isolation import child_timeout, worker_env
    ref = os.environ.get(REF_ENV)
    if not ref:
        raise Skip(NoteKind.OUTSIDE_CLIMB, mode=h.point.mode)
    timeout = child_timeout(h.spec, h.device)
    results = []
    with tempfile.TemporaryDirectory(prefix="kladder-env-") as d:
        for i, run in enumerate(runs):
            cache = os.path.join(d, f"cache{i}")
            start = (run.started or {}) if run.after_import else run.env
            env = with_env({**worker_env(h.device), **{var: os.path.join(cache, var.lower()) for var in CACHE_VARS}}, start)
            out = os.path.join(d, f"{i}.safetensors")
            job = json.dumps({"point": run.point.to_dict(), "env": run.env, "after_import": run.after_import})
            cmd = [sys.executable, "-m", "kladder.run.modes.envset", ref, h.device, out, job]
            run_child(cmd, env, timeout, f"a process with {run.label}", run.label)
            with open(out + ".json") as f:
                ran = json.load(f)
            results.append((load_file(out), Ran(ran["launches"], ran["gpu"], ran["functions"], run.label, ran["env"])))
    return results


def child(argv: list[str]) -> int:
    import torch
    from safetensors.torch import save_file

    from ...gen.load import load_spec
    from ...core.point import Point
    from ..harness import Harness
    from .tracing import traced_call
    ref, device, out, job = argv[:4]
    job = json.loads(job)
    spec = load_spec(ref)                          # imports the kernel's module, with the environment as it started
    torch.utils.deterministic.fill_uninitialized_memory = True
    point = Point.from_dict(job["point"])
    h = Harness(spec, point, device)
    try:
        if job["after_import"]:
            h.call(h.prepare())                    # the kernel called once, then the variables set
            for k, v in job["env"].items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        prep = h.prepare()
        returned, ran = traced_call(h, prep)
    except Exception as e:  # noqa: BLE001
        return child_raised(e)
    outputs = h.outputs(prep, returned)
    save_file({n: t.detach().contiguous().cpu() for n, t in outputs.items() if isinstance(t, torch.Tensor)}, out)
    with open(out + ".json", "w") as f:
        json.dump({"launches": ran.launches, "gpu": ran.gpu, "functions": ran.functions,
                   "env": {k: os.environ.get(k) for k in sorted({*spec.when_variables, *job["env"]})}}, f)
    return 0


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
