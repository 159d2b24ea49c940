"""Routing: how many tokens each expert gets, from a router's top-k expert ids.

    counts[e] = number of entries of ids equal to e      ids: [T, K] int32/int64 in [0, E-1]

A mixture-of-experts layer sizes its per-expert buffers from these counts. The number of
experts E is an argument: it cannot be read from the ids (ids.max() + 1 misses an expert
that got no token). Each program reads BLOCK ids and adds 1 to each one's count with an
atomic add (ids of one block may name the same expert: the atomics add them all).
"""
import torch
import triton
import triton.language as tl

BLOCK = 256      # ids per program


@triton.jit
def _expert_counts_kernel(ids_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n                                  # the last block of ids is partial
    ids = tl.load(ids_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + ids, 1, mask=mask)    # integer atomics: the same sums in any order


def expert_counts(ids, E):
    """The launcher: int32 counts of length E for ids of any shape (flattened), each in [0, E-1]."""
    ids = ids.contiguous().view(-1)                  # any layout: the kernel reads ids in order
    counts = torch.zeros(E, dtype=torch.int32, device=ids.device)
    n = ids.numel()
    if n == 0:
        return counts
    _expert_counts_kernel[(triton.cdiv(n, BLOCK),)](ids, counts, n, BLOCK=BLOCK)
    return counts


def expert_counts_reference(ids, E):
    return torch.bincount(ids.reshape(-1).long(), minlength=E).to(torch.int32)
