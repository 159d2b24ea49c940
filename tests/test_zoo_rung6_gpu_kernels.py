"""The rung-6 GPU zoo libraries on their own (CUDA only; skipped elsewhere): two spawned ranks
joined over gloo build the communicators (CUDA IPC buffers) and queue calls with no
synchronisation between them, rank 1 running a busy kernel before each; one bounded wait at the
end. On two GPUs each bug shows and each twin is right; on one GPU (ranks sharing it, their
kernels time-sliced) the twins must still be right: the IPC buffers work between processes."""
import importlib
import multiprocessing as mp
import os
import tempfile
import time

import pytest
import torch

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
pytestmark = pytest.mark.skipif(GPUS == 0, reason="needs CUDA")
two_gpus = pytest.mark.skipif(GPUS < 2, reason="needs 2 GPUs (on one the ranks' kernels never run at once)")
LAG_CYCLES = 400_000              # about 200 us on an H200
WAIT_S = 20.0


def _rank(rank, d, module, cls, sizes, dtype, results):
    os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})
    import torch.distributed as dist
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo", init_method=f"file://{d}/store", rank=rank, world_size=2)
    comm = getattr(importlib.import_module(module), cls)(dist.group.WORLD, torch.device("cuda"))
    gen = torch.Generator(device="cuda").manual_seed(rank)
    xs = [torch.randn(n, generator=gen, device="cuda").to(getattr(torch, dtype)) for n in sizes]
    torch.cuda.synchronize()
    dist.barrier()
    outs, done = [], []
    for x in xs:
        if rank == 1:
            torch.cuda._sleep(LAG_CYCLES)
        outs.append(comm.all_reduce(x))
        done.append(torch.cuda.Event())
        done[-1].record()
    end = time.monotonic() + WAIT_S
    while not done[-1].query():
        if time.monotonic() > end:
            results.put((rank, None))            # hung: the parent kills both
            time.sleep(3600)
        time.sleep(0.001)
    right = []
    for x, o in zip(xs, outs, strict=False):
        ref = x.double().cpu()
        dist.all_reduce(ref)
        right.append(bool(torch.allclose(o.double().cpu(), ref, rtol=1.6e-2, atol=1e-5)))
    results.put((rank, right))


def on_two_ranks(module, cls, sizes, dtype="bfloat16"):
    """Per rank, whether each call's output is right; None when the ranks hung."""
    ctx = mp.get_context("spawn")
    results, d = ctx.Queue(), tempfile.mkdtemp(prefix="kladder-gpu-test-")
    procs = [ctx.Process(target=_rank, args=(r, d, module, cls, sizes, dtype, results)) for r in range(2)]
    for p in procs:
        p.start()
    got = {}
    try:
        for _ in range(2):
            rank, right = results.get(timeout=WAIT_S + 120)
            got[rank] = right
    finally:
        for p in procs:
            p.kill()
            p.join()
    return None if any(v is None for v in got.values()) else [got[0], got[1]]


def all_right(res):
    return res is not None and all(all(r) for r in res)


SS, RF = "kladder.zoo.allreduce_size_stride_gpu", "kladder.zoo.allreduce_relaxed_flag_gpu"
SS_SIZES = [1, 786433] * 8          # bf16: 1.5 MiB = a full 1 MiB piece, then a 129-line one, on even then odd calls
RF_SIZES = [3 << 20, 5 << 20, 1 << 15] * 6   # bf16: 6 MiB and 10 MiB (the one-flag kernel, in pieces), 64 KiB (per tile)


def test_twins_are_right_on_one_gpu_or_two():
    assert all_right(on_two_ranks(SS, "RingAllReduceGPUFixed", SS_SIZES))
    assert all_right(on_two_ranks(RF, "StagedAllReduceGPUFixed", RF_SIZES))


@two_gpus
def test_size_stride_gpu_hangs_or_sums_the_next_call():
    res = on_two_ranks(SS, "RingAllReduceGPU", SS_SIZES)
    assert res is None or not all(all(r) for r in res)


@two_gpus
def test_size_stride_gpu_is_right_on_one_size():
    assert all_right(on_two_ranks(SS, "RingAllReduceGPU", [786433] * 8))


@two_gpus
def test_relaxed_flag_gpu_waiting_rank_reads_stale_tiles_above_the_switch():
    res = on_two_ranks(RF, "StagedAllReduceGPU", RF_SIZES)
    assert res is not None and not all(all(r) for r in res)


def test_relaxed_flag_gpu_is_right_below_the_switch():
    assert all_right(on_two_ranks(RF, "StagedAllReduceGPU", [1 << 15, 1000, 1] * 6))
