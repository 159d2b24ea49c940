"""The GPU rung-4 zoo kernels (splitk_semaphore_graph, wrong_stream) on their own, without
kladder's machinery.

Everywhere (the Triton interpreter on the CPU): both launchers of each case are right when
called eagerly, at shapes with and without tails, call after call; and split-K's kernel-level
mechanism, shown without a graph: launched again on the counters it used before (as a graph
replay launches it), the buggy kernel writes nothing, the twin is right.
On CUDA only: the mechanisms themselves. Split-K captured in a CUDA graph is right on replay 1
and returns the poisoned output from replay 2 on; its twin is right on every replay. The
wrong-stream wrapper, called on a stream whose producer is late, reads the inputs before they
land; its twin waits for them, and replays right in a graph.

Both cases keep module-level state (a workspace with its counters, an overlap stream); the
`fresh` fixture reloads a case module so that each test starts as a new process would.
"""
import importlib
import os

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu":
    # before triton's first import: @triton.jit then builds interpreted kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")

from kladder.zoo import splitk_semaphore_graph, wrong_stream  # noqa: E402

RTOL = {torch.bfloat16: 1.6e-2, torch.float16: 1e-3, torch.float32: 1.3e-6}  # kladder's defaults
needs_cuda = pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA: graph capture and streams have no CPU "
                                                         "equivalent (the eager tests cover the CPU)")
LATE_CYCLES = 50_000_000    # the late producer: about 25 ms at the H200's 1.98 GHz, 100x a warm launch


# torch.empty returns NaN (as under kladder) and inputs are seeded: tests/conftest.py
pytestmark = pytest.mark.usefixtures("poisoned_empty")


@pytest.fixture
def fresh():
    """Reload a case module: its workspace and streams start empty, as in a new process."""
    return importlib.reload


def randn(*shape, dtype=torch.float16):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def agrees(out, ref):
    """NaN-aware and scaled like kladder's comparison: |out - ref| <= atol + rtol *
    max(|ref|, rms of the reference row), and out finite wherever ref is."""
    o, r = out.double(), ref.double()
    rms = r.pow(2).mean(-1, keepdim=True).sqrt()
    allowed = 1e-5 + RTOL[out.dtype] * torch.maximum(r.abs(), rms)
    return bool(torch.isfinite(o).all() and ((o - r).abs() <= allowed).all())


# ---------------------------------------------------------------- splitk_semaphore_graph
def gemm_ref(a, b):
    return splitk_semaphore_graph.splitk_gemm_ref(a.double(), b.double())


def splitk_fn(case, fixed):
    return case.splitk_gemm_fixed if fixed else case.splitk_gemm


@pytest.mark.parametrize("M, N, K", [(1, 1, 1),        # K below one slice: most splits add nothing
                                     (33, 65, 513),    # a tail in every dim
                                     (64, 64, 512),    # every tile full
                                     (5, 70, 2881)])   # next to gpt-oss's K
@pytest.mark.parametrize("SPLIT_K", [2, 4])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_splitk_eager_right(fresh, fixed, M, N, K, SPLIT_K):
    """Eagerly, each call counts on freshly zeroed counters: both kernels are right."""
    fn = splitk_fn(fresh(splitk_semaphore_graph), fixed)
    a, b = randn(M, K), randn(K, N)
    assert agrees(fn(a, b, SPLIT_K=SPLIT_K), gemm_ref(a, b))


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_splitk_eager_calls_in_a_row_right(fresh, fixed):
    """Call after call, split after split, in one process: eager calls never see the bug."""
    fn = splitk_fn(fresh(splitk_semaphore_graph), fixed)
    for SPLIT_K in (4, 4, 2, 4):
        a, b = randn(33, 100), randn(100, 40)
        assert agrees(fn(a, b, SPLIT_K=SPLIT_K), gemm_ref(a, b))


@pytest.mark.parametrize("SPLIT_K", [2, 4])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_splitk_kept_counters(fresh, monkeypatch, fixed, SPLIT_K):
    """The mechanism without a graph: with the launcher taking the kept counters (its capture
    branch), every call launches the kernel on the same counters, as every replay of a graph
    does. The buggy kernel is right once and leaves each counter at SPLIT_K; then no arrival
    reads SPLIT_K - 1 and C is never written. The twin is right every time, counters at 0."""
    case = fresh(splitk_semaphore_graph)
    monkeypatch.setattr(case, "_capturing", lambda t: True)
    fn, cache = (case.splitk_gemm_fixed, case._WORKSPACE_FIXED) if fixed else (case.splitk_gemm, case._WORKSPACE)
    M, N, K = 33, 40, 300
    tiles = 2 * 2
    for call in range(3):
        a, b = randn(M, K), randn(K, N)
        c = fn(a, b, SPLIT_K=SPLIT_K)
        counters = cache[a.device][1][:tiles].tolist()
        if fixed or call == 0:
            assert agrees(c, gemm_ref(a, b))
        else:
            assert c.isnan().all()                     # torch.empty's NaN: nothing written
        assert counters == [0 if fixed else (call + 1) * SPLIT_K] * tiles


@needs_cuda
@pytest.mark.parametrize("SPLIT_K", [2, 4])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_splitk_graph_replays(fresh, fixed, SPLIT_K):
    """Warm up, capture, replay 3 times on new inputs with C poisoned before each replay (as
    kladder's graph mode does): the buggy kernel is right on replay 1 only and then leaves C
    as it was; the twin is right on every replay."""
    fn = splitk_fn(fresh(splitk_semaphore_graph), fixed)
    M, N, K = 33, 65, 2880
    a, b = randn(M, K), randn(K, N)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                      # warm-up outside the graph: JIT, the workspace
        fn(a, b, SPLIT_K=SPLIT_K)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = fn(a, b, SPLIT_K=SPLIT_K)
    right, untouched = [], []
    for _ in range(3):
        a.copy_(randn(M, K))
        b.copy_(randn(K, N))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        right.append(agrees(c, gemm_ref(a, b)))
        untouched.append(bool(c.isnan().all()))
    if fixed:
        assert right == [True, True, True]
    else:
        assert right == [True, False, False] and untouched == [False, True, True]


# ---------------------------------------------------------------- wrong_stream
def scales_ref(x):
    return wrong_stream.token_scales_ref(x.double())


def scales_fn(case, fixed):
    return case.token_scales_fixed if fixed else case.token_scales


@pytest.mark.parametrize("M, N", [(1, 1), (33, 1025), (32, 1024), (5, 2880), (17, 7169)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_wrong_stream_eager_right(fresh, fixed, M, N, dtype):
    """Called with inputs that have landed, both wrappers are right (on the CPU they run the
    kernel inline; on CUDA the synchronize is what the buggy one relies on, unknowingly)."""
    fn = scales_fn(fresh(wrong_stream), fixed)
    x = randn(M, N, dtype=dtype)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    assert agrees(fn(x), scales_ref(x))


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_wrong_stream_strided_right(fresh, fixed):
    x = randn(300, 70, dtype=torch.bfloat16).t()       # a transposed view: stride (1, 70)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    assert agrees(scales_fn(fresh(wrong_stream), fixed)(x), scales_ref(x))


@pytest.mark.skipif(DEVICE != "cpu", reason="the CPU path: without CUDA there are no streams to overlap on")
def test_wrong_stream_runs_inline_on_the_cpu(fresh):
    case = fresh(wrong_stream)
    for fn in (case.token_scales, case.token_scales_fixed):
        x = randn(3, 100, dtype=torch.bfloat16)
        assert agrees(fn(x), scales_ref(x))
    assert case._AUX == {}


def late_producer_call(fn, x_real):
    """x is written on the caller's stream behind a late producer, then fn(x) is called on
    that stream. Returns fn's output and whether the race was armed: the producer still
    running when fn returned, so any launch not ordered after it ran first."""
    x = x_real.clone()
    fn(x)                                              # warm-up: JIT and module load, the wrapper's
    torch.cuda.synchronize()                           # stream, cached allocator blocks
    x.fill_(float("nan"))                              # what a kernel that runs too early reads
    torch.cuda.synchronize()
    caller = torch.cuda.Stream(priority=-1)            # the high-priority pool: never the wrapper's own stream
    produced = torch.cuda.Event()
    with torch.cuda.stream(caller):
        torch.cuda._sleep(LATE_CYCLES)                 # the producer is late ...
        x.copy_(x_real)                                # ... and writes x on the caller's stream
        produced.record()
        out = fn(x)
        armed = not produced.query()
    torch.cuda.synchronize()
    return out, armed


@needs_cuda
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_wrong_stream_late_producer(fresh, fixed):
    """The buggy wrapper's kernel starts at once on its own stream and reads the NaN x held
    (max ignores NaN: every scale is the floor, MIN_AMAX / 448); the twin waits for x."""
    fn = scales_fn(fresh(wrong_stream), fixed)
    x_real = randn(64, 4096, dtype=torch.bfloat16)
    out, armed = late_producer_call(fn, x_real)
    assert armed, "the producer finished before the call returned: the race was not exercised"
    assert agrees(out, scales_ref(x_real)) == fixed


@needs_cuda
def test_wrong_stream_fixed_in_a_graph(fresh):
    """The twin's wait forks its stream into the capture and the caller's wait joins it: it
    captures, and every replay on new inputs is right (no false alarm in the graph mode)."""
    fn = fresh(wrong_stream).token_scales_fixed
    x = randn(33, 1025, dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(x)
    for _ in range(3):
        x.copy_(randn(33, 1025, dtype=torch.bfloat16))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert agrees(out, scales_ref(x))
