"""Rung 6, multi-GPU protocols: a collective's calls as production issues them, not as a unit
test does. A wrong protocol rarely gives a wrong number in a unit test; it
hangs, or completes and returns stale data, and only under the conditions below.

Each point is one run of `world` ranks (a process each):
- `queued` calls (64 by default) queued before one synchronisation, every call on new inputs
  (seeded per rank and call): a read of the call before's data is then a wrong number, not the
  same number (aiter #4812's regression test queues 64 before it synchronises);
- the message size three a round, one below, between and above the protocol's switches, in an
  order that changes from round to round (all six orders), so that consecutive calls grow and
  shrink across every switch: "two sizes always land in the same bank and can miss the bug"
  (aiter #5616);
- one rank made to lag before each of its calls (a sleep on the CPU, a busy kernel on a GPU),
  the last rank on one point and rank 0 on the other, so that a fast rank laps a slow one
  (aiter #6446: 6 of 6 runs hung with one rank forced behind, 0 of 114 on a quiet host).
Specs without a collective yield no rung-6 points. Never runs a kernel."""
from __future__ import annotations

import itertools
import math
from typing import Iterator

from ...core.notation import Mode, Needs, PointKind
from ...core.point import Point
from ...core.rungs import number
from ...core.sizes import ITEMSIZE, Budget, dtype_of, fits, human_bytes
from ...core.spec import Spec
from .common import chosen_dtypes, dtype_rows

RUNG = number("multi_gpu")
ORDERS = tuple(itertools.permutations(range(3)))     # a round's three sizes, in each of the six orders
LAG_US = {"cpu": 2000, "cuda": 200}
# With no switch above it, the largest message: the CPU budget's, or 4 MiB of float32 on a GPU
# (64 queued calls, each with its own input, output and float64 reference, on every rank).
TOP_ELEMENTS = {"cpu": 1 << 15, "cuda": 1 << 20}


def points(spec: Spec, budget: Budget) -> Iterator[Point]:
    c = spec.collective
    if c is None:
        return
    rows = dtype_rows(spec)
    configs = [()] + [tuple(cf.items()) for cf in spec.configs]
    lag_us = c.lag_us if c.lag_us is not None else LAG_US[budget.device]
    i = 0
    for world in c.worlds:
        for lag in dict.fromkeys((world - 1, 0)):
            dtypes = chosen_dtypes(spec, rows[i % len(rows)])
            fixed = fixed_dims(spec, world)
            unit = unit_bytes(spec, fixed, dict(dtypes))
            regs = regions(spec, unit, budget)
            seq = size_sequence(regs, c.queued)
            dims = {**fixed, spec.message_dim: max(seq)}
            # a CUDA-only protocol is skipped by the mode, with that reason; a big one, as a GPU point
            needs = Needs.CUDA if c.needs != Needs.CUDA and not fits(spec, dims, budget) else Needs.NOTHING
            ranks = (("world", world), ("lag", lag), ("lag_us", lag_us), ("sizes", tuple(seq)))
            yield Point(spec.name, RUNG, tuple((d, dims[d]) for d in spec.dims), dtypes,
                        _why(spec, world, lag, lag_us, regs, unit, c.queued), config=configs[i % len(configs)],
                        kind=PointKind.COLLECTIVE, needs=needs, mode=Mode.COLLECTIVE, ranks=ranks)
            i += 1


def fixed_dims(spec: Spec, world: int) -> dict[str, int]:
    """Every dim but the message's: a model width, else a tile, else its least size; the
    world dim (an all-gather's output) is the world size."""
    out = {}
    for d, dim in spec.dims.items():
        if d == spec.collective.world_dim:
            out[d] = world
        elif d != spec.message_dim:
            v = dim.widths[0] if dim.widths else dim.tiles[0] if dim.tiles else max(dim.min, 1)
            out[d] = dim.snap(v)
    return out


def unit_bytes(spec: Spec, fixed: dict[str, int], chosen: dict[str, str]) -> int:
    """Bytes of one rank's message per unit of the message dim."""
    name, t = next(iter(spec.input_args.items()))
    other = math.prod(int(s) if s.isdigit() else fixed[s] for s in t.symbols if s != spec.message_dim)
    return other * ITEMSIZE[dtype_of(spec, name, chosen)]


def regions(spec: Spec, unit: int, budget: Budget) -> list[tuple[int, int]]:
    """The message dim's ranges between the switches: [least, first switch), [first, second),
    ..., [last, twice the last]; a switch the dim's range cannot reach is left out."""
    dim = spec.dims[spec.message_dim]
    lo, hi = max(dim.min, 1), dim.max
    cuts = sorted({-(-b // unit) for b in spec.collective.switches if lo < -(-b // unit) <= hi})
    top = min(hi, 2 * cuts[-1]) if cuts else min(hi, max(lo, TOP_ELEMENTS[budget.device] * 4 // unit))
    edges = [lo] + cuts
    ends = [c - 1 for c in cuts] + [max(top, edges[-1])]
    return list(zip(edges, ends, strict=True))


def candidates(region: tuple[int, int]) -> tuple[int, ...]:
    """A region's lower edge, its geometric and its arithmetic middle (odd: a tail for any
    power-of-two tile), its upper edge: sizes an order of magnitude apart, and sizes that fill
    a protocol's slots by a half and in whole."""
    a, b = region
    inside = [min(max(round(m) | 1, a), b) for m in (math.sqrt(a * b), (a + b) / 2)]
    return (a, *inside, b)


def size_sequence(regs: list[tuple[int, int]], queued: int) -> list[int]:
    """Three sizes a round, each round in the next of the six orders and with the next of each
    region's four candidates (shifted by one every six rounds). With one switch, a round takes two sizes on one side
    (the side alternating), so a protocol that changes size within a side meets both."""
    seq: list[int] = []
    for r in range(-(-queued // 3)):
        j = (r + r // len(ORDERS)) % 4          # over 24 rounds, every order meets every candidate
        if len(regs) >= 3:
            w = r % (len(regs) - 2)
            picks = [(regs[w], j), (regs[w + 1], j), (regs[w + 2], j)]
        elif len(regs) == 2:
            two, one = (regs[0], regs[1]) if r % 2 == 0 else (regs[1], regs[0])
            picks = sorted([(two, j), (two, (j + 1) % 4), (one, j)])
        else:
            picks = [(regs[0], j), (regs[0], (j + 1) % 4), (regs[0], (j + 2) % 4)]
        three = [candidates(reg)[k] for reg, k in picks]
        seq += [three[i] for i in ORDERS[r % len(ORDERS)]]
    return seq[:queued]


def _why(spec: Spec, world: int, lag: int, lag_us: int, regs, unit: int, queued: int) -> str:
    c = spec.collective
    edges = [regs[0][0] * unit] + [a * unit for a, _ in regs[1:]]
    names = ([f"below {human_bytes(edges[1])}"] if len(regs) > 1 else ["no switch declared"]) + [
        f"{human_bytes(edges[i])} to {human_bytes(edges[i + 1])}" for i in range(1, len(regs) - 1)] + (
        [f"from {human_bytes(edges[-1])}"] if len(regs) > 1 else [])
    parts = [f"{', '.join(map(str, dict.fromkeys(candidates(reg))))} ({name})" for reg, name in zip(regs, names, strict=True)]
    return (f"{queued} calls of {c.reference} queued before one synchronisation on {world} ranks, new inputs every "
            f"call; rank {lag} waits {lag_us} us before each of its calls; {spec.message_dim} three sizes a round, "
            f"in changing order: {'; '.join(parts)}")
