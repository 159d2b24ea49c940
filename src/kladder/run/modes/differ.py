"""Per-call differences from the first call, measured on the device in one pass (rung 5).

A batch of K calls sits in a ring, one slot a call ([K, numel] per output); slot k ran on input
set k % P, whose first call's output is the baseline. For every slot, one pass counts the
elements whose bits differ from the baseline (`bits`) and those further from it than twice the
spec's tolerance (`far`: beyond the tolerance of the reference too, since the first call was
within it). Only these per-call counts, K integers an output, ever reach the host.

On CUDA the pass is one Triton kernel a batch (a program per slot and block of elements,
atomics into the slot's counters): comparing 256 calls of a 64K-float output reads 64 MB,
about 20 us on an H200, against the ~300 us the 256 calls take. Elsewhere (the CPU, or CUDA
without Triton) the same counts come from torch ops."""
from __future__ import annotations

import functools

INT_OF_SIZE = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}
BLOCK = 4096
FAR = 2.0          # a call further than twice the tolerance from the first is beyond the reference's


class Differ:
    """The baseline of every output (the first call on each input set, flattened to [P, numel]),
    its allowance, and the comparison of a ring of K calls against it."""

    def __init__(self, spec, point, firsts: list[dict], interpreted: bool = False):
        import torch

        from ...checks.values import allowed_of
        from ...core.sizes import dtype_of
        self.sets = len(firsts)
        self.fused = not interpreted       # interpreted, the fused kernel is slower than torch's ops
        self.base, self.allowed = {}, {}
        for name in firsts[0]:
            base = torch.stack([f[name].detach().reshape(-1) for f in firsts]).contiguous()
            self.base[name] = base
            if base.is_floating_point():
                work = torch.float64 if base.dtype == torch.float64 else torch.float32
                tol = spec.tolerance_for(dtype_of(spec, name, point.dtype_of), point.config)
                self.allowed[name] = (FAR * allowed_of(base.to(work), tol)).contiguous()

    def compare(self, ring: dict) -> tuple[dict, dict]:
        """Per output, int32 counts of [K] (bits that differ, elements beyond twice the
        tolerance) for the ring's K slots, left on the ring's device."""
        bits, far = {}, {}
        for name, slots in ring.items():
            flat = slots.reshape(slots.shape[0], -1)
            if flat.is_cuda and self.fused and _triton() is not None:
                bits[name], far[name] = self._compare_triton(name, flat)
            else:
                bits[name], far[name] = self._compare_torch(name, flat)
        return bits, far

    def _compare_torch(self, name: str, flat):
        import torch
        base = self.base[name]
        k, p = flat.shape[0], self.sets
        ints = getattr(torch, INT_OF_SIZE[flat.element_size()])
        ne = flat.view(ints).view(k // p, p, -1) != base.view(ints).view(1, p, -1)
        bits = ne.sum(-1).reshape(k).to(torch.int32)
        if name not in self.allowed:
            return bits, bits.clone()
        if not flat.is_cuda and not bool(bits.any()):
            return bits, torch.zeros_like(bits)              # on the host the test is free; most batches stop here
        lim = self.allowed[name]
        a = flat.view(k // p, p, -1).to(lim.dtype)
        b = base.view(1, p, -1).to(lim.dtype)
        both_nan = a.isnan() & b.isnan()
        same_inf = a.isinf() & b.isinf() & (a == b)
        finite = a.isfinite() & b.isfinite()
        bad = ne & ~(both_nan | same_inf) & (~finite | ((a - b).abs() > lim.view(1, p, -1)))
        return bits, bad.sum(-1).reshape(k).to(torch.int32)

    def _compare_triton(self, name: str, flat):
        import torch
        kernel = _triton()
        base = self.base[name]
        k, numel = flat.shape
        ints = getattr(torch, INT_OF_SIZE[flat.element_size()])
        counts = torch.zeros(2, k, dtype=torch.int32, device=flat.device)
        lim = self.allowed.get(name)
        is_float = lim is not None
        grid = (-(-numel // BLOCK), k)             # blocks on axis 0: axis 1 holds at most 65,535
        kernel[grid](flat.view(ints), base.view(ints), flat, base, lim if is_float else base, counts[0], counts[1],
                     numel, self.sets, IS_FLOAT=is_float, WIDE=flat.dtype == torch.float64, BLOCK=BLOCK)
        return counts[0], counts[1]


@functools.cache
def _triton():
    """The fused Triton kernel, built once; None where Triton cannot be imported."""
    try:
        return _build()
    except ImportError:
        return None


def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def differ_kernel(ring_bits, base_bits, ring, base, allowed, bits, far, numel, sets,
                      IS_FLOAT: tl.constexpr, WIDE: tl.constexpr, BLOCK: tl.constexpr):
        slot = tl.program_id(1)
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        inside = offs < numel
        at = slot.to(tl.int64) * numel + offs
        first = (slot % sets).to(tl.int64) * numel + offs
        r = tl.load(ring_bits + at, mask=inside, other=0)
        f = tl.load(base_bits + first, mask=inside, other=0)
        ne = (r != f) & inside
        tl.atomic_add(bits + slot, tl.sum(ne.to(tl.int32), axis=0))
        if IS_FLOAT:
            a = tl.load(ring + at, mask=inside, other=0.0)
            b = tl.load(base + first, mask=inside, other=0.0)
            if not WIDE:
                a = a.to(tl.float32)
                b = b.to(tl.float32)
            lim = tl.load(allowed + first, mask=inside, other=0.0)
            a_nan = a != a
            b_nan = b != b
            finite = ((a - a) == 0) & ((b - b) == 0)          # inf - inf and NaN - NaN are NaN
            same_inf = ~finite & ~a_nan & ~b_nan & (a == b)
            bad = ne & ~(a_nan & b_nan) & ~same_inf & (~finite | (tl.abs(a - b) > lim))
            tl.atomic_add(far + slot, tl.sum(bad.to(tl.int32), axis=0))
        else:
            tl.atomic_add(far + slot, tl.sum(ne.to(tl.int32), axis=0))

    return differ_kernel
