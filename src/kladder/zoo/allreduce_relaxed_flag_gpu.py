"""allreduce_relaxed_flag_gpu: the GPU variant of allreduce_relaxed_flag. Each rank's kernel
(Triton, a program per 2 KiB tile) stages its input into its registered buffer (CUDA IPC),
publishes that it is ready, waits for its peer, and sums the peer's buffer with its input.
Small messages publish a flag per tile, each after its tile with a system-scope release and
read with an acquire load. The kernel for messages above 128 KiB saves those atomics: program
0 publishes one ready flag for the whole rank with a relaxed store once its own tile is staged,
and the peer polls it with relaxed loads. A message of more tiles than the GPU holds at once
is staged in waves, so the peer reads tiles the late waves have not written yet: the last
call's input in that slot of the reused buffer. The twin publishes per tile on every path.
TP 2 only (one peer)."""
import torch
import torch.distributed as dist
import triton
import triton.language as tl

from kladder.zoo import build_specs, ipc

CASE = dict(
    name="allreduce_relaxed_flag_gpu",
    gap="multi-GPU",
    rung=6,
    mirrors="aiter #4812",
    needs="cuda, 2 GPUs",
    story=(
        "The GPU variant of allreduce_relaxed_flag: a Triton all-reduce over CUDA IPC registered "
        "buffers (two slots, reused call after call). Above 128 KiB the kernel publishes one "
        "ready flag per rank, a relaxed store by program 0 once its own tile is staged, instead "
        "of a release per tile: nothing orders the other programs' copies before the flag, and "
        "a message of more 2 KiB tiles than the GPU runs at once (a few MiB) is staged in waves. "
        "The peer, already waiting (one rank is forced to lag by a busy kernel before each of "
        "its calls), reads the tiles of the late waves before they are written: the input of "
        "two calls before, which inputs that change every call make a wrong sum ('the "
        "collective completes normally but returns incorrect results', aiter #4812: 127 of 128 "
        "outputs wrong). It needs two GPUs: on one GPU the ranks' kernels are time-sliced, so "
        "the waiting kernel never runs while the other stages; there the case is skipped."
    ),
)

TILE_BYTES = 2048
SLOTS = 2
SMALL_BYTES = 128 << 10         # up to here: a flag per tile (the small-message kernel)
BUFFER_BYTES = 4 << 20          # one slot of the registered buffer; larger messages go in pieces
MAX_TILES = BUFFER_BYTES // TILE_BYTES


# the sizes, offsets and call numbers change every call: one compiled kernel for all of them
@triton.jit(do_not_specialize=["n", "seq"])
def _staged_kernel(x_ptr, out_ptr, my_buf, peer_buf, my_flags, peer_flags, n, seq,
                   TILE: tl.constexpr, PER_TILE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * TILE + tl.arange(0, TILE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(my_buf + offs, x, mask=mask)               # stage this tile in the registered buffer
    if PER_TILE:
        tl.debug_barrier()
        tl.atomic_xchg(my_flags + pid, seq, sem="release", scope="sys")
        while tl.atomic_add(peer_flags + pid, 0, sem="acquire", scope="sys") != seq:
            pass
    else:
        # The bug: one flag for the rank, published by program 0 when its own tile is staged;
        # the other programs' tiles (later waves among them) are not ordered before it.
        if pid == 0:
            tl.atomic_xchg(my_flags, seq, sem="relaxed", scope="sys")
        while tl.atomic_add(peer_flags, 0, sem="relaxed", scope="sys") != seq:
            pass
    tl.debug_barrier()
    y = tl.load(peer_buf + offs, mask=mask, other=0.0, cache_modifier=".cg")
    tl.store(out_ptr + offs, (x.to(tl.float32) + y.to(tl.float32)).to(out_ptr.dtype.element_ty), mask=mask)


class StagedAllReduceGPU:
    per_tile_large = False          # the large-message kernel publishes one flag for the rank

    def __init__(self, group, device):
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        if self.world != 2:
            raise ValueError(f"this all-reduce supports 2 ranks (one peer), not {self.world}")
        self.slot_bytes = BUFFER_BYTES + MAX_TILES * 4
        bufs = ipc.shared_buffers(group, SLOTS * self.slot_bytes, device)
        self.mine, self.peer = bufs[self.rank], bufs[1 - self.rank]
        self.seq = 0

    def _slot(self, buf, slot: int, dtype):
        a = slot * self.slot_bytes
        return buf[a:a + BUFFER_BYTES].view(dtype), buf[a + BUFFER_BYTES:a + self.slot_bytes].view(torch.int32)

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = torch.empty_like(flat)
        per_piece = BUFFER_BYTES // x.element_size()
        for i in range(0, flat.numel(), per_piece):
            self._one_piece(flat[i:i + per_piece], out[i:i + per_piece])
        return out.view(x.shape)

    def _one_piece(self, x, out) -> None:
        self.seq += 1
        slot = self.seq % SLOTS            # the buffer is reused: call k + 2 writes where call k was
        my_buf, my_flags = self._slot(self.mine, slot, x.dtype)
        peer_buf, peer_flags = self._slot(self.peer, slot, x.dtype)
        tile = TILE_BYTES // x.element_size()
        per_tile = x.numel() * x.element_size() <= SMALL_BYTES or self.per_tile_large
        _staged_kernel[(triton.cdiv(x.numel(), tile),)](x, out, my_buf, peer_buf, my_flags, peer_flags, x.numel(),
                                                        self.seq, TILE=tile, PER_TILE=per_tile, num_warps=8)


class StagedAllReduceGPUFixed(StagedAllReduceGPU):
    per_tile_large = True           # the fix: every tile released after its own copy, on every path


def all_reduce(comm, x):
    """Sum of x over the 2 ranks of comm's group (x: [N] bf16/fp32 on this rank's GPU)."""
    return comm.all_reduce(x)


def make_spec(communicator, share_device=False):
    import kladder as kl
    return kl.Spec(
        "staged_allreduce_gpu",
        kernel=all_reduce,
        reference=None,
        args={"x": kl.Tensor("N", dtype=["bfloat16", "float32"])},
        returns=kl.Tensor("N", like="x"),
        dims={"N": kl.Dim(1, 1 << 22)},
        collective=kl.Collective(world=[2], switches=[SMALL_BYTES, BUFFER_BYTES], setup=communicator,
                                 needs="cuda", share_device=share_device),
    )


spec, fixed = build_specs(make_spec, StagedAllReduceGPU, StagedAllReduceGPUFixed)
