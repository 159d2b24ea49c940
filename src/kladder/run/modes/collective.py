"""The collective mode (rung 6): one process per rank (run/rank.py), a watchdog over them, and
what they left read back as one observation (base.Ranks) for the checks.

A hang is only visible from outside, and a protocol defect is often nothing but a hang
(aiter #6446 surfaced as a watchdog timeout; FlyDSL #1214 bounded every mailbox wait "so a
protocol defect fails the test instead of hanging the device"). The worker owns the deadline:
every rank reports its phase and calls to a shared file, and when no rank has moved for
`watchdog_s` the ranks are killed and the run ends as hung, with each rank's place: which call
it was in and how many it had finished. A rank that raises, crashes or faults stops the others
after a short grace (they would wait for it forever)."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from ...core.outcome import KernelError, Note, NoteKind, Skip, SpecBroken
from ..faults import signal_name
from ..settings import torch_setting
from .base import Ended, Measured, Mode, RankCall, RankPlace, Ranks

WATCHDOG_S = {"cpu": 10.0, "cuda": 20.0}
POLL_S = 0.02
GRACE_S = 1.0            # after a rank fails: time for the others to report their own failure
KERNEL_PHASES = ("setup", "calls", "sync")   # a hang there is the protocol's; elsewhere it is kladder's


class CollectiveMode(Mode):
    name = "collective"
    rungs = (6,)
    own_processes = True
    measured_elsewhere = True

    def observe(self, h):
        from ..timeouts import point_timeout
        from ..rank import Progress
        spec, pt, device = h.spec, h.point, h.device
        r = dict(pt.ranks)
        world, sizes = r["world"], list(r["sizes"])
        _runnable(spec.collective, world, device)
        timeout = point_timeout(spec, device)
        watchdog_s = spec.collective.watchdog_s or WATCHDOG_S[device]
        if device == "cpu":
            import safetensors.torch  # noqa: F401 - imported once here, so the forked ranks need not
            import torch.distributed  # noqa: F401
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="kladder-ranks-") as d:
            progress = Progress(os.path.join(d, "progress"), world)
            progress.t.zero_()
            procs = [_start(spec, pt, device, rank, d, h.children.ref) for rank in range(world)]
            try:
                ended = _watch(procs, progress, watchdog_s, 0.5 * timeout, 0.85 * timeout, d, queued=device == "cuda")
            finally:
                for p in procs:
                    p.kill()
            calls = _read(spec, d, world, sizes) if ended.how == "done" else []
        _raise_unjudgeable(ended)
        ended = _labelled(ended, sizes, spec.message_dim)
        yield from _judged_on_one_thread(Ranks(world, r["lag"], sizes, calls, ended))
        if ended.how == "done":
            yield Measured(Note.of(
                NoteKind.COLLECTIVE_CALLS, world=world, queued=len(sizes), lag=r["lag"], lag_us=r["lag_us"],
                dim=spec.message_dim, sizes=sorted(set(sizes)), backend="nccl" if _own_gpus(device, world) else "gloo",
                seconds=round(time.monotonic() - t0, 2)))


def _judged_on_one_thread(seen: Ranks):
    """The checks judge every call of every rank: many small tensors, for which one thread is
    faster than a team of them (measured on a loaded 2-core host: 0.2 s against 12 s for 64
    calls of 32K elements, the team spinning for cores it does not get)."""
    with torch_setting("num_threads", 1):
        yield seen


def _runnable(c, world: int, device: str) -> None:
    if device != "cuda":
        if c.needs == "cuda":
            raise Skip(NoteKind.COLLECTIVE_NEEDS_CUDA, world=world)
        return
    import torch
    gpus = torch.cuda.device_count()
    if gpus < world and not c.share_device:
        raise Skip(NoteKind.NOT_ENOUGH_GPUS, world=world, gpus=gpus)


def _own_gpus(device: str, world: int) -> bool:
    if device != "cuda":
        return False
    import torch
    return torch.cuda.device_count() >= world


# ---------------------------------------------------------------------------- rank processes
class _Proc:
    """A rank process: forked from the worker on the CPU (torch is already imported there),
    started afresh on CUDA (a CUDA context does not survive a fork)."""

    def __init__(self, spec, point, device: str, rank: int, d: str, fork: bool, ref: str | None = None):
        self.killed, self.returncode = False, None
        if fork:
            self.popen = None
            sys.stdout.flush()
            sys.stderr.flush()
            self.pid = os.fork()
            if self.pid == 0:
                _child(spec, point, device, rank, d)
        else:
            from ..workers import worker_env
            from ..rank import MULTICAST_OFF
            if not ref:                          # the worker's spec reference (forkclient.Children)
                raise Skip(NoteKind.OUTSIDE_CLIMB, mode="collective")
            cmd = [sys.executable, "-m", "kladder.run.rank", ref, device, d, str(rank), point.to_json()]
            # what the kernel prints goes where a worker's kernel's prints go: the worker's stderr
            self.popen = subprocess.Popen(cmd, env={**worker_env(device), **MULTICAST_OFF}, stdin=subprocess.DEVNULL,
                                          stdout=sys.stderr.fileno())
            self.pid = self.popen.pid

    def poll(self) -> int | None:
        if self.returncode is None:
            if self.popen is not None:
                self.returncode = self.popen.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is not None:
            return
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        if self.popen is not None:
            self.returncode = self.popen.wait()
        else:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


def _child(spec, point, device: str, rank: int, d: str):
    """The forked rank: run, then leave without the worker's exit handlers (os._exit)."""
    code = 4
    try:
        from ..rank import run
        code = run(spec, point, device, rank, d)
    except BaseException:  # noqa: BLE001 - whatever escapes goes to the worker's log
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _start(spec, point, device: str, rank: int, d: str, ref: str | None) -> _Proc:
    return _Proc(spec, point, device, rank, d, fork=FORK.get(device, False), ref=ref)


FORK = {"cpu": True}     # device -> whether its ranks are forked from the worker (else started afresh)


def _watch(procs, progress, watchdog_s: float, startup_s: float, deadline_s: float, d: str,
           queued: bool = False) -> Ended:
    """Until every rank is done, one fails, or none has moved for watchdog_s (startup_s while
    they are still starting): the run's end, as facts. With `queued` (CUDA), launching the
    calls counts as starting: the first call may compile (Triton, autotuning) for longer than a
    protocol should wait, and a kernel that hangs does not stop the host from queueing the rest."""
    from ..rank import PHASE
    t0 = since = time.monotonic()
    last = None
    while True:
        codes = [p.poll() for p in procs]
        if all(c == 0 for c in codes):
            return Ended(how="done")
        first = next((i for i, c in enumerate(codes) if c not in (None, 0)), None)
        if first is not None:
            return _failed(procs, progress, first, d)
        snap, now = progress.snapshot(), time.monotonic()
        if snap != last:
            last, since = snap, now
        started = all(ph >= PHASE["sync" if queued else "setup"] for ph, _, _ in snap)
        if now - since > (watchdog_s if started else startup_s) or now - t0 > deadline_s:
            for p in procs:
                p.kill()
            return Ended(how="hung", watchdog_s=watchdog_s, waited_s=round(now - since, 1),
                         ranks=[_place(rank, row) for rank, row in enumerate(snap)])
        time.sleep(POLL_S)


def _place(rank: int, row) -> RankPlace:
    from ..rank import PHASES
    phase, launched, finished = row
    return RankPlace(rank=rank, phase=PHASES[phase], launched=launched, finished=finished)


def _failed(procs, progress, first: int, d: str) -> Ended:
    """One rank ended badly: the others get a moment to say why they stopped too, then are
    killed. A crash comes first (its peers then raise "connection closed" or wait forever),
    then the kernel's earliest error, then kladder's side (a rank that could not join,
    prepare or save)."""
    end = time.monotonic() + GRACE_S
    while time.monotonic() < end and any(p.poll() is None for p in procs):
        time.sleep(POLL_S)
    snap = progress.snapshot()
    for p in procs:
        p.kill()
    order = [first] + [i for i in range(len(procs)) if i != first]
    records = {i: _record(d, i) for i in order}
    for i in order:
        p = procs[i]
        if p.returncode is not None and p.returncode < 0 and not p.killed:
            return Ended(how="died", rank=i, signal=signal_name(-p.returncode),
                         call=max(snap[i][1] - 1, 0), phase=_place(i, snap[i]).phase)
    ended = {i: Ended.from_dict(records[i]["ended"]) for i in order if records[i] and records[i].get("ended")}
    raised = [ended[i] for i in order if i in ended and ended[i].how == "raised"]
    if raised:
        return min(raised, key=lambda e: e.at)
    for i in order:
        if i in ended and ended[i].how in ("broken", "oom"):
            return ended[i]
    code = procs[first].returncode
    return Ended(how="broken", rank=first, phase=_place(first, snap[first]).phase, error="exit",
                 text=f"the rank exited with status {code} and left no record (see the worker's stderr)")


def _record(d: str, rank: int) -> dict | None:
    try:
        with open(os.path.join(d, f"rank{rank}.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------- results
def _read(spec, d: str, world: int, sizes: list) -> list[RankCall]:
    from safetensors.torch import load_file
    calls = []
    for rank in range(world):
        rec = _record(d, rank)
        tensors = load_file(os.path.join(d, f"rank{rank}.safetensors"))
        for meta in rec["calls"]:
            c = meta["call"]
            calls.append(RankCall(
                rank, c, meta["size"],
                outputs={n: tensors.get(f"out.{c}.{n}") for n in spec.outputs},
                expected={n: tensors[f"ref.{c}.{n}"] for n in spec.outputs},
                damaged={n: tuple(v) for n, v in meta["damaged"].items()},
                returned=meta["returned"], devices=meta["devices"],
                label=_call_label(rank, c, len(sizes), spec.message_dim, meta["size"])))
    return calls


def _call_label(rank: int, call: int, n: int, dim: str, size: int) -> str:
    return f"rank {rank}, call {call + 1} of {n} ({dim}={size})"


def _labelled(ended: Ended, sizes: list, dim: str) -> Ended:
    """`ended` with the call a finding names: the raising or crashing rank's, or the most-behind
    rank's (and, hung, each rank's message size)."""
    n = len(sizes)
    if ended.how in ("raised", "died"):
        if ended.call < 0:
            return dataclasses.replace(ended, label=f"rank {ended.rank}, setup")
        return dataclasses.replace(ended, label=_call_label(ended.rank, ended.call, n, dim, sizes[ended.call]))
    if ended.how == "hung":
        behind = min(ended.ranks, key=lambda p: (p.finished, p.rank))
        c = min(behind.finished, n - 1)
        ranks = [dataclasses.replace(p, size=sizes[p.finished] if p.finished < n else None) for p in ended.ranks]
        return dataclasses.replace(ended, ranks=ranks, label=_call_label(behind.rank, c, n, dim, sizes[c]), queued=n,
                                   dim=dim)
    return ended


def _raise_unjudgeable(ended: Ended) -> None:
    """What is not the kernel's: kladder's side of a rank (or the spec's), memory, a hang
    outside the protocol's phases."""
    how = ended.how
    if how == "oom":
        raise MemoryError(f"rank {ended.rank} ({ended.phase}): {ended.text}")
    if how == "raised" and ended.kind == "oom":
        raise KernelError(MemoryError(ended.text), f"rank {ended.rank}, call {ended.call + 1}")
    if how == "broken":
        if ended.note is not None:
            raise SpecBroken(ended.note.kind, **ended.note.facts.to_dict())
        raise SpecBroken(NoteKind.RANK_FAILED, rank=ended.rank, phase=ended.phase, error=ended.error, text=ended.text)
    if how == "hung" and not any(p.phase in KERNEL_PHASES for p in ended.ranks):
        stuck = [p for p in ended.ranks if p.phase != "done"] or ended.ranks
        raise SpecBroken(NoteKind.RANK_FAILED, rank=stuck[0].rank, phase=stuck[0].phase, error="hang",
                         text=f"no rank moved for {ended.waited_s} s outside the kernel's calls")


MODE = CollectiveMode()
