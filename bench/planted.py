"""Planted bugs for compute-sanitizer (docs/results/2026-12-01-h200-round/h200_rung5.sh), one per tool, each with its twin:
kladder's sanitize mode must report the planted one with its kernel and source line and pass the
twin. Not zoo cases: each is the smallest kernel that has the one bug its tool looks for.

- overrun (memcheck): kladder.zoo.small_overrun, a Triton kernel storing a few elements past its
  exact-size out-argument, invisible to memcheck under the caching allocator.
- race (racecheck): a CUDA kernel (NVRTC) where each thread reads its neighbour's shared-memory
  slot with no __syncthreads() between the writes and the reads.
- half_barrier (synccheck): __syncthreads() reached by the even lanes of every warp (divergent
  within each warp: a barrier skipped by whole warps is no error once they exit, and synccheck
  did not flag it on the H200).
- uninit (initcheck): a Triton kernel adding into an accumulator its launcher took from
  torch.empty instead of torch.zeros.
The CUDA kernels compile on first use (torch.cuda._compile_kernel, NVRTC, with line info), so
this module imports on a machine without a GPU."""
import torch
import triton
import triton.language as tl

import kladder as kl
from kladder.zoo.small_overrun import fixed as overrun_fixed  # noqa: F401 - specs climbed by reference
from kladder.zoo.small_overrun import spec as overrun  # noqa: F401

THREADS = 256
SOURCE = r"""
extern "C" __global__ void shift_race(const float* x, float* y, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
#ifdef FIXED
    __syncthreads();
#endif
    if (i < n) y[i] = s[(t + 1) % 256];
}

extern "C" __global__ void half_barrier(const float* x, float* y, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
#ifdef FIXED
    __syncthreads();
#else
    if (t % 2 == 0) __syncthreads();          // odd lanes of every warp skip it
#endif
    if (i < n) y[i] = s[255 - t];
}
"""
_BUILT = {}


def _kernel(name: str, fixed: bool):
    key = (name, fixed)
    if key not in _BUILT:
        source = ("#define FIXED\n" if fixed else "") + SOURCE
        try:                                            # line info, so that the tools name the line
            _BUILT[key] = torch.cuda._compile_kernel(source, name, nvcc_options=["-lineinfo"])
        except TypeError:                               # a torch whose NVRTC wrapper takes no options
            _BUILT[key] = torch.cuda._compile_kernel(source, name)
    return _BUILT[key]


def _blocks(x, name, fixed):
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    _kernel(name, fixed)(grid=(triton.cdiv(n, THREADS), 1, 1), block=(THREADS, 1, 1), args=[x, y, n])
    return y


def _per_block(x, fn):
    n = x.numel()
    pad = torch.nn.functional.pad(x.reshape(-1), (0, -n % THREADS)).reshape(-1, THREADS)
    return fn(pad).reshape(-1)[:n].reshape(x.shape)


def _spec(name, kernel, reference):
    return kl.Spec(name, kernel=kernel, reference=reference, args={"x": kl.Tensor("N", dtype="float32")},
                   returns=kl.Tensor("N", like="x"), dims={"N": kl.Dim(1, 1 << 20, tile=THREADS)})


race = _spec("shift_race", lambda x: _blocks(x, "shift_race", False),
             lambda x: _per_block(x, lambda b: b.roll(-1, dims=1)))
race_fixed = _spec("shift_race", lambda x: _blocks(x, "shift_race", True),
                   lambda x: _per_block(x, lambda b: b.roll(-1, dims=1)))
half_barrier = _spec("half_barrier", lambda x: _blocks(x, "half_barrier", False),
                     lambda x: _per_block(x, lambda b: b.flip(1)))
half_barrier_fixed = _spec("half_barrier", lambda x: _blocks(x, "half_barrier", True),
                           lambda x: _per_block(x, lambda b: b.flip(1)))


@triton.jit
def _share_kernel(x_ptr, acc_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
    total = tl.load(acc_ptr + row) + tl.sum(tl.abs(x), axis=0)     # adds into the row's accumulator
    tl.store(acc_ptr + row, total)
    tl.store(y_ptr + row * stride + cols, x / total, mask=cols < N)


def _share(x, zeroed):
    x = x.contiguous()
    M, N = x.shape
    acc = torch.zeros(M, device=x.device) if zeroed else torch.empty(M, device=x.device)   # the bug: empty
    y = torch.empty_like(x)
    _share_kernel[(M,)](x, acc, y, N, x.stride(0), BLOCK=triton.next_power_of_2(N))
    return y


def _share_ref(x):
    return x / x.abs().sum(-1, keepdim=True)


def _share_spec(kernel):
    return kl.Spec("abs_share", kernel=kernel, reference=_share_ref, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 1024)})


uninit = _share_spec(lambda x: _share(x, zeroed=False))
uninit_fixed = _share_spec(lambda x: _share(x, zeroed=True))
