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

from .fill import fill_kind, layout_plan, pad_bytes
from ..core.notation import ZERO_PADDING, Padding, ValueKind, Values
from ..core.point import Point
from ..core.sizes import dtype_of, shape_of
from ..core.spec import Size, Spec

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
    guard: int = GUARD_BYTES

    def damaged(self) -> tuple[list[int], list[int]]:
        """Byte offsets (before the start, after the end) whose sentinel changed."""
        import torch
        if not self.guard:
            return [], []
        lo = self.buf[:self.guard]
        hi = self.buf[self.buf.numel() - self.guard:]
        pat = sentinel_pattern(self.guard, self.buf.device)
        before = torch.nonzero(lo != pat).flatten().tolist()
        after = torch.nonzero(hi != pat).flatten().tolist()
        return [self.guard - i for i in before], after


def any_damaged(guarded) -> bool:
    """Whether any sentinel of any of these buffers changed: one fused comparison and one host
    sync per device and guard size for every guard of a point (a sync per guard costs more than the compare on
    a GPU); `Guarded.damaged` then says where, for the buffers that were hit."""
    import torch
    by_device: dict = {}
    for g in guarded:
        if g.guard:                       # a plain allocation (guard=0) has no sentinels
            by_device.setdefault((g.buf.device, g.guard), []).append(g)
    for (device, guard), gs in by_device.items():
        ends = sentinel_ends(gs[0].buf, guard) if len(gs) == 1 else torch.cat([sentinel_ends(g.buf, guard) for g in gs])
        if bool((ends != sentinel_pattern(guard, device)).any()):
            return True
    return False


_PATTERNS: dict = {}


def sentinel_pattern(n: int, device):
    """The sentinel bytes, made once per size and device (not copied from the host every call)."""
    import torch
    key = (n, str(device))
    if key not in _PATTERNS:
        reps = -(-n // len(GUARD_PATTERN))
        _PATTERNS[key] = torch.tensor(list(GUARD_PATTERN) * reps, dtype=torch.uint8, device=device)[:n]
    return _PATTERNS[key]


def guarded_empty(name: str, shape: tuple[int, ...], dtype: str, device, guard: int = GUARD_BYTES) -> Guarded:
    """With guard=0, a plain allocation of the tensor's bytes: compute-sanitizer's memcheck sees
    a store past the end only when it leaves the allocation (run/modes/sanitize.py)."""
    import math

    import torch
    nbytes = math.prod(shape) * torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    buf = torch.empty(guard * 2 + nbytes, dtype=torch.uint8, device=device)
    if guard:
        sentinel_ends(buf, guard).copy_(sentinel_pattern(guard, device).expand(2, guard))     # both sentinels, one copy
    view = buf[guard:guard + nbytes].view(torch_dtype(dtype)).view(shape)
    return Guarded(name, buf, view, guard)


def sentinel_ends(buf, guard: int = GUARD_BYTES):
    """The two sentinel regions of a guarded buffer as one (2, guard) view: one kernel writes
    or reads both (a launch costs more than 512 bytes do)."""
    return buf.as_strided((2, guard), (buf.numel() - guard, 1))


def poison(t, dtype: str) -> None:
    import torch
    if dtype in SNAN_BITS:
        ibits = {8: torch.int64, 4: torch.int32, 2: torch.int16}[t.element_size()]
        val = SNAN_BITS[dtype]
        t.view(ibits).fill_(val - (1 << (8 * t.element_size())) if val >= 1 << (8 * t.element_size() - 1) else val)
    else:       # a 0-dim tensor has no byte view of its own (torch refuses a view of other element size)
        (t if t.dim() else t.unsqueeze(0)).view(torch.uint8).fill_(INT_POISON_BYTE)


def poison_word(dtype: str) -> str:
    """What poison(t, dtype) writes, as a finding states it: a signalling NaN's bits in a float,
    0xA5 in every byte of an integer (-1515870811 in an int32: no count, index or length a kernel
    computes by accident)."""
    import torch
    if dtype in SNAN_BITS:
        return f"a signalling NaN (0x{SNAN_BITS[dtype]:X})"
    t = torch.empty(1, dtype=torch_dtype(dtype))
    poison(t, dtype)
    value = t.item()
    size = t.element_size()
    return f"0x{'A5' * size} ({value})" if dtype != "bool" else "0xA5 (a byte neither False nor True)"


@dataclass
class Inputs:
    """Everything one call needs: the kernel's args (in declared order) and the guards."""
    args: list
    guarded: dict[str, Guarded] = field(default_factory=dict)
    outs: dict[str, Any] = field(default_factory=dict)   # Out args' views, by name


def materialize(spec: Spec, point: Point, device, reuse: Inputs | None = None, guard: int = GUARD_BYTES) -> Inputs:
    """With `reuse`, Out args are that call's buffers as they are: holding its plausible
    values, the way an inference engine hands a kernel last step's output buffer.
    The point's value kinds (rung 2), layouts and padding fills (rung 3) shape the inputs;
    a replayed point's inputs are the captured tensors, in their captured layout."""
    import torch
    gen = torch.Generator(device=device).manual_seed(point.seed)
    sizes, chosen = point.sizes, point.dtype_of
    built = spec.build(point, gen) if spec.build else {}
    if point.replay:
        from .capturing import load_entry
        built = {**load_entry(point.replay, device), **built}
    kinds, layouts = point.kinds, dict(point.layouts)
    args, guarded, outs = [], {}, {}
    for name, decl in spec.args.items():
        if name not in spec.tensor_args:
            args.append(built.get(name, sizes[decl.dim] if isinstance(decl, Size) else decl))
            continue
        dtype = dtype_of(spec, name, chosen)
        shape = shape_of(spec, name, sizes)
        if reuse is not None and name in spec.out_args:
            g = reuse.guarded[name]
        elif name in built and point.replay and hasattr(built[name], "stride"):
            g = guarded_like(name, built[name], device, guard)
        else:
            g = guarded_strided(name, shape, dtype, device, layouts.get(name, ""), guard)
        guarded[name] = g
        if name in spec.out_args:
            if reuse is None:
                poison(g.view, dtype)
            outs[name] = g.view
        elif not (point.replay and name in built):
            _write_input(spec, name, g, dtype, shape, built.get(name), kinds.get(name, NORMAL), sizes, gen)
        args.append(g.view)
    return Inputs(args, guarded, outs)


def guarded_strided(name: str, shape, dtype: str, device, layout: str, guard: int = GUARD_BYTES) -> Guarded:
    """A guarded storage holding a view of `shape` in `layout`; the storage is poisoned first,
    so a kernel that reads between a view's elements reads signalling NaNs (or 0xA5 bytes)."""
    if not layout:
        return guarded_empty(name, shape, dtype, device, guard)
    size, stride, offset, length = layout_plan(shape, layout)
    g = guarded_empty(name, (length,), dtype, device, guard)
    poison(g.view, dtype)
    return Guarded(name, g.buf, g.view.as_strided(size, stride, g.view.storage_offset() + offset), guard)


def guarded_like(name: str, t, device, guard: int = GUARD_BYTES) -> Guarded:
    """A guarded copy of a captured tensor that keeps its strides and storage offset."""
    off = t.storage_offset()
    length = off + (sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True)) + 1 if t.numel() else 0)
    g = guarded_empty(name, (length,), str(t.dtype).removeprefix("torch."), device, guard)
    poison(g.view, str(t.dtype).removeprefix("torch."))
    view = g.view.as_strided(t.shape, t.stride(), g.view.storage_offset() + off)
    view.copy_(t.to(device)) if not any(st == 0 for st in t.stride()) else view.copy_(t.to(device).contiguous())
    return Guarded(name, g.buf, view, guard)


NORMAL = ValueKind(Values.NORMAL)


def _write_input(spec: Spec, name: str, g: Guarded, dtype: str, shape, built, kind: ValueKind | Padding, sizes,
                 gen) -> None:
    import torch
    view = g.view
    pad = kind if isinstance(kind, Padding) else ZERO_PADDING
    if isinstance(kind, Padding):
        kind = NORMAL                      # the valid elements are normal; the padding is poisoned below
    in_place = built is None and view.is_contiguous()
    if built is not None:
        vals = built.to(view.device, torch_dtype(dtype))
    else:
        # a contiguous input is filled where it lives: a 4 GiB input needs no 4 GiB staging copy
        vals = view if in_place else torch.empty(shape, dtype=torch_dtype(dtype), device=view.device)
        t = spec.all_tensors[name]
        chunks = ()
        if t.range is not None and isinstance(t.range[1], str) and t.range[1] in spec.dims:
            chunks = tuple(spec.dims[t.range[1]].chunks)
        fill_kind(vals, kind, dtype, gen, spec.range_of(name, sizes), chunks)
    if in_place:
        pass
    elif any(st == 0 for st in view.stride()) and view.numel():
        # a broadcast: every row is one storage row; the reference sees the same rows
        vals = vals[:1].expand_as(vals)
        view[:1].copy_(vals[:1])
    else:
        view.copy_(vals)
    valid = spec.valid_of(name, sizes)
    if valid is not None and view.dim() and valid < view.shape[-1]:
        padding = view[..., valid:]
        if any(st == 0 for st in view.stride()):
            padding = view[:1, ..., valid:]          # a broadcast: one storage row holds every row's padding
        nbytes = padding.numel() * padding.element_size()
        # padding bytes draw from their own generator: the valid data stay those of zero padding
        pad_gen = type(gen)(device=view.device).manual_seed(gen.initial_seed() ^ 0x5A5A5A5A)
        raw = pad_bytes(nbytes, pad, pad_gen, view.device)
        padding.copy_(raw.view(torch_dtype(dtype)).view(padding.shape))


def reference_args(spec: Spec, inputs: Inputs, select: dict[int, Any] | None = None, device=None) -> list:
    """Copies of the non-Out args for the reference, taken before the kernel runs (a kernel
    may scribble on its inputs): floats upcast to the reference dtype, on `device` (the host when
    the accelerator is short: harness.reference_device). With `select` (arg position -> (axis,
    row indices)) only those rows are copied: at 2^31 bytes a float64 copy of the whole tensor
    costs more than the kernel by orders of magnitude."""
    ref_dtype = torch_dtype(spec.reference_dtype)
    out = []
    for i, (name, value) in enumerate(zip(spec.args, inputs.args, strict=True)):
        if name in spec.out_args:
            continue
        if name in spec.tensor_args or hasattr(value, "is_floating_point"):
            if select and i in select:
                axis, rows = select[i]
                value = value.index_select(axis, rows.to(value.device))
            moved = value.to(device) if device is not None and value.device != _device(device) else value
            if value.is_floating_point():
                value = moved.to(ref_dtype, copy=moved is value)
            else:
                value = moved.clone() if moved is value else moved
        out.append(value)
    return out


def reference_dtypes(spec: Spec, inputs: Inputs) -> list:
    """The dtype each reference input had as the kernel got it ('' for non-floats): the honest
    peer runs the reference on the inputs cast back to these (checks/peer.py)."""
    out = []
    for name, value in zip(spec.args, inputs.args, strict=True):
        if name in spec.out_args:
            continue
        floating = hasattr(value, "is_floating_point") and value.is_floating_point()
        out.append(str(value.dtype).removeprefix("torch.") if floating else "")
    return out


def _device(d):
    import torch
    return torch.device(d)
