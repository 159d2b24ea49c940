"""One rank of a collective point (rung 6), in a process of its own: join the group, build the
library's communicator, prepare every call's inputs, queue the calls with no synchronisation
between them (the lagging rank waiting before each), synchronise once, run the reference
collective on float64 copies of the inputs, and leave everything in the point's directory
for the worker (run/modes/collective.py), which judges nothing either: it hands what the
ranks left to the checks.

Progress goes to a small file every rank and the worker map (`Progress`): the worker's
watchdog reads it to tell a hang from a slow call and to name the call that did not finish.
On the GPU the calls are queued and a CUDA event after each one says which have finished.

On the CPU the worker forks its ranks (torch is already imported, which saves seconds a
point); on CUDA it starts them (`python -m kladder.run.rank`), since a CUDA context does not
survive a fork."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import sys
import time

from ..core.outcome import SpecBroken, error_facts
from ..core.point import Point
from ..core.sizes import shape_of
from .faults import is_device_fault, is_oom
from .harness import Harness
from .modes.base import call_raw

PHASES = ("starting", "joining", "setup", "inputs", "calls", "sync", "reference", "saving", "done")
PHASE = {p: i for i, p in enumerate(PHASES)}
FIELDS = 4            # per rank: phase, calls launched, calls finished, spare
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class Progress:
    """Every rank's phase and calls, in a file all ranks and the worker map (MAP_SHARED)."""

    def __init__(self, path: str, world: int):
        import torch
        self.t = torch.from_file(path, shared=True, size=world * FIELDS, dtype=torch.int64).view(world, FIELDS)

    def set(self, rank: int, phase: str | None = None, launched: int | None = None, finished: int | None = None):
        if phase is not None:
            self.t[rank, 0] = PHASE[phase]
        if launched is not None:
            self.t[rank, 1] = launched
        if finished is not None:
            self.t[rank, 2] = finished

    def snapshot(self) -> list[tuple[int, int, int]]:
        return [tuple(int(v) for v in row[:3]) for row in self.t]


def call_point(point: Point, spec, call: int, rank: int) -> Point:
    """The point of one rank's call: the message dim at this call's size, a seed of its own."""
    size = dict(point.ranks)["sizes"][call]
    dims = tuple((d, size if d == spec.message_dim else v) for d, v in point.dims)
    seed = (point.seed * 1_000_003 + rank * 7_919 + call * 104_729) % (1 << 32) or 1
    return dataclasses.replace(point, dims=dims, seed=seed)


def rank_device(device: str, rank: int) -> str:
    if device != "cuda":
        return "cpu"
    import torch
    return f"cuda:{rank % max(torch.cuda.device_count(), 1)}"


def run(spec, point: Point, device: str, rank: int, d: str) -> int:
    """The rank's whole life; returns its exit status (0 done, 3 the kernel failed, 4 kladder's side)."""
    r = dict(point.ranks)
    world = r["world"]
    progress = Progress(os.path.join(d, "progress"), world)
    record = {"rank": rank, "calls": []}
    phase = "joining"
    try:
        import torch
        import torch.distributed as dist
        os.environ.update(MULTICAST_OFF)
        if not torch.are_deterministic_algorithms_enabled():     # a forked rank has the worker's already
            from .settings import deterministic_on
            deterministic_on()
        torch.utils.deterministic.fill_uninitialized_memory = True
        dev = rank_device(device, rank)
        if dev == "cpu":
            torch.set_num_threads(1)          # a rank is one device: ranks must not fight over the cores
        else:
            torch.cuda.set_device(dev)
        progress.set(rank, phase)
        dist.init_process_group("gloo", init_method=f"file://{os.path.join(d, 'store')}", rank=rank,
                                world_size=world, timeout=datetime.timedelta(seconds=3600))
        group = dist.group.WORLD
        ref_group, ref_dev = _reference_group(dev, world)
        phase = "setup"
        progress.set(rank, phase)
        comm = _setup(spec, group, dev, record, d, rank)
        phase = "inputs"
        progress.set(rank, phase)
        preps = [_prepare(spec, point, c, rank, dev) for c in range(len(r["sizes"]))]
        dist.barrier(group)                   # every rank starts its calls together: the lag is the only skew
        phase = "calls"
        progress.set(rank, phase)
        returned = _calls(spec, point, preps, comm, rank, dev, progress, record, d)
        phase = "reference"
        progress.set(rank, phase)
        expected = [_reference(spec, p, ref_group, ref_dev, world) for p in preps]
        phase = "saving"
        progress.set(rank, phase)
        _save(spec, preps, returned, expected, rank, d, record)
    except _Stop as stop:
        return stop.code
    except SpecBroken as e:
        _write(d, rank, {**record, "ended": {"how": "broken", "rank": rank, "phase": phase, "note": str(e.note.kind),
                                             "facts": e.note.facts.to_dict()}})
        return 4
    except BaseException as e:  # noqa: BLE001 - kladder's side of the rank (or the spec's): never the kernel's
        how = "oom" if is_oom(e) else "broken"
        _write(d, rank, {**record, "ended": {"how": how, "rank": rank, "phase": phase, **error_facts(e)}})
        return 4
    progress.set(rank, "done")
    _write(d, rank, {**record, "ended": {"how": "done"}})
    with contextlib.suppress(Exception):      # the results are written: a teardown hiccup changes nothing
        dist.destroy_process_group()
    return 0


class _Stop(Exception):
    def __init__(self, code: int):
        self.code = code


def _reference_group(dev: str, world: int):
    """NCCL when every rank has a GPU of its own, else gloo on CPU copies (ranks sharing a GPU
    cannot form an NCCL group)."""
    import torch
    import torch.distributed as dist
    if dev != "cpu" and torch.cuda.device_count() >= world:
        return dist.new_group(backend="nccl"), dev
    return dist.group.WORLD, "cpu"


def _setup(spec, group, dev: str, record: dict, d: str, rank: int):
    setup = spec.collective.setup
    if setup is None:
        return group
    import torch
    try:
        return setup(group, torch.device(dev))
    except Exception as e:  # noqa: BLE001 - the library's communicator is the code under test
        _fail(record, d, rank, -1, e)


def _prepare(spec, point: Point, call: int, rank: int, dev: str):
    h = Harness(spec, call_point(point, spec, call, rank), dev)
    return h, h.prepare()


def _calls(spec, point: Point, preps, comm, rank: int, dev: str, progress: Progress, record: dict, d: str) -> list:
    """Every call back to back, no synchronisation between them; the lagging rank waits before each."""
    import torch
    r = dict(point.ranks)
    lag = _lagger(dev, r["lag_us"]) if rank == r["lag"] else None
    events, returned, call = [], [], 0
    try:
        for call, (_, prep) in enumerate(preps):
            if lag:
                lag()
            progress.set(rank, launched=call + 1)
            returned.append(call_raw(spec.kernel, [comm] + list(prep.inputs.args), point.kwargs))
            if dev == "cpu":
                progress.set(rank, finished=call + 1)
            else:
                events.append(torch.cuda.Event())
                events[-1].record()
        progress.set(rank, "sync")
        for call, ev in enumerate(events):
            while not ev.query():
                time.sleep(0.0005)
            progress.set(rank, finished=call + 1)
        if dev != "cpu":
            torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - the kernel's own error, at the call it surfaced in
        _fail(record, d, rank, call, e)
    return returned


def _lagger(dev: str, lag_us: int):
    """Before each call of the lagging rank: a sleep on the CPU; on a GPU a busy kernel on the
    rank's stream (torch.cuda._sleep), so that the host still queues every call at once."""
    import torch
    if lag_us <= 0:
        return None
    if dev == "cpu":
        return lambda: time.sleep(lag_us / 1e6)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    end.record()
    end.synchronize()
    cycles_per_us = 1_000_000 / max(start.elapsed_time(end) * 1000, 1e-3)
    cycles = int(lag_us * cycles_per_us)
    return lambda: torch.cuda._sleep(cycles)


def _fail(record: dict, d: str, rank: int, call: int, e: BaseException):
    kind = "oom" if is_oom(e) else "device_fault" if is_device_fault(e) else "raised"
    _write(d, rank, {**record, "ended": {"how": "raised", "rank": rank, "call": call, "kind": kind, "at": time.time(),
                                         **error_facts(e)}})
    raise _Stop(3)


def _reference(spec, prepared, group, ref_dev: str, world: int) -> dict:
    """The torch.distributed collective on the float64 copies taken before the call."""
    import torch
    import torch.distributed as dist
    h, prep = prepared
    c = spec.collective
    names = [n for n in spec.args if n not in spec.out_args]
    x = next(a for a, n in zip(prep.ref_args, names, strict=False) if n in spec.input_args).to(ref_dev)
    out_name = next(iter(spec.outputs))
    if c.reference == "all_reduce":
        ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
               "product": dist.ReduceOp.PRODUCT}
        dist.all_reduce(x, op=ops[c.op], group=group)
        ref = x
    else:
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x.contiguous(), group=group)
        shape = shape_of(spec, out_name, prep.point.sizes)
        ref = torch.stack(parts) if len(shape) == x.dim() + 1 else torch.cat(parts)
    return {out_name: ref.cpu()}


def _save(spec, preps, returned, expected, rank: int, d: str, record: dict) -> None:
    import torch
    from safetensors.torch import save_file
    tensors = {}
    for call, ((h, prep), ret, exp) in enumerate(zip(preps, returned, expected, strict=False)):
        outputs = h.outputs(prep, ret)
        meta = {"call": call, "size": prep.point.sizes[spec.message_dim], "returned": {}, "devices": {},
                "damaged": {n: g.damaged() for n, g in prep.inputs.guarded.items()}}
        for name, t in outputs.items():
            if isinstance(t, torch.Tensor):
                tensors[f"out.{call}.{name}"] = t.detach().cpu().clone().contiguous()
                meta["devices"][name] = str(t.device)
            else:
                meta["returned"][name] = type(t).__name__
        for name, t in exp.items():
            tensors[f"ref.{call}.{name}"] = t.contiguous()
        record["calls"].append(meta)
    save_file(tensors, os.path.join(d, f"rank{rank}.safetensors"))


def _write(d: str, rank: int, record: dict) -> None:
    path = os.path.join(d, f"rank{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(record, f)
    os.replace(path + ".tmp", path)


def main(argv: list[str]) -> int:
    """python -m kladder.run.rank REF DEVICE DIR RANK POINT: one rank, started (not forked)."""
    ref, device, d, rank, text = argv
    if device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from ..gen.load import load_spec
    return run(load_spec(ref), Point.from_dict(json.loads(text)), device, int(rank), d)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
