"""Point -> tensors: seeded inputs inside guarded allocations, poisoned out-arguments, and
the upcast copies the reference reads.

Why guard bytes: a store a few elements past the end of a tensor lands inside the caching
allocator's block, where compute-sanitizer's memcheck sees nothing (measured on an H200:
0 errors under the caching allocator). A sentinel before and after every tensor, checked
bit-for-bit after the call, catches it at the cost of one compare.
Why poison: an element the kernel never wrote keeps whatever the buffer held; a fresh
zeroed buffer makes that look plausible. A signalling-NaN pattern makes it fail.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .point import Point
from .sizes import dtype_of, shape_of
from .spec import FLOAT_DTYPES, Spec

GUARD_BYTES = 512                       # a multiple of 16: keeps every tensor 16-byte aligned
GUARD_PATTERN = bytes([0xDE, 0xAD, 0xBE, 0xEF])

# Signalling NaN: exponent all ones, quiet bit clear, payload non-zero. A kernel that never
# wrote an element leaves this, and no arithmetic result can produce it by chance.
SNAN_BITS = {"float64": 0x7FF4000000000000, "float32": 0x7FA00000, "float16": 0x7D00, "bfloat16": 0x7FA0}
INT_POISON_BYTE = 0xA5


def torch_dtype(name: str):
    import torch
    return getattr(torch, name)


@dataclass
class Guarded:
    """A tensor living inside a larger byte buffer with sentinels on both sides."""
    name: str
    buf: Any
    view: Any

    def damaged(self) -> tuple[list[int], list[int]]:
        """Byte offsets (before the start, after the end) whose sentinel changed."""
        import torch
        lo = self.buf[:GUARD_BYTES]
        hi = self.buf[self.buf.numel() - GUARD_BYTES:]
        pat = _pattern(GUARD_BYTES, self.buf.device)
        before = torch.nonzero(lo != pat).flatten().tolist()
        after = torch.nonzero(hi != pat).flatten().tolist()
        return [GUARD_BYTES - i for i in before], after


def _pattern(n: int, device):
    import torch
    reps = -(-n // len(GUARD_PATTERN))
    return torch.tensor(list(GUARD_PATTERN) * reps, dtype=torch.uint8, device=device)[:n]


def guarded_empty(name: str, shape: tuple[int, ...], dtype: str, device) -> Guarded:
    import math
    import torch
    nbytes = math.prod(shape) * torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    buf = torch.empty(GUARD_BYTES * 2 + nbytes, dtype=torch.uint8, device=device)
    pat = _pattern(GUARD_BYTES, device)
    buf[:GUARD_BYTES] = pat
    buf[GUARD_BYTES + nbytes:] = pat
    view = buf[GUARD_BYTES:GUARD_BYTES + nbytes].view(torch_dtype(dtype)).view(shape)
    return Guarded(name, buf, view)


def fill_random(t, dtype: str, gen) -> None:
    """Seeded values: normal for floats, small signed ints for ints, bits for bool."""
    if dtype in FLOAT_DTYPES:
        t.normal_(generator=gen)
    elif dtype == "bool":
        t.random_(0, 2, generator=gen)
    elif dtype == "uint8":
        t.random_(0, 256, generator=gen)
    else:
        t.random_(-64, 64, generator=gen)


def poison(t, dtype: str) -> None:
    import torch
    if dtype in SNAN_BITS:
        ibits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()]
        val = SNAN_BITS[dtype]
        t.view(ibits).fill_(val - (1 << (8 * t.element_size())) if val >= 1 << (8 * t.element_size() - 1) else val)
    else:
        t.view(torch.uint8).fill_(INT_POISON_BYTE)


@dataclass
class Inputs:
    """Everything one call needs: the kernel's args (in declared order) and the guards."""
    args: list
    guarded: dict[str, Guarded] = field(default_factory=dict)
    outs: dict[str, Any] = field(default_factory=dict)   # Out args' views, by name


def materialize(spec: Spec, point: Point, device, reuse: Inputs | None = None) -> Inputs:
    """With `reuse`, Out args are that call's buffers as they are: holding its plausible
    values, the way an inference engine hands a kernel last step's output buffer."""
    import torch
    gen = torch.Generator(device=device).manual_seed(point.seed)
    sizes, chosen = point.sizes, point.dtype_of
    built = spec.build(point, gen) if spec.build else {}
    args, guarded, outs = [], {}, {}
    for name, decl in spec.args.items():
        if name not in spec.tensor_args:
            args.append(built.get(name, decl))
            continue
        dtype = dtype_of(spec, name, chosen)
        if reuse is not None and name in spec.out_args:
            g = reuse.guarded[name]
        else:
            g = guarded_empty(name, shape_of(spec, name, sizes), dtype, device)
        guarded[name] = g
        if name in spec.out_args:
            if reuse is None:
                poison(g.view, dtype)
            outs[name] = g.view
        else:
            if name in built:
                g.view.copy_(built[name])
            else:
                fill_random(g.view, dtype, gen)
        args.append(g.view)
    return Inputs(args, guarded, outs)


def reference_args(spec: Spec, inputs: Inputs, select: dict[int, Any] | None = None) -> list:
    """Copies of the non-Out args for the reference, taken before the kernel runs (a kernel
    may scribble on its inputs): floats upcast to the reference dtype. With `select`
    (arg position -> (axis, row indices)) only those rows are copied: at 2^31 bytes a float64
    copy of the whole tensor costs more than the kernel by orders of magnitude."""
    ref_dtype = torch_dtype(spec.reference_dtype)
    out = []
    for i, (name, value) in enumerate(zip(spec.args, inputs.args)):
        if name in spec.out_args:
            continue
        if name in spec.tensor_args or hasattr(value, "is_floating_point"):
            if select and i in select:
                axis, rows = select[i]
                value = value.index_select(axis, rows)
            value = value.to(ref_dtype, copy=True) if value.is_floating_point() else value.clone()
        out.append(value)
    return out
