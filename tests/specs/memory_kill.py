"""Kernels that end for memory (kladder's own fixture, issue 38): N = 1 is killed by SIGKILL, as
the host's out-of-memory killer ends a process; N = 2 raises torch.OutOfMemoryError; N = 3 is
right but its reference raises cuBLAS's allocation failure; N = 4 is right."""
import os
import signal

import torch

import kladder as kl


def scale(x):
    n = x.shape[-1]
    if n == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    if n == 2:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
                                     "79.19 GiB of which 120.00 MiB is free.")
    return 2 * x


def scale_ref(x):
    if x.shape[-1] == 3:
        raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
    return 2 * x


spec = kl.Spec("memory_kill", kernel=scale, reference=scale_ref,
               args={"x": kl.Tensor("N", dtype="float32")}, returns=kl.Tensor("N", like="x"),
               dims={"N": kl.Dim(1, 4)})
