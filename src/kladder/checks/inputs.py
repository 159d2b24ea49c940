"""Inputs are part of the contract: after a call every input holds the bytes it was passed,
unless the spec declares the mutation (kl.Tensor(mutated=True)). Judging only: the snapshot is
taken by the harness before the call (run/harness.py), compared here after it.

What is compared, and how:
- an input kladder allocated (inside a guarded buffer): the whole storage between its guards,
  byte for byte, so a write into the gaps of a strided view (the elements a sliced or
  every-other layout skips, which production's parent tensor owns) is seen as well as a
  write into its elements. Padding (kl.Tensor(valid=)) is excluded: the spec says it holds no
  data, and a kernel may use it. A broadcast input (stride 0) is one storage row: a change is
  reported at every row of the view it shows in.
- up to SNAPSHOT_COPY_BYTES of storage a point (its inputs smallest first): a copy on the
  tensor's device (a device-to-device copy costs about what the kernel's own read does); a
  change names the elements (a Pattern, as for values) and the gap bytes.
- above it (a 4 GiB point): a hash per slab of rows (16 MiB of elements each, two int64 sums
  per slab: the words, and the words weighted by their position) computed on the device, so
  a point's peak memory grows by one slab, not by a second copy of every input; a row past a
  slab (RoPE's q at its 2 GiB point: 16 rows of 128 MiB) is a slab of its own, its sums taken
  over HASH_SLAB_BYTES of words at a time (the same sums: int64 addition wraps the same in any
  grouping), so the words widened to int64 and their positions stay that size. A change names
  the rows of the slabs whose hash changed; the gaps of a strided view are not hashed. A change
  that leaves both sums of a slab as they were (constructed for it) goes unseen.
- a tensor built by `build=` that is no kl.Tensor (a page table): a copy of its values, compared
  bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.outcome import Check, Finding
from ..core.facts import InputChangedFacts
from .bitwise import bits_differ
from .pattern import Where, count, describe

SNAPSHOT_COPY_BYTES = 256 << 20
HASH_SLAB_BYTES = 16 << 20


@dataclass
class Snapshot:
    """One input as it was passed: `how` is "copy" (`data`: the payload's bytes, uint8),
    "hash" (`data`: (slabs, 2) int64 hashes, `slabs` the rows of each) or "values" (a clone)."""
    name: str
    how: str
    data: Any
    slabs: list | None = None


def _int_dtype(size: int):
    import torch
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[size]


def _ints(t):
    import torch
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    return t.view(_int_dtype(t.element_size()))


def _payload(g):
    return g.buf[g.guard:g.buf.numel() - g.guard]


def _valid_view(view, valid):
    return view[..., :valid] if valid is not None and view.dim() and valid < view.shape[-1] else view


def _nbytes(g, value) -> int:
    return _payload(g).numel() if g is not None else value.numel() * value.element_size()


def _slabs(view) -> list[tuple[int, int]]:
    if view.dim() == 0 or view.shape[0] == 0:
        return [(0, 1)] if view.dim() == 0 else []
    row_bytes = max(view[0].numel() * view.element_size(), 1)
    per = max(1, HASH_SLAB_BYTES // row_bytes)
    return [(lo, min(lo + per, view.shape[0])) for lo in range(0, view.shape[0], per)]


def _hash(t):
    """(sum of the words, sum of the words x their position from 1), int64 sums that wrap: a
    hash, not a count; taken HASH_SLAB_BYTES of int64 words at a time."""
    import torch
    words = _ints(t.contiguous()).reshape(-1)
    step = max(1, HASH_SLAB_BYTES // 8)
    total = torch.zeros(2, dtype=torch.int64, device=words.device)
    for a in range(0, words.numel(), step):
        w = words[a:a + step].to(torch.int64)
        pos = torch.arange(a + 1, a + w.numel() + 1, dtype=torch.int64, device=w.device)
        total += torch.stack([w.sum(), (w * pos).sum()])
    return total


def _hashes(view, slabs):
    import torch
    if view.dim() == 0:
        return _hash(view.reshape(1)).view(1, 2)
    return torch.stack([_hash(view[lo:hi]) for lo, hi in slabs]) if slabs else torch.zeros((0, 2), dtype=torch.int64)


def snapshot(spec, inputs, point, skip=()) -> list[Snapshot]:
    """Every input the kernel must leave as it was, before the call (taken by the harness), but
    those in `skip`. The copies of a point share SNAPSHOT_COPY_BYTES, smallest input first; the rest
    are hashed."""
    import torch
    shots, left = [], SNAPSHOT_COPY_BYTES
    given = [(n, v) for n, v in zip(spec.args, inputs.args, strict=True)
             if n not in spec.out_args and n not in spec.mutated_at(point) and n not in skip and isinstance(v, torch.Tensor)]
    for name, value in sorted(given, key=lambda nv: _nbytes(inputs.guarded.get(nv[0]), nv[1])):
        g = inputs.guarded.get(name)
        if g is None:
            shots.append(Snapshot(name, "values", value.detach().clone()))
        elif _payload(g).numel() <= left:
            left -= _payload(g).numel()
            shots.append(Snapshot(name, "copy", _payload(g).clone()))
        else:
            view = _valid_view(g.view, spec.valid_of(name, point.sizes))
            slabs = _slabs(view)
            shots.append(Snapshot(name, "hash", _hashes(view, slabs), slabs))
    order = list(spec.args)
    return sorted(shots, key=lambda s: order.index(s.name))     # findings in the args' order


def changed(spec, inputs, point, shots: list[Snapshot]) -> list[Finding]:
    """A finding per input whose bytes differ from its snapshot."""
    values = dict(zip(spec.args, inputs.args, strict=True))
    found = []
    for s in shots:
        t = values[s.name]
        if s.how == "values":
            f = _by_values(spec, s, t)
        elif s.how == "copy":
            f = _by_copy(spec, s, inputs.guarded[s.name], point)
        else:
            f = _by_hash(spec, s, inputs.guarded[s.name], point)
        if f is not None:
            found.append(f)
    return found


def _where(spec, name: str) -> Where:
    if name not in spec.all_tensors:
        return Where()
    symbols = spec.all_tensors[name].symbols
    return Where(symbols, {d: spec.dims[d].tiles for d in symbols if d in spec.dims})


def _finding(name: str, bad, where: Where, facts: dict) -> Finding | None:
    n = count(bad)
    if not n and not facts.get("gap_bytes"):
        return None
    pattern = describe(bad, where) if n else None
    return Finding(Check.INPUT_CHANGED, name, pattern=pattern, mismatched=n, total=bad.numel(), facts=InputChangedFacts(**facts))


def _by_values(spec, s: Snapshot, t) -> Finding | None:
    if t.shape != s.data.shape or t.dtype != s.data.dtype:
        return Finding(Check.INPUT_CHANGED, s.name, facts=InputChangedFacts(how="values", gap_bytes=0,
                                                                          resized=[list(s.data.shape), list(t.shape)]))
    return _finding(s.name, bits_differ(t, s.data), _where(spec, s.name), {"how": "values", "gap_bytes": 0})


def _by_copy(spec, s: Snapshot, g, point) -> Finding | None:
    import torch
    now = _payload(g)
    diff = now != s.data
    if not bool(diff.any()):
        return None
    size = g.view.element_size()
    base = g.guard // size
    then = s.data.view(_int_dtype(size)).as_strided(g.view.shape, g.view.stride(), g.view.storage_offset() - base)
    bad = _ints(g.view).contiguous() != then.contiguous()
    valid = spec.valid_of(s.name, point.sizes) if s.name in spec.all_tensors else None
    if valid is not None and bad.dim() and valid < bad.shape[-1]:
        bad[..., valid:] = False                      # padding holds no data: the kernel may write it
    covered = torch.zeros_like(now)
    covered.view(_int_dtype(size)).as_strided(g.view.shape, g.view.stride(),
                                              g.view.storage_offset() - base).fill_(-1 if size > 1 else 255)
    gap = count(diff & (covered == 0))
    return _finding(s.name, bad, _where(spec, s.name), {"how": "copy", "gap_bytes": gap})


def _by_hash(spec, s: Snapshot, g, point) -> Finding | None:
    import torch
    view = _valid_view(g.view, spec.valid_of(s.name, point.sizes))
    now = _hashes(view, s.slabs)
    differ = (now != s.data).any(1).cpu()
    if not bool(differ.any()):
        return None
    rows = view.shape[0] if view.dim() else 1
    bad = torch.zeros(rows, dtype=torch.bool)
    for i in differ.nonzero().flatten().tolist():
        lo, hi = s.slabs[i]
        bad[lo:hi] = True
    where = _where(spec, s.name)
    where = Where(where.symbols[:1], where.tiles)
    return Finding(Check.INPUT_CHANGED, s.name, pattern=describe(bad, where), mismatched=int(bad.sum()), total=rows,
                   facts=InputChangedFacts(how="hash", gap_bytes=0, slabs=int(differ.sum()), of=len(s.slabs)))


def upstream_changed(spec, upstream: dict, shots: dict) -> list[Finding]:
    """Spec.grads: a backward must leave its grad_output as it was passed (autograd may hand the
    same buffer to another consumer's backward). A finding per upstream gradient ('upstream y')
    whose values changed bit for bit, located as its output's elements."""
    from ..core.spec import upstream_name
    found = []
    for out, then in shots.items():
        now = upstream.get(out)
        if now is None or now.shape != then.shape or now.dtype != then.dtype:
            continue
        f = _finding(upstream_name(out), bits_differ(now, then), _where(spec, out),
                     {"how": "values", "gap_bytes": 0, "upstream": True})
        if f is not None:
            found.append(f)
    return found
