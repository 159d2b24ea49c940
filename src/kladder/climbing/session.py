"""From the command line to a climb: the options validated (each bad one a UsageProblem that
names it and the fix), output paths checked, devices and jobs chosen, and the workers started
before the spec is even loaded. `kladder climb` and `kladder zoo climb` share it."""
from __future__ import annotations

import os
import tempfile
import sys

from ..core.errors import UsageError, UsageProblem


from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..core.budgets import DEFAULT as DEFAULT_BUDGET
from ..core.rungs import BUILT, BY_NUMBER, number
from ..version import __version__

if TYPE_CHECKING:
    from ..core.outcome import Outcome
    from ..core.results import ClimbReport
    from ..run.pool import Pool

# the first rung whose points may start processes of their own: those start at the climb's start (ladder.early_points)
EARLY_FROM = number("modes")


def device_of(device: str) -> str:
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


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


CORES_A_JOB = 4


def cores_to_spare(device: str, jobs: int, n_cores: int | None = None) -> bool:
    """A GPU host with CORES_A_JOB cores or more a job (16 for the default 4 jobs of one GPU): room
    for as many early lanes as jobs (ladder.early_lanes) and a worker in reserve (climb_options)."""
    return device != "cpu" and (cores() if n_cores is None else n_cores) >= CORES_A_JOB * jobs


def default_jobs(device: str, n_gpus: int = 1) -> int:
    """What the machine has: one worker a core on the CPU; on CUDA four a GPU, no more than
    half the cores (a point's GPU work is milliseconds; its host work, inputs, references and
    checks, is most of its time, so workers sharing a GPU keep it busy)."""
    n = cores()
    if device == "cpu":
        return max(1, n)
    return max(1, min(4 * n_gpus, n // 2))


def cuda_likely() -> bool:
    """Whether this host seems to have an NVIDIA GPU, asked without importing torch: its control
    device node, and no CUDA_VISIBLE_DEVICES that hides every GPU."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl")


def cuda_asked(device: str) -> bool:
    """--device names CUDA, or auto on a host that seems to have an NVIDIA GPU (cuda_likely)."""
    return device == "cuda" or (device == "auto" and cuda_likely())


def early_server(args, ref: str):
    """For a climb on CUDA (--device cuda, or auto on a host with an NVIDIA GPU): the fork server
    started before this process imports torch to resolve the device, so that the server's own
    import of torch and Triton (3-5 s on the H100 hosts) overlaps this process's and the workers
    fork from it as the climb starts. Started after the device was resolved, the twin's first point
    ran 4 s after the climb's start, its workers waiting for the server (docs/results/2026-12-07-h100-fifth).
    A climb of rungs 1-3 gets one too (since 2026-12-07, sixth session): its workers fork from it, and
    so does a rung's first failure's fresh worker, which liger's RoPE waited 18 s for, started afresh
    on a busy host (docs/results/2026-12-07-h100-sixth). None where it would not be this climb's
    server: --ray, KLADDER_FORKSERVER=0 or a socket of another process, no fork (not POSIX), --rungs
    unreadable (said later, as ever). The caller closes it."""
    if getattr(args, "ray", None) or os.name != "posix" or os.environ.get("KLADDER_FORKSERVER", "") not in ("", "always"):
        return None
    if not cuda_asked(args.device):
        return None
    try:
        parse_rungs(args.rungs)
    except UsageError:
        return None
    from ..run.forkclient import Server
    from ..run.workers import worker_env
    try:
        return Server(worker_env("cuda"), label=ref)
    except OSError:
        return None


def climb_options(args, ref: str, device: str, keep: list | None = None, warm: bool = True, server=None):
    """Options for one climb from the command line, its workers already starting (they import
    torch and the spec while this process does the same; with `warm` False, none is started before
    a point needs it: a climb of many specs, whose points the store may all give); the pool is put
    in `keep` before any worker starts, so that a Ctrl-C meanwhile still closes it. `server`: a fork
    server its workers are forked from (the climbs of many specs share one)."""
    from ..run.pool import Pool
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
        # on a GPU host with the cores for it, one worker more than the lanes is kept started, for a
        # fresh worker no rung foretells (Pool's reserve)
        pool = Pool(ref, device, spares=1 if device == "cpu" else jobs, gpus=ids, server=server,
                    reserve=1 if cores_to_spare(device, jobs) else 0)
        if keep is not None:
            keep.append(pool)
        if warm:
            if max(rungs) >= EARLY_FROM:
                # the climb's points that start processes of their own fork them from the server from
                # its start (ladder.early_points); its workers fork from it too: one import of torch
                # and Triton for all of them, not one a worker beside the server's
                pool.start_server()
            pool.warm(1 if device == "cpu" else jobs + pool.reserve)
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


@dataclass
class Options:
    rungs: tuple[int, ...] = BUILT
    device: str = "auto"
    timeout_s: float | None = None
    log_path: str | None = None
    replay: str | None = None            # a capture directory: its calls become rung-2 points
    jobs: int = 1                        # points run side by side, each on a worker of its own
    repeat: int | None = None            # rung 5: calls a repetition point makes (--repeat N)
    repeat_s: float | None = None        # rung 5: seconds a repetition point may take (--repeat-s S)
    budget: str = DEFAULT_BUDGET         # the named time budget (budgets.py: commit, release; --budget NAME)
    seed: int = 0                        # shifts every point's seed (--seed): false alarms are seed-dependent
    shrink_s: float = 0.0                # seconds to shrink the climb's failures after its rungs (--shrink-s; 0: none)
    on_outcome: Callable[[Outcome], None] | None = field(default=None, repr=False)
    # the caller's last word on the whole report, once every point ran and before the log's end
    # record is written (the CLI's --golden: a strict failure is in the end record's exit_code)
    on_end: Callable[[ClimbReport], None] | None = field(default=None, repr=False)
    progress: Any = field(default=None, repr=False)   # report.progress.Progress, or None
    pool: Pool | None = field(default=None, repr=False)  # workers already started (the CLI warms them early)
    shard: Any = None                    # shard.Shard: run only the I-th of N slices of every rung's points (--shard I/N)
    history: str | None = None           # the history the shard's deal reads its points' costs from (None: by bytes)
    ray: str | None = None               # a Ray cluster's address: the pool's lanes are Ray actors (run/ray_lanes.py)
    store: Any = field(default=None, repr=False)   # history/outcomes.OutcomeStore: outcomes reused under an unchanged key
    exitfirst: bool = False              # -x: no rung climbed after the first with a failure
    first: frozenset = frozenset()       # --lf: ids of points that failed last time, run first in their rung


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise UsageError(f"--device {device!r}: use auto, cpu or cuda.")
    if device == "cpu":
        return "cpu"
    import torch

    from ..run.devicestart import retrying
    if retrying("torch.cuda.is_available()", torch.cuda.is_available):
        return "cuda"
    if device == "cuda":
        raise UsageError("--device cuda: torch sees no CUDA device here; use --device cpu (Triton's interpreter).")
    return "cpu"


def parse_rungs(text: str | None) -> tuple[int, ...]:
    """'1', '1,2', '1-3' -> rungs; a rung that is not built yet is a usage error."""
    if not text:
        return BUILT
    rungs: list[int] = []
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo, hi = int(a.lstrip("rR")), int((b or a).lstrip("rR"))
        except ValueError:
            raise UsageError(f"--rungs {text!r}: give rung numbers such as 1, 1,2 or 1-3.") from None
        if hi < lo:
            raise UsageError(f"--rungs {text!r}: {lo}-{hi} counts down; give the lower rung first, e.g. {hi}-{lo}.")
        rungs += range(lo, hi + 1)
    for r in rungs:
        if r not in BY_NUMBER:
            raise UsageError(f"--rungs {text!r}: rung {r} does not exist; the ladder has rungs 1-8.")
        if not BY_NUMBER[r].built:
            raise UsageError(f"--rungs {text!r}: rung {r} ({BY_NUMBER[r].title}) is not built in kladder {__version__} "
                             f"yet; built rungs: {', '.join(map(str, BUILT))}.")
    return tuple(sorted(set(rungs)))


LOG_FOLDER = os.path.join(".kladder", "log")


def log_folder() -> tuple[str, str | None]:
    """Where default logs go: .kladder/log in the working folder, or, where that cannot be
    written (a read-only checkout, a CI cache), kladder-log in the temporary folder; the second
    item says why (None when the default folder is used)."""
    from ..report.jsonout import cannot_write
    why = cannot_write(LOG_FOLDER)
    if why is None:
        return LOG_FOLDER, None
    fallback = os.path.join(tempfile.gettempdir(), "kladder-log")
    if cannot_write(fallback) is not None:
        raise UsageError(f"the log: cannot write {LOG_FOLDER!r} ({why}) nor {fallback!r}; give --log PATH in a folder "
                         "you can write to")
    return fallback, why


def default_log_path(spec_name: str, run_id: str | None = None) -> str:
    """FOLDER/NAME-RUNID.jsonl (see log_folder): the run id makes two climbs started in the
    same second in one folder write two logs."""
    from ..core.results import new_run_id
    return os.path.join(log_folder()[0], f"{spec_name}-{run_id or new_run_id()}.jsonl")
