"""CUDA IPC buffers shared by the ranks of the zoo's GPU all-reduce libraries (not a case).

Each rank allocates its buffer on its own GPU, sends the IPC handle (torch's CUDA tensor
reduction: cudaIpcGetMemHandle under the hood) to the others over the process group, and opens
theirs. A peer's buffer is opened in the context of this rank's current device, so that a
Triton kernel running here can read and write it (peer access over NVLink on two GPUs; the
same memory on one GPU shared by several processes). torch's own rebuild would open it on the
device it was allocated on, where this rank's kernels cannot use the pointer."""
from __future__ import annotations

import torch
import torch.distributed as dist


def _open(args: tuple) -> torch.Tensor:
    import inspect

    from torch.multiprocessing.reductions import rebuild_cuda_tensor
    args = list(args)
    where = list(inspect.signature(rebuild_cuda_tensor).parameters).index("storage_device")
    args[where] = torch.cuda.current_device()      # open the handle where this rank's kernels run
    return rebuild_cuda_tensor(*args)


def shared_buffers(group, nbytes: int, device) -> list[torch.Tensor]:
    """One zeroed uint8 buffer of `nbytes` per rank, indexed by rank: this rank's own, and views
    of every peer's, all usable by kernels on this rank's device."""
    from torch.multiprocessing.reductions import reduce_tensor
    own = torch.zeros(nbytes, dtype=torch.uint8, device=device)
    torch.cuda.synchronize(device)
    _, args = reduce_tensor(own)
    handles = [None] * dist.get_world_size(group)
    dist.all_gather_object(handles, args, group=group)
    rank = dist.get_rank(group)
    bufs = [own if r == rank else _open(h) for r, h in enumerate(handles)]
    dist.barrier(group)
    return bufs
