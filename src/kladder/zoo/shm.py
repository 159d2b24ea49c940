"""The shared memory the ranks of the zoo's CPU all-reduce libraries talk through (not a case).

One segment, made by rank 0 in /dev/shm, its name sent to the other ranks over the process
group (as a GPU library sends its CUDA IPC handles), mapped by every rank (MAP_SHARED), and
unlinked as soon as every rank has mapped it, so that nothing is left behind when a rank is
killed. The CPU stand-in for an IPC-registered buffer: flags, slots and copies live in it.

The CPU protocols rely on x86's store order (a store is seen by other cores after the stores
before it): a line's data is written before its flag, and a peer that sees the flag sees the
data. On a weakly ordered CPU the twins would need fences that Python cannot issue."""
from __future__ import annotations

import os
import tempfile

import torch
import torch.distributed as dist

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None


class Segment:
    """`nbytes` of memory shared by every rank of `group`, carved into tensors with take()."""

    def __init__(self, group, nbytes: int):
        name = [None]
        if dist.get_rank(group) == 0:
            fd, path = tempfile.mkstemp(prefix="kladder-zoo-", dir=SHM_DIR)
            os.ftruncate(fd, nbytes)
            os.close(fd)
            name = [path]
        dist.broadcast_object_list(name, src=0, group=group)
        self.bytes = torch.from_file(name[0], shared=True, size=nbytes, dtype=torch.uint8)
        dist.barrier(group)
        if dist.get_rank(group) == 0:
            os.unlink(name[0])
        self.used = 0

    def take(self, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
        """The next region of the segment, 64-byte aligned (a cache line: no two regions share one)."""
        n = 1
        for s in shape:
            n *= s
        nbytes = n * torch.tensor([], dtype=dtype).element_size()
        start = -(-self.used // 64) * 64
        if start + nbytes > self.bytes.numel():
            raise ValueError(f"the segment holds {self.bytes.numel()} bytes; {start + nbytes} asked for")
        self.used = start + nbytes
        return self.bytes[start:start + nbytes].view(dtype).view(shape)


def segment_bytes(*regions: tuple) -> int:
    """The bytes of a segment holding these (shape, dtype) regions, each 64-byte aligned."""
    total = 0
    for shape, dtype in regions:
        n = 1
        for s in shape:
            n *= s
        total = -(-total // 64) * 64 + n * torch.tensor([], dtype=dtype).element_size()
    return total
