"""JIT cache: a fresh cache directory against a warm one. A server restarts onto the cache its
last run filled (Triton's compiled kernels and autotuning results, Inductor's, a library's own
tuned-config files); a key that misses something the code depends on hands the warm process
another call's code. Process 1 starts on an empty cache directory and calls A, then B (another
config or shape), as a server's first life does; process 2 starts on the cache process 1 left
(a restart) and calls A twice. Both A results must equal the reference, and each other bit for
bit, unless A's two calls in the warm process differ (float atomics) and the spec allows it
(Spec(deterministic=False)): those outputs are then judged against the reference alone, the cold
A's too (the note says so); with Spec(deterministic=True) they fail as the kernel's
nondeterminism. With Spec(grads=...) each call runs the backward too: the gradients come back
with the outputs.

The two processes are children of the worker (`python -m kladder.run.modes.jitcache`), with
TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR and the spec's declared cache variables pointed at
the one temporary directory. Under Triton's interpreter nothing is compiled, but a library's
own disk caches still run; the report says how many files the cold process left."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from ...core.notation import Mode
from ...core.outcome import Cause, KernelError, Note, NoteKind, Skip, SpecBroken
from .aba import run_to_run
from . import base
from .base import Call, Measured, Same

CACHE_VARS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
REF_ENV = "KLADDER_SPEC_REF"
KEEP = "--keep="
SEP = "|"                   # a later kept point's outputs: 'i|name' (output names hold no '|': spec.py)


@dataclass
class Process:
    """One child process: the points it runs in order (the first one's outputs and launches are
    kept), the cache directory it runs on (processes that name the same `cache` share one
    directory, created empty for the first of them), and what it adds to the environment."""
    label: str
    points: list
    cache: str = "cache"
    env: dict = field(default_factory=dict)
    keep: int = 1           # the first `keep` points' outputs come back (A twice: its run-to-run variation)


@dataclass
class Result:
    outputs: dict           # the first point's outputs, by name (on the CPU)
    launches: list          # the Triton launches of the first point's call (tracing.Launch.to_dict())
    files: int              # files in the process's cache directory once it exited
    more: list = field(default_factory=list)    # the outputs of the next `keep - 1` points, in order


def with_env(base: dict, env: dict) -> dict:
    """`base` with `env` over it; a None value removes the variable (kl.Flag values)."""
    out = {**base, **{k: v for k, v in env.items() if v is not None}}
    for k, v in env.items():
        if v is None:
            out.pop(k, None)
    return out


RAISED = "kladder-child-raised: "        # the last line a mode's child writes to stderr when the kernel raised


def child_raised(e: BaseException) -> int:
    """In a mode's child: say on stderr what the kernel raised, as data (its type's name and
    its message), and return the exit status that means it (3)."""
    if isinstance(e, KernelError):                   # the harness's wrapper: what the kernel itself raised
        e = e.error
    print(f"the kernel raised {type(e).__name__}: {e}", file=sys.stderr)
    print(RAISED + json.dumps({"error": type(e).__name__, "text": str(e)}), file=sys.stderr)
    return 3


def _raised(stderr: str) -> BaseException:
    """The child's kernel error rebuilt with its type's name and message, so that the worker
    judges it as it judges one raised in its own process (faults.kernel_error: an error of
    Triton's interpreter is not the kernel's)."""
    for line in reversed(stderr.strip().splitlines()):
        if line.startswith(RAISED):
            d = json.loads(line[len(RAISED):])
            return type(str(d["error"]), (RuntimeError,), {})(str(d["text"]))
    return RuntimeError((stderr.strip().splitlines() or ["exited 3"])[-1])


def run_child(cmd: list[str], env: dict, timeout: float, where: str, label: str) -> None:
    """Run one mode's own process (run/forkserver.run: as a new process, forked warm where the
    climb's fork server can serve it): its timeout and a kernel error (exit 3) are the kernel's
    (KernelError, `where` names the process; the error as the child's kernel raised it), any
    other failure is the spec's (SpecBroken)."""
    from ..forkserver import run
    try:
        p = run(cmd, env, timeout)            # forked from the climb's server where it can be, else afresh
    except subprocess.TimeoutExpired:
        raise KernelError(TimeoutError(f"the process did not finish within {timeout:g} s"), where) from None
    if p.returncode == 3:
        raise KernelError(_raised(p.stderr), where)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["exited " + str(p.returncode)])[-1]
        raise SpecBroken(NoteKind.PROCESS_FAILED, label=label, text=err)


def run_processes(h, processes: list[Process]) -> list[Result]:
    """Run the processes, each a child of this worker (`python -m kladder.run.modes.jitcache`)
    with TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR pointed at its cache directory: a process
    starts once the one before it on the same cache directory has ended (a restart runs on what
    its predecessor left), and at once where its directory is its own (cachekey's B on an empty
    cache beside A on the shared one: each compiles from nothing, and on a GPU each compile is
    seconds). A child whose kernel raised is the kernel's error; any other failure is kladder's
    or the spec's; where several fail, the first in the list is said."""
    from concurrent.futures import ThreadPoolExecutor

    from ..isolation import child_timeout
    ref = os.environ.get(REF_ENV)
    if not ref:
        raise Skip(NoteKind.OUTSIDE_CLIMB, mode=h.point.mode)
    timeout = child_timeout(h.spec, h.device)
    with tempfile.TemporaryDirectory(prefix="kladder-jit-") as d, ThreadPoolExecutor(len(processes)) as pool:
        last: dict = {}                                       # a cache directory -> the last process on it
        futures = []
        for i, proc in enumerate(processes):
            futures.append(pool.submit(_run_process, h, ref, d, i, proc, timeout, last.get(proc.cache)))
            last[proc.cache] = futures[-1]
        return [f.result() for f in futures]


def _run_process(h, ref: str, d: str, i: int, proc: Process, timeout: float, after) -> Result:
    from ..isolation import worker_env
    if after is not None:
        after.result()                                        # its predecessor on the cache (its error is said there)
    cache = os.path.join(d, proc.cache)
    env = with_env({**worker_env(h.device), **{var: os.path.join(cache, var.lower()) for var in CACHE_VARS}}, proc.env)
    out = os.path.join(d, f"{i}.safetensors")
    cmd = ([sys.executable, "-m", "kladder.run.modes.jitcache", ref, h.device, out, f"{KEEP}{proc.keep}"]
           + [p.to_json() for p in proc.points])
    run_child(cmd, env, timeout, f"process with a {proc.label}", proc.label)
    with open(out + ".json") as f:
        launches = json.load(f)
    saved = _load(out)
    firsts = {n: t for n, t in saved.items() if SEP not in n}
    more = [{n.split(SEP, 1)[1]: t for n, t in saved.items() if n.startswith(f"{k}{SEP}")} for k in range(1, proc.keep)]
    return Result(firsts, launches, sum(len(f) for _, _, f in os.walk(cache)), more)


class JitCache(base.Mode):
    name = "jitcache"
    rungs = (4,)
    child_processes = 2
    start_order = 0
    backward = True
    measured_elsewhere = True

    def observe(self, h):
        a = dataclasses.replace(h.point, mode=Mode.EAGER, partner=())
        partner = dict(h.point.partner)
        b = dataclasses.replace(a, dims=partner.get("dims", a.dims), config=partner.get("config", a.config), seed=0)
        # the warm process calls A twice: A's own run-to-run variation (float atomics) is not the cache's
        cold, warm = run_processes(h, [Process("cold cache: A then B", [a, b]), Process("warm cache: A twice", [a, a], keep=2)])
        # (on one cache state: the warm process's two calls of A)
        kept, varied = yield from run_to_run(h, warm.outputs, warm.more[0] if warm.more else {}, "jitcache", cold.files)
        label = "A in a process on the warm cache"
        yield Same({n: t for n, t in cold.outputs.items() if n in kept}, warm.outputs, Cause.JITCACHE, label)
        prep = h.prepare(a)
        yield Call(prep, returned_from(h, prep, warm.outputs), label)
        if varied:                                   # not held bit for bit: the cold A judged against the reference too
            prep = h.prepare(a)
            yield Call(prep, returned_from(h, prep, cold.outputs), "A in the process on the cold cache")
        else:
            yield Measured(Note.of(NoteKind.CACHE_FILES, files=cold.files))


def _load(path: str) -> dict:
    from safetensors.torch import load_file
    return load_file(path)


def returned_from(h, prep, outs: dict):
    """Put a child's outputs where the harness looks for them: Out args' buffers, the gradients
    (Spec.grads), the return."""
    for name, t in prep.inputs.outs.items():
        if name in outs:
            t.copy_(outs[name].to(t.device))
    if prep.backward is not None:
        prep.backward.grads = {n: outs[n].to(h.device) if n in outs else None for n in h.spec.grad_outputs}
    names = list(h.spec.returned)
    if not names:
        return None
    vals = [outs[n].to(h.device) if n in outs else None for n in names]
    return vals[0] if len(vals) == 1 else tuple(vals)


def child(argv: list[str]) -> int:
    """python -m kladder.run.modes.jitcache REF DEVICE OUT [--keep=K] POINT... : run the points in
    order in this process; save the first one's outputs to OUT (safetensors; with K, the next K - 1
    points' too, named 'i|name') and its Triton launches to OUT.json."""
    import torch
    from safetensors.torch import save_file

    from ...gen.load import load_spec
    from ...core.point import Point
    from ..harness import Harness
    from .tracing import Launches
    ref, device, out = argv[:3]
    texts, keep = argv[3:], 1
    if texts and texts[0].startswith(KEEP):
        keep, texts = int(texts[0][len(KEEP):]), texts[1:]
    spec = load_spec(ref)
    torch.utils.deterministic.fill_uninitialized_memory = True
    saved = {}
    for i, text in enumerate(texts):
        point = Point.from_dict(json.loads(text))
        h = Harness(spec, point, device)
        prep = h.prepare()
        try:
            with Launches() as launched:
                returned = h.call(prep)
        except Exception as e:  # noqa: BLE001
            return child_raised(e)
        if i < keep:
            outputs = h.outputs(prep, returned)
            saved.update({(n if not i else f"{i}{SEP}{n}"): t.detach().contiguous().cpu()
                          for n, t in outputs.items() if isinstance(t, torch.Tensor)})
        if not i:
            with open(out + ".json", "w") as f:
                json.dump([x.to_dict() for x in launched.seen], f)
    save_file(saved, out)
    return 0


MODE = JitCache()


if __name__ == "__main__":
    sys.exit(child(sys.argv[1:]))
