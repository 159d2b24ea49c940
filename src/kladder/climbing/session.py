"""From the command line to a climb: the options validated (each bad one a UsageProblem that
names it and the fix), output paths checked, devices and jobs chosen, and the workers started
before the spec is even loaded. `kladder climb` and `kladder zoo climb` share it."""
from __future__ import annotations

import os
import sys

from ..core.errors import UsageError, UsageProblem


def device_of(device: str) -> str:
    from .ladder import resolve_device
    try:
        dev = resolve_device(device)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if dev == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    return dev


def writable(option: str, path: str | None) -> None:
    """An output path is checked before the climb starts: its folder made and a file made and
    removed there; the file itself is not made (a climb that fails to start leaves no 0-byte
    file: it writes its report whole, or nothing)."""
    if not path:
        return
    from ..report.jsonout import cannot_write
    why = "it is a folder" if os.path.isdir(path) else cannot_write(os.path.dirname(os.path.abspath(path)))
    if why is None and os.path.exists(path) and not os.access(path, os.W_OK):
        why = "the file is read-only"
    if why is not None:
        raise UsageProblem(f"{option} {path!r}: cannot write there ({why}); give a file in a folder you can write to")


def gpus(args, device: str) -> list[str] | None:
    """The CUDA devices workers spread over, as CUDA_VISIBLE_DEVICES entries."""
    if device != "cuda":
        return None
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    import torch

    from ..run.devicestart import retrying
    count = retrying("torch.cuda.device_count()", torch.cuda.device_count)
    ids = visible or [str(i) for i in range(count)]
    if not getattr(args, "devices", None):
        return ids
    chosen = [d.strip() for d in args.devices.split(",") if d.strip()]
    bad = [d for d in chosen if not d.isdigit() or int(d) >= len(ids)]
    if bad or not chosen:
        raise UsageProblem(f"--devices {args.devices!r}: give indices of visible CUDA devices, 0 to {len(ids) - 1}, "
                           "separated by commas (e.g. 0,1)")
    return [ids[int(d)] for d in chosen]


def default_jobs(device: str, n_gpus: int = 1) -> int:
    """What the machine has: one worker a core on the CPU; on CUDA four a GPU, no more than
    half the cores (a point's GPU work is milliseconds; its host work, inputs, references and
    checks, is most of its time, so workers sharing a GPU keep it busy)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if device == "cpu":
        return max(1, cores)
    return max(1, min(4 * n_gpus, cores // 2))


def climb_options(args, ref: str, device: str, keep: list | None = None, warm: bool = True, server=None):
    """Options for one climb from the command line, its workers already starting (they import
    torch and the spec while this process does the same; with `warm` False, none is started before
    a point needs it: a climb of many specs, whose points the store may all give); the pool is put
    in `keep` before any worker starts, so that a Ctrl-C meanwhile still closes it. `server`: a fork
    server its workers are forked from (the climbs of many specs share one)."""
    from .ladder import EARLY_FROM, Options, parse_rungs
    from ..run.isolation import Pool
    try:
        rungs = parse_rungs(args.rungs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if args.replay and not os.path.exists(os.path.join(args.replay, "manifest.json")):
        raise UsageProblem(f"--replay {args.replay!r}: no manifest.json there; record calls first with "
                           "`with kladder.capture('pkg.mod:fn', to=DIR): run()`")
    from .shard import ShardError, parse_shard
    try:
        shard = parse_shard(getattr(args, "shard", None))
    except ShardError as e:
        raise UsageProblem(str(e)) from None
    address = getattr(args, "ray", None)
    if address:
        pool, jobs = _ray_pool(args, ref, device, address, keep)
    else:
        ids = gpus(args, device)
        jobs = args.jobs or default_jobs(device, len(ids or [None]))
        pool = Pool(ref, device, spares=1 if device == "cpu" else jobs, gpus=ids, server=server)
        if keep is not None:
            keep.append(pool)
        if warm:
            if max(rungs) >= EARLY_FROM:
                # the climb's points that start processes of their own fork them from the server from
                # its start (ladder.early_points); its workers fork from it too: one import of torch
                # and Triton for all of them, not one a worker beside the server's
                pool.start_server()
            pool.warm(1 if device == "cpu" else jobs)
    return Options(rungs=rungs, device=device, timeout_s=args.timeout, log_path=args.log, replay=args.replay,
                   jobs=jobs, pool=pool, progress=_progress(args), repeat=getattr(args, "repeat", None),
                   repeat_s=getattr(args, "repeat_s", None), seed=getattr(args, "seed", 0), shard=shard, ray=address,
                   budget=getattr(args, "budget", None) or "commit",
                   shrink_s=getattr(args, "shrink_s", 0.0), history=history_of(args) if shard else None,
                   exitfirst=getattr(args, "exitfirst", False))


def history_of(args) -> str | None:
    """The history a command reads and writes (--history PATH, else the default), None with --no-history."""
    if getattr(args, "no_history", False):
        return None
    from ..history.store import default_path
    return getattr(args, "history", None) or default_path()


def _ray_pool(args, ref: str, device: str, address: str, keep: list | None):
    """A pool whose lanes are Ray actors (run/ray_lanes.py): one a GPU of the cluster, or one a
    CPU slot on the CPU; --jobs N asks for N of them (at most what the cluster has)."""
    if getattr(args, "devices", None):
        raise UsageProblem(f"--devices {args.devices!r} with --ray: Ray gives each worker its GPU; leave --devices out "
                           "(--jobs N asks for N workers)")
    from ..run.ray_lanes import RayPool
    try:
        pool = RayPool(ref, device, address, jobs=args.jobs)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if keep is not None:
        keep.append(pool)
    pool.warm(pool.slots)
    return pool, pool.slots


def log_path(args, spec, run_id: str | None = None) -> str:
    """--log as given, else .kladder/log/NAME-RUNID.jsonl; where the working folder is read-only,
    the same name in a temporary folder, said once on stderr."""
    from .ladder import default_log_path, log_folder
    if args.log:
        writable("--log", args.log)
        return args.log
    try:
        folder, why = log_folder()
        path = default_log_path(spec.name, run_id)
    except UsageError as e:
        raise UsageProblem(str(e)) from None
    if why is not None and not _SAID["log_fallback"]:
        _SAID["log_fallback"] = True
        print(f"kladder: {os.path.join('.', '.kladder', 'log')} cannot be written here ({why}); the log goes to {folder} "
              "(give --log PATH to choose)", file=sys.stderr)
    return path


_SAID = {"log_fallback": False}      # what this process has said once already


def _progress(args):
    if args.quiet or not sys.stdout.isatty():
        return None
    from rich.console import Console

    from ..report.progress import Progress
    return Progress(Console(highlight=False, markup=False))


