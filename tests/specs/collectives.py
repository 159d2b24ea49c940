"""Rung-6 fixtures (kladder's own): collectives over torch.distributed that are right, and
ones that hang, raise or die at a known rank and call, for the watchdog and the checks."""
import os
import signal
import time

import torch
import torch.distributed as dist

import kladder as kl

_calls = 0   # per rank process: the calls this rank has made


def _count() -> int:
    global _calls
    _calls += 1
    return _calls


def gloo_all_reduce(group, x):
    """Right: torch.distributed's own all-reduce, accumulated in float32."""
    y = x.to(torch.float32, copy=True)
    dist.all_reduce(y, group=group)
    return y.to(x.dtype)


def gloo_all_gather(group, x):
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.stack(parts)


def into_out(group, x, out):
    out.copy_(x)
    dist.all_reduce(out, op=dist.ReduceOp.MAX, group=group)


def hangs_rank1_call3(group, x):
    """Rank 1 never returns from its third call; rank 0 then waits for it in the fourth."""
    n = _count()
    if dist.get_rank(group) == 1 and n == 3:
        while True:
            time.sleep(0.05)
    return gloo_all_reduce(group, x)


def raises_rank0_call2(group, x):
    if dist.get_rank(group) == 0 and _count() == 2:
        raise ValueError("the slot table is full")
    return gloo_all_reduce(group, x)


def dies_rank1_call4(group, x):
    if dist.get_rank(group) == 1 and _count() == 4:
        import faulthandler
        faulthandler.disable()                  # the crash is the point; its traceback dump is noise
        os.kill(os.getpid(), signal.SIGSEGV)
    return gloo_all_reduce(group, x)


def local_rank0(group, x):
    """Wrong on rank 0 from its fifth call on: it returns its own input, not the reduction."""
    n = _count()
    y = gloo_all_reduce(group, x)
    return x.clone() if dist.get_rank(group) == 0 and n >= 5 else y


def _spec(name, kernel, **collective):
    return kl.Spec(name, kernel=kernel, reference=None,
                   args={"x": kl.Tensor("N", dtype=["float32", "bfloat16"])},
                   returns=kl.Tensor("N", like="x"),
                   dims={"N": kl.Dim(1, 1 << 14)},
                   collective=kl.Collective(world=2, switches=[1 << 10, 1 << 13], queued=12, **collective))


allreduce = _spec("allreduce", gloo_all_reduce)
hang = _spec("hang", hangs_rank1_call3, watchdog_s=2.0)
raises = _spec("raises", raises_rank0_call2)
dies = _spec("dies", dies_rank1_call4)
local = _spec("local", local_rank0)
allgather = kl.Spec("allgather", kernel=gloo_all_gather, reference=None,
                    args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("W N", like="x"),
                    dims={"N": kl.Dim(1, 4096), "W": kl.Dim(2, 8)},
                    collective=kl.Collective(world=2, reference="all_gather", world_dim="W", queued=6))
outarg = kl.Spec("outarg", kernel=into_out, reference=None,
                 args={"x": kl.Tensor("N", dtype="float32"), "out": kl.Out("N", like="x")},
                 dims={"N": kl.Dim(1, 4096)},
                 collective=kl.Collective(world=2, op="max", switches=[2048], queued=6))
