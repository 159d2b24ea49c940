"""allreduce_size_stride: a one-shot all-reduce through a ring of slots in shared memory, whose
slot stride is derived from the current message size; a fast rank writes call k+1 into lines
a slow peer has not read for call k, and the peer waits forever for a flag that now carries
the next call's number (or reads the next call's data).

The CPU model of a GPU all-reduce's low-latency protocol. Every rank pushes its message, line
by line, into each peer's inbox (an IPC-registered buffer on a GPU, /dev/shm here); each line
carries its own flag, the call's sequence number, written after the line's data (the LL128
line format). A rank then reads each peer's lines as their flags say this call. Two slots let
a rank run one call ahead of its slowest peer without any barrier: call k uses slot k % 2, so
call k + 1 writes where call k - 1 was, which every peer has finished reading. A message past
one slot (32 KiB) goes through the ring in slot-sized pieces.
"""
import os

import torch
import torch.distributed as dist

from kladder.zoo import build_specs, shm

CASE = dict(
    name="allreduce_size_stride",
    gap="multi-GPU",
    rung=6,
    mirrors="aiter #6446, #5616",
    needs="cpu",
    story=(
        "A one-shot all-reduce pushes each message into every peer's inbox through a ring of two "
        "slots of 1 KiB lines, each line carrying its flag (the call's sequence number), so that "
        "a rank can start its next call while a slower peer still reads the last; a message "
        "past one slot (32 KiB) goes in slot-sized pieces. The slot's offset was written as "
        "(call % 2) x the current piece's lines instead of x the slot's capacity: with one size "
        "the slots stay apart, but when a piece is smaller than the one before it and the one "
        "before sat on an even call, the new slot starts inside the old one. A fast rank then "
        "writes lines of call k + 1 (with flag k + 1) over lines of call k that its peer has not "
        "read, and the peer polls for flag k forever: both ranks hang (or the peer sums the next "
        "call's data). It needs a peer that reads late, which one rank forced to lag makes "
        "likely: the early rank reads the late one's lines as they land and is done when the "
        "late one starts reading (aiter #6446: 6 of 6 runs hung with a rank forced behind, 0 of "
        "114 on a quiet host). The unit test called one size at a time, and its sweep "
        "alternated a full slot with a smaller message, full first, which puts every smaller "
        "message at the ring's start and every full one past it: they never overlap (aiter "
        "#5616: 'two sizes always land in the same bank and can miss the bug'). Rung 6 queues "
        "64 calls, three sizes a round in changing order, with one rank sleeping 2 ms before "
        "each call: messages past the switch end in a smaller piece, and smaller messages "
        "follow larger ones on even calls; the ranks hang within the first rounds (call 16 of "
        "64 on the CPU, both points) and the watchdog names the call each rank stopped in. "
        "CPU variant: ranks are processes, the inboxes /dev/shm; the GPU variant is "
        "allreduce_size_stride_gpu."
    ),
)

LINE_BYTES = 1024           # one line of the ring; its flag travels beside it
SLOTS = 2                   # calls in flight: a rank may run one call ahead of its slowest peer
RING_BYTES = 32 << 10       # one slot: a larger message goes in pieces of this size
SLOT_LINES = RING_BYTES // LINE_BYTES


class RingAllReduce:
    """One per rank: inbox[r, s] holds the lines rank s pushes to rank r, flag[r, s] their flags."""

    def __init__(self, group, device=None):
        self.group, self.rank, self.world = group, dist.get_rank(group), dist.get_world_size(group)
        w, lines = self.world, SLOTS * SLOT_LINES
        regions = [((w, w, lines, LINE_BYTES), torch.uint8), ((w, w, lines), torch.int64)]
        seg = shm.Segment(group, shm.segment_bytes(*regions))
        self.inbox, self.flag = (seg.take(*r) for r in regions)
        self.seq = 0

    def slot_base(self, nlines: int) -> int:
        """The first line of this call's slot."""
        # The bug: the stride is this message's line count, so a smaller message after a larger
        # one starts its slot inside the larger one's, which a slow peer may still be reading.
        return (self.seq % SLOTS) * nlines

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        """A message larger than a slot goes through the ring in slot-sized pieces, one call each."""
        flat = x.contiguous().view(-1)
        per_slot = RING_BYTES // x.element_size()
        pieces = [self._one_slot(flat[i:i + per_slot]) for i in range(0, flat.numel(), per_slot)]
        return torch.cat(pieces).view(x.shape) if len(pieces) > 1 else pieces[0].view(x.shape)

    def _one_slot(self, x: torch.Tensor) -> torch.Tensor:
        self.seq += 1
        nbytes = x.numel() * x.element_size()
        nlines = -(-nbytes // LINE_BYTES)
        base = self.slot_base(nlines)
        lines = torch.zeros(nlines * LINE_BYTES, dtype=torch.uint8)
        lines[:nbytes] = x.view(torch.uint8)
        lines = lines.view(nlines, LINE_BYTES)
        peers = [p for p in range(self.world) if p != self.rank]
        for p in peers:                                  # push: each line, then its flag
            for i in range(nlines):
                self.inbox[p, self.rank, base + i] = lines[i]
                self.flag[p, self.rank, base + i] = self.seq
        acc = lines.view(x.dtype).float()
        for p in peers:                                  # pull each peer's lines as their flags land
            for i in range(nlines):
                while int(self.flag[self.rank, p, base + i]) != self.seq:
                    os.sched_yield()
                acc[i] += self.inbox[self.rank, p, base + i].view(x.dtype).float()
        return acc.view(-1)[:x.numel()].to(x.dtype)


class RingAllReduceFixed(RingAllReduce):
    def slot_base(self, nlines: int) -> int:
        # The fix: slots a whole ring's capacity apart, whatever this message's size.
        return (self.seq % SLOTS) * SLOT_LINES


def all_reduce(comm, x):
    """Sum of x over the ranks of comm's group (x: [N] bf16/fp32), as the model's TP all-reduce calls it."""
    return comm.all_reduce(x)


def make_spec(communicator):
    import kladder as kl
    return kl.Spec(
        "ring_allreduce",
        kernel=all_reduce,
        reference=None,
        args={"x": kl.Tensor("N", dtype=["bfloat16", "float32"])},
        returns=kl.Tensor("N", like="x"),
        dims={"N": kl.Dim(1, 1 << 16)},
        # TP 2; the protocol changes at one slot's capacity (past it: the message goes in pieces)
        collective=kl.Collective(world=[2], switches=[RING_BYTES], setup=communicator),
    )


spec, fixed = build_specs(make_spec, RingAllReduce, RingAllReduceFixed)
