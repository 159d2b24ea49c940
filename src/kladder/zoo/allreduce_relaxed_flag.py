"""allreduce_relaxed_flag: an all-reduce through registered buffers in shared memory whose
ready flag is published when the copy into the buffer is issued, not when it has landed; a
peer that is already waiting sees the flag and sums the buffer's previous contents.

The CPU model of a GPU all-reduce's eager path. Each rank copies its input into its own
registered buffer (IPC-registered on a GPU, /dev/shm here), sets its ready flag to the call's
sequence number, waits until every peer's flag says this call, sums the peers' buffers with
its own input, and sets its done flag; before it overwrites its buffer for the next call it
waits until every peer is done with the last one. Messages up to 8 KiB are copied inline;
larger ones, up to the buffer's 64 KiB, go to the copy engine, so that the copy overlaps the
wait for the peers: a thread that lands each copy a page at a time about a millisecond after
it was issued (a DMA engine's queue, behind other traffic). Larger messages go to
torch.distributed, as a custom all-reduce hands large messages to NCCL."""
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor

import torch
import torch.distributed as dist

from kladder.zoo import build_specs, shm

CASE = dict(
    name="allreduce_relaxed_flag",
    gap="multi-GPU",
    rung=6,
    mirrors="aiter #4812",
    needs="cpu",
    story=(
        "Each rank copies its input into a reusable registered buffer and sets a ready flag that "
        "its peers poll; a peer that sees the flag sums the buffer. Above 8 KiB the copy goes to "
        "the copy engine, so that it overlaps the wait for the peers, and the flag was set as "
        "soon as the copy was issued: the store that publishes the input is not ordered after "
        "the copy (on a GPU, a relaxed store where a system-scope release was needed; aiter "
        "#4812 on gfx1250: 127 of 128 outputs wrong in eager mode, none with a release store and "
        "an acquire load). A peer that is already waiting reads the pages the engine has not "
        "moved yet: the buffer's previous contents, the last call's input. 'The collective "
        "completes normally but returns incorrect results.' Two things hid it from the unit "
        "test: only the engine path between 8 KiB and the buffer's 64 KiB publishes early, and "
        "a stale read is a wrong number only when inputs change between back-to-back calls "
        "(the test called once, and a repeated call reads the same values it would have read). "
        "Rung 6 queues 64 calls on new inputs, three sizes a round (one between the switches), "
        "with one rank sleeping 2 ms before each call, so the other is mostly waiting when the "
        "late one publishes: in one CPU climb 19 of the waiting rank's 64 calls were wrong and 7 "
        "of the late rank's, at sizes between the switches (and at 8 KiB, where a copy that "
        "lands late overwrites the next call's inline one). CPU variant: ranks are processes, "
        "the buffers /dev/shm, the copy engine a thread; the GPU variant is "
        "allreduce_relaxed_flag_gpu."
    ),
)

SMALL_BYTES = 8 << 10       # up to here the copy is inline: a few pages are not worth the engine
BUFFER_BYTES = 64 << 10     # the registered buffer; larger messages go to torch.distributed
PAGE_BYTES = 4096           # what the copy engine moves at a time


ENGINE_LATENCY_S = 1e-3     # from issue to the first page moved: the engine's queue, behind other traffic


class CopyEngine:
    """Copies issued now land later, in order, a page at a time (a DMA engine's queue)."""

    def __init__(self):
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="copy-engine")

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> Future:
        return self.pool.submit(self._move, dst, src, time.monotonic() + ENGINE_LATENCY_S)

    @staticmethod
    def _move(dst, src, start: float) -> None:
        time.sleep(max(0.0, start - time.monotonic()))
        for a in range(0, src.numel(), PAGE_BYTES):
            dst[a:a + PAGE_BYTES].copy_(src[a:a + PAGE_BYTES])


class StagedAllReduce:
    """One per rank: buf[r] is rank r's registered buffer, ready[r] and done[r] its flags."""

    def __init__(self, group, device=None):
        self.group, self.rank, self.world = group, dist.get_rank(group), dist.get_world_size(group)
        w = self.world
        regions = [((w, BUFFER_BYTES), torch.uint8), ((w,), torch.int64), ((w,), torch.int64)]
        seg = shm.Segment(group, shm.segment_bytes(*regions))
        self.buf, self.ready, self.done = (seg.take(*r) for r in regions)
        self.engine = CopyEngine()
        self.seq = 0

    def stage(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """Put this rank's input into its registered buffer, ahead of the ready flag."""
        if src.numel() <= SMALL_BYTES:
            dst.copy_(src)
            return
        # The bug: the copy is only issued here; the ready flag that follows can be seen
        # before the engine has moved the pages, and the peer reads what the buffer held.
        self.engine.copy(dst, src)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        nbytes = x.numel() * x.element_size()
        if nbytes > BUFFER_BYTES:
            y = x.to(torch.float32, copy=True)
            dist.all_reduce(y, group=self.group)
            return y.to(x.dtype)
        self.seq += 1
        self._wait(self.done, self.seq - 1)          # the buffer is reused: peers are done with the last call
        self.stage(self.buf[self.rank, :nbytes], x.contiguous().view(-1).view(torch.uint8))
        self.ready[self.rank] = self.seq
        self._wait(self.ready, self.seq)
        acc = x.to(torch.float32, copy=True).view(-1)
        for p in range(self.world):
            if p != self.rank:
                acc += self.buf[p, :nbytes].view(x.dtype).float()
        self.done[self.rank] = self.seq
        return acc.to(x.dtype).view(x.shape)

    def _wait(self, flags: torch.Tensor, seq: int) -> None:
        while any(int(flags[p]) < seq for p in range(self.world)):
            os.sched_yield()


class StagedAllReduceFixed(StagedAllReduce):
    def stage(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        if src.numel() <= SMALL_BYTES:
            dst.copy_(src)
            return
        # The fix: the flag is released only once the copy has landed.
        self.engine.copy(dst, src).result()


def all_reduce(comm, x):
    """Sum of x over the ranks of comm's group (x: [N] bf16/fp32), as the model's TP all-reduce calls it."""
    return comm.all_reduce(x)


def make_spec(communicator):
    import kladder as kl
    return kl.Spec(
        "staged_allreduce",
        kernel=all_reduce,
        reference=None,
        args={"x": kl.Tensor("N", dtype=["bfloat16", "float32"])},
        returns=kl.Tensor("N", like="x"),
        dims={"N": kl.Dim(1, 1 << 16)},
        # TP 2; the protocol changes at the copy engine's threshold and at the buffer's end
        collective=kl.Collective(world=[2], switches=[SMALL_BYTES, BUFFER_BYTES], setup=communicator),
    )


spec, fixed = build_specs(make_spec, StagedAllReduce, StagedAllReduceFixed)
