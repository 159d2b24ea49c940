"""allreduce_size_stride_gpu: the GPU variant of allreduce_size_stride. A one-shot all-reduce
kernel (Triton) pushes each line of its message into the peer's inbox, a CUDA IPC buffer on
the peer's GPU, then its flag (a release store at system scope); then it sums the peer's lines
from its own inbox as their flags arrive (acquire loads). Two slots let a rank run one call
ahead of its peer; the slot's offset is (call % 2) x the current piece's lines instead of x the
slot's capacity, so a smaller piece after a larger one on an even call starts inside it and a
fast rank overwrites lines its peer has not read: the peer waits for a flag that never comes.

The kernel keeps to 16 programs (the rest of the GPU is left to the GEMMs it overlaps with),
each pushing all its lines before it reads any: the late rank reads its lines last, after the
early rank has finished the call and started the next. TP 2 only (one peer)."""
import torch
import torch.distributed as dist
import triton
import triton.language as tl

from kladder.zoo import build_specs, ipc

CASE = dict(
    name="allreduce_size_stride_gpu",
    gap="multi-GPU",
    rung=6,
    mirrors="aiter #6446, #5616",
    needs="cuda, 2 GPUs",
    story=(
        "The GPU variant of allreduce_size_stride: a Triton one-shot all-reduce over CUDA IPC "
        "inboxes, two slots of 4 KiB lines, each line's flag written with a system-scope release "
        "after its data and polled with acquire loads. The slot offset is (call % 2) x the "
        "current piece's lines, so a smaller piece after a larger one on an even call overlaps "
        "it, and with one rank forced to lag (a busy kernel before each of its calls, all 64 "
        "calls queued before one synchronisation) the early rank's next kernel writes lines the "
        "late rank has not read: the late rank's kernel spins on a flag that now carries the next "
        "call's number, and the early rank's on lines that will never come (aiter #6446: a "
        "watchdog timeout in vLLM CI, 6 of 6 runs with a rank forced behind). It needs two "
        "GPUs: on one GPU the two ranks' kernels are time-sliced, never concurrent, so a rank "
        "never writes while its peer reads; there the case is skipped with that reason."
    ),
)

LINE_BYTES = 4096
SLOTS = 2
SLOT_BYTES = 1 << 20                 # one slot: a larger message goes in pieces of this size
SLOT_LINES = SLOT_BYTES // LINE_BYTES
PROGRAMS = 16


# the sizes, offsets and call numbers change every call: one compiled kernel for all of them
@triton.jit(do_not_specialize=["n", "base", "seq"])
def _ring_kernel(x_ptr, out_ptr, peer_data, peer_flags, my_data, my_flags, n, base, seq,
                 LINE: tl.constexpr, PROGRAMS: tl.constexpr):
    pid = tl.program_id(0)
    nlines = tl.cdiv(n, LINE)
    cols = tl.arange(0, LINE)
    for line in range(pid, nlines, PROGRAMS):          # push every line of this program, then its flag
        offs = line * LINE + cols
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(peer_data + (base + line) * LINE + cols, x, mask=offs < n)
        tl.debug_barrier()                              # every thread's store, before the flag's release
        tl.atomic_xchg(peer_flags + base + line, seq, sem="release", scope="sys")
    for line in range(pid, nlines, PROGRAMS):          # then sum the peer's lines as their flags land
        while tl.atomic_add(my_flags + base + line, 0, sem="acquire", scope="sys") != seq:
            pass
        tl.debug_barrier()
        offs = line * LINE + cols
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        y = tl.load(my_data + (base + line) * LINE + cols, mask=offs < n, other=0.0,
                    cache_modifier=".cg").to(tl.float32)
        tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=offs < n)


class RingAllReduceGPU:
    def __init__(self, group, device):
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        if self.world != 2:
            raise ValueError(f"this all-reduce supports 2 ranks (one peer), not {self.world}")
        lines = SLOTS * SLOT_LINES
        data, per_sender = lines * LINE_BYTES, lines * (LINE_BYTES + 4)
        bufs = ipc.shared_buffers(group, self.world * per_sender, device)
        peer = 1 - self.rank

        def inbox(buf, sender):
            a = sender * per_sender
            return buf[a:a + data], buf[a + data:a + per_sender].view(torch.int32)

        self.to_peer = inbox(bufs[peer], self.rank)       # where this rank pushes: the peer's memory
        self.from_peer = inbox(bufs[self.rank], peer)     # where it reads: its own
        self.seq = 0

    def slot_base(self, nlines: int) -> int:
        # The bug: the stride is this piece's line count, not the slot's capacity.
        return (self.seq % SLOTS) * nlines

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        per_slot = SLOT_BYTES // x.element_size()
        for i in range(0, flat.numel(), per_slot):
            self._one_slot(flat[i:i + per_slot], out[i:i + per_slot])
        return out.view(x.shape)

    def _one_slot(self, x, out) -> None:
        self.seq += 1
        line = LINE_BYTES // x.element_size()
        base = self.slot_base(triton.cdiv(x.numel(), line))
        _ring_kernel[(PROGRAMS,)](x, out, self.to_peer[0].view(x.dtype), self.to_peer[1],
                                  self.from_peer[0].view(x.dtype), self.from_peer[1], x.numel(), base, self.seq,
                                  LINE=line, PROGRAMS=PROGRAMS)


class RingAllReduceGPUFixed(RingAllReduceGPU):
    def slot_base(self, nlines: int) -> int:
        # The fix: slots a whole slot's capacity apart, whatever this piece's size.
        return (self.seq % SLOTS) * SLOT_LINES


def all_reduce(comm, x):
    """Sum of x over the 2 ranks of comm's group (x: [N] bf16/fp32 on this rank's GPU)."""
    return comm.all_reduce(x)


def make_spec(communicator, share_device=False):
    import kladder as kl
    return kl.Spec(
        "ring_allreduce_gpu",
        kernel=all_reduce,
        reference=None,
        args={"x": kl.Tensor("N", dtype=["bfloat16", "float32"])},
        returns=kl.Tensor("N", like="x"),
        dims={"N": kl.Dim(1, 1 << 21)},
        collective=kl.Collective(world=[2], switches=[SLOT_BYTES], setup=communicator, needs="cuda",
                                 share_device=share_device),
    )


spec, fixed = build_specs(make_spec, RingAllReduceGPU, RingAllReduceGPUFixed)
