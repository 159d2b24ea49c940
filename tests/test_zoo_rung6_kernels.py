"""The rung-6 CPU zoo libraries on their own, without kladder's machinery: two forked ranks
joined over gloo call the communicators directly, one rank sleeping 2 ms before each call.
The bug shows where the mechanism says, and nowhere else; the twin is right everywhere.

- allreduce_size_stride: one size, or a large and a small message alternating large-first,
  never overlap slots (the buggy ring is right there: "two sizes can miss the bug"); a
  32-line piece on an even ring call followed by a 17-line one makes the fast rank write over
  lines its peer has not read, and the ranks hang (or sum the next call's data).
- allreduce_relaxed_flag: messages up to 8 KiB (copied inline) are right; between 8 KiB and
  64 KiB (the copy engine's path) the waiting rank sums its peer's previous input."""
import json
import os
import signal
import tempfile
import time

import pytest
import torch
import torch.distributed as dist

from kladder.zoo import allreduce_relaxed_flag as rf
from kladder.zoo import allreduce_size_stride as ss

LAG_S = 0.002


def on_two_ranks(comm_cls, sizes, dtype, timeout_s=15.0):
    """Per rank, whether each call's output equals the float64 sum; None when the ranks hung."""
    d = tempfile.mkdtemp(prefix="kladder-test-")
    procs = []
    for rank in range(2):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 1
            try:
                os.write(w, json.dumps(_rank(rank, d, comm_cls, sizes, dtype)).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        procs.append((pid, r))
    end, left = time.monotonic() + timeout_s, {pid for pid, _ in procs}
    while left and time.monotonic() < end:
        for pid in list(left):
            if os.waitpid(pid, os.WNOHANG)[0]:
                left.discard(pid)
        time.sleep(0.02)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    out = [os.read(r, 1 << 16) for _, r in procs]
    for _, r in procs:
        os.close(r)
    return None if left else [json.loads(o) for o in out]


def _rank(rank, d, comm_cls, sizes, dtype):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{d}/store", rank=rank, world_size=2)
    comm = comm_cls(dist.group.WORLD)
    gen = torch.Generator().manual_seed(rank)
    xs = [torch.randn(n, generator=gen).to(dtype) for n in sizes]
    dist.barrier()
    outs = []
    for x in xs:
        if rank == 1:
            time.sleep(LAG_S)
        outs.append(comm.all_reduce(x))
    right = []
    for x, o in zip(xs, outs, strict=False):
        ref = x.double()
        dist.all_reduce(ref)
        right.append(bool(torch.allclose(o.double(), ref, rtol=1.6e-2, atol=1e-5)))
    return right


def all_right(res):
    return res is not None and all(all(r) for r in res)


# ---------------------------------------------------------------- allreduce_size_stride
BF16_LINES_32, BF16_LINES_17 = 16383, 8193      # bf16 elements filling 32 and 17 lines of 1 KiB


@pytest.mark.parametrize("sizes", [[BF16_LINES_32] * 6, [BF16_LINES_32, BF16_LINES_17] * 4],
                         ids=["one size", "large, small alternating"])
def test_size_stride_ring_is_right_where_slots_never_overlap(sizes):
    assert all_right(on_two_ranks(ss.RingAllReduce, sizes, torch.bfloat16))


def test_size_stride_ring_hangs_when_a_smaller_piece_follows_on_an_even_slot():
    # 24577 bf16 elements (48 KiB) go in two pieces, 32 lines then 17: after a 1-line call, the
    # first piece is ring call 2 (even: its slot at line 0) and the second, call 3, starts its
    # slot at line 17 (its own size), inside call 2's, which the lagging rank is still reading
    res = on_two_ranks(ss.RingAllReduce, [1, 24577] * 8, torch.bfloat16, timeout_s=3.0)   # right: < 1 s
    assert res is None or not all(all(r) for r in res)


def test_size_stride_twin_is_right_on_every_sequence():
    for sizes in ([1, 24577] * 8, [BF16_LINES_32, 1, 40000, BF16_LINES_17, 3]):
        assert all_right(on_two_ranks(ss.RingAllReduceFixed, sizes, torch.bfloat16))


# ---------------------------------------------------------------- allreduce_relaxed_flag
def test_relaxed_flag_is_right_below_the_engine_threshold():
    assert all_right(on_two_ranks(rf.StagedAllReduce, [1000, 2048, 17] * 6, torch.float32))   # <= 8 KiB


def test_relaxed_flag_waiting_rank_reads_stale_input_on_the_engine_path():
    res = on_two_ranks(rf.StagedAllReduce, [5793, 9217, 16383] * 6, torch.float32)        # 23 to 64 KiB
    assert res is not None and not all(res[0])        # rank 0 waits for the lagging rank 1's flag


def test_relaxed_flag_twin_is_right_on_every_path():
    sizes = [5793, 1000, 16383, 40000, 9217, 3] * 3                                          # inline, engine, torch.distributed
    assert all_right(on_two_ranks(rf.StagedAllReduceFixed, sizes, torch.float32))


# ---------------------------------------------------------------- the GPU variants' kernels, interpreted
# Triton's interpreter runs a grid's programs one after another, so a kernel that waits for its
# peer is run here against a peer that has already pushed (its lines and flags in place): the
# kernels' indexing, masks and flags on the CPU; their races need two GPUs (docs/results/2026-12-01-h200-round/h200x2_rung6.sh).
def test_gpu_ring_kernel_pushes_its_lines_and_sums_the_peers():
    import triton

    from kladder.zoo import allreduce_size_stride_gpu as g
    n, seq, line = 5000, 2, g.LINE_BYTES // 4
    lines = g.SLOTS * g.SLOT_LINES
    base = g.RingAllReduceGPUFixed.slot_base(type("C", (), {"seq": seq})(), triton.cdiv(n, line))
    x, y = torch.randn(n), torch.randn(n)
    mine, my_flags = torch.zeros(lines * line), torch.zeros(lines, dtype=torch.int32)
    mine[base * line:base * line + n], my_flags[base:base + triton.cdiv(n, line)] = y, seq
    peer, peer_flags, out = torch.zeros_like(mine), torch.zeros_like(my_flags), torch.empty_like(x)
    g._ring_kernel[(g.PROGRAMS,)](x, out, peer, peer_flags, mine, my_flags, n, base, seq, LINE=line, PROGRAMS=g.PROGRAMS)
    assert torch.allclose(out, x + y)
    assert torch.equal(peer[base * line:base * line + n], x) and bool((peer_flags[base:base + 5] == seq).all())


def test_gpu_ring_slot_offsets_overlap_only_in_the_buggy_stride():
    from kladder.zoo import allreduce_size_stride_gpu as g
    at = lambda cls, seq, nlines: cls.slot_base(type("C", (), {"seq": seq})(), nlines)
    assert at(g.RingAllReduceGPU, 2, 256) == 0 and at(g.RingAllReduceGPU, 3, 129) == 129   # inside lines 0..255
    assert at(g.RingAllReduceGPUFixed, 3, 129) == g.SLOT_LINES                            # past them


@pytest.mark.parametrize("per_tile", [True, False], ids=["a flag per tile", "one flag for the rank"])
def test_gpu_staged_kernel_stages_publishes_and_sums(per_tile):
    import triton

    from kladder.zoo import allreduce_relaxed_flag_gpu as g
    n, seq, tile = 9000, 3, g.TILE_BYTES // 4
    x, y = torch.randn(n), torch.randn(n)
    mine, my_flags = torch.zeros(n), torch.zeros(g.MAX_TILES, dtype=torch.int32)
    peer_flags, out = torch.full((g.MAX_TILES,), seq, dtype=torch.int32), torch.empty_like(x)
    tiles = triton.cdiv(n, tile)
    g._staged_kernel[(tiles,)](x, out, mine, y.clone(), my_flags, peer_flags, n, seq, TILE=tile, PER_TILE=per_tile,
                               num_warps=8)
    assert torch.allclose(out, x + y) and torch.equal(mine, x)
    published = my_flags[:tiles] if per_tile else my_flags[:1]
    assert bool((published == seq).all()) and int(my_flags[published.numel():].abs().sum()) == 0
