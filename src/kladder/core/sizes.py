"""Sizes of a spec's tensors at a point (shapes, dtypes, bytes) and the budgets that bound
them. Shared by the generators (which must know what a point costs) and the materialiser
(which allocates it)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .spec import Spec, symbol_size

ITEMSIZE = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}


CLIFFS = ((31, "bytes"), (32, "bytes"), (31, "elements"), (32, "elements"))   # where 32-bit offsets and indices wrap


def output_cliffs(shape, dtype: str | None) -> list[list]:
    """The size cliffs a tensor of `shape` and `dtype` crosses: [bits, unit, element] for each
    2^31 / 2^32 cliff in bytes and in elements that falls inside it, `element` the first
    element (flat, row-major) at or past it. Empty for a tensor below every cliff."""
    if not shape or dtype not in ITEMSIZE:
        return []
    n, size = math.prod(shape), ITEMSIZE[dtype]
    found = []
    for bits, unit in CLIFFS:
        first = -(-(1 << bits) // size) if unit == "bytes" else 1 << bits
        if first < n:
            found.append([bits, unit, first])
    return found


def shape_of(spec: Spec, name: str, sizes: dict[str, int]) -> tuple[int, ...]:
    """A tensor's shape at a point's sizes: each symbol a literal, a dim, or a product of them ('G*K')."""
    return tuple(symbol_size(s, sizes) for s in spec.all_tensors[name].symbols)


def dtype_of(spec: Spec, name: str, chosen: dict[str, str]) -> str:
    """The dtype of a tensor: its chosen dtype, its only dtype, or its `like` model's."""
    t = spec.all_tensors[name]
    while t.like is not None:
        name, t = t.like, spec.all_tensors[t.like]
    return chosen.get(name, t.dtypes[0])


def nbytes_of(spec: Spec, name: str, sizes: dict[str, int], chosen: dict[str, str]) -> int:
    return math.prod(shape_of(spec, name, sizes)) * ITEMSIZE[dtype_of(spec, name, chosen)]


def numel_of(spec: Spec, name: str, sizes: dict[str, int]) -> int:
    return math.prod(shape_of(spec, name, sizes))


def as_rows(t):
    """The tensor as (rows, last dim): a 0-d tensor is one row of one element, a 1-d one row;
    an empty one keeps its last dim (at least 1). Shared by the fills and the value checks."""
    n = t.shape[-1] if t.dim() else 1
    return t.reshape(-1, n) if t.numel() else t.reshape(0, max(n, 1))


def total_bytes(spec: Spec, sizes: dict[str, int], chosen: dict[str, str]) -> int:
    return sum(nbytes_of(spec, n, sizes, chosen) for n in spec.all_tensors)


def human_bytes(n: int) -> str:
    """Two decimals in the largest unit the value reaches once rounded: 2^30 - 1 bytes is
    "1.00 GiB", not "1024.00 MiB" (bytes stay exact below 1 KiB)."""
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div or (div > 1 << 10 and round(n / div, 2) >= 1):
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------------------- budgets
@dataclass(frozen=True)
class Budget:
    """The largest point a device runs as a small point, and on the CPU what a point may cost
    in time. Triton's interpreter runs a kernel's grid one program instance at a time, in
    Python: its cost is the number of programs, nearly whatever their blocks hold (measured
    below), and kernels launch a grid over their output's rows. So the CPU budget is a time
    budget counted in output rows (programs), plus a cap on elements (the float64 references
    and numpy's work per block).

    `pair_rows`: a point with more output rows than this is too dear to pair with every edge
    of the other dims: pairwise covering keeps its edge value, once, with every other dim at its
    cheapest (gaps/shapes.py), instead of once per partner."""

    max_elements: int
    max_rows: int
    device: str
    pair_rows: int | None = None

    def fits(self, elements: int) -> bool:
        return elements <= self.max_elements

    def text(self) -> str:
        cost = f" (about {self.max_rows * PROGRAM_S:.0f} s of interpreter time)" if self.device == "cpu" else ""
        return f"{self.max_elements:,} elements per tensor, {self.max_rows:,} rows per output{cost}"


# The interpreter's cost per program instance, measured on the 2-core CI machine (Triton 3.9,
# numpy 2.4, under a load of ~3.5): a row kernel costs 5.0 ms a program at 64 columns, 5.3 ms
# at 1,024 and 8 ms at 16,384, so a grid's rows set the cost, not its elements (rmsnorm's
# four rung-1 points at M = 4096 took 68 of its climb's 73 s).
PROGRAM_S = 5e-3
# A CPU point costs at most ~20 s (4096 programs); pairs are combined below ~2.5 s (512).
CPU_BUDGET = Budget(1 << 16, 4096, "cpu", pair_rows=512)
GPU_BUDGET = Budget(1 << 27, 1 << 31, "cuda")
# Rungs 2-4 move values, layouts and modes, not sizes: thousands of keys make a softmax peak,
# 2^27-element tensors (rung 1's GPU territory) only make each point slower (measured on the
# H200: a decode attention's 82 rung-2 points took over 7 minutes at 2^27 elements).
MODERATE_ELEMENTS = 1 << 22


def budget_for(device: str) -> Budget:
    return CPU_BUDGET if device == "cpu" else GPU_BUDGET


def moderate(budget: Budget) -> Budget:
    """The budget of rungs 2-4: rung 1's, capped at MODERATE_ELEMENTS per tensor."""
    return Budget(min(budget.max_elements, MODERATE_ELEMENTS), min(budget.max_rows, 1 << 16), budget.device,
                  budget.pair_rows)


def output_rows(spec: Spec, sizes: dict[str, int]) -> int:
    """The most rows (all dims but the last) of any output: the programs a kernel's grid has."""
    def rows(name: str) -> int:
        shape = shape_of(spec, name, sizes)
        return math.prod(shape[:-1]) if shape else 1
    return max((rows(n) for n in spec.outputs), default=1)


def fits(spec: Spec, sizes: dict[str, int], budget: Budget) -> bool:
    """Every tensor within the budget's elements, every output within its rows."""
    return (all(budget.fits(numel_of(spec, n, sizes)) for n in spec.all_tensors)
            and output_rows(spec, sizes) <= budget.max_rows)


def repetition(budget: Budget) -> Budget:
    """The budget of rung 5's points. On the GPU rungs 2-4's: wide rows and many programs are
    where a race shows (a split reduction wrong in 0.74% of rows at 64 x 65536, none at 8 x 2^20).
    On the CPU the Triton interpreter runs one program after another, in Python: no two programs
    ever overlap, so a wide grid shows nothing there and costs 4-16 ms a program per call
    (measured on the loaded 2-core CI box), while rung 5 wants many calls: 2 rows and 8K
    elements a tensor."""
    if budget.device == "cpu":
        return Budget(min(budget.max_elements, 1 << 13), min(budget.max_rows, 2), budget.device)
    return moderate(budget)


# ---------------------------------------------------------------------------- calls (rung 5)
# rung 5's call budgets live with the named time budgets (budgets.py: commit, release)
from .budgets import CALLS_CEILING_S, CallBudget, call_budget  # noqa: E402,F401


def cheap(spec: Spec, sizes: dict[str, int], budget: Budget) -> bool:
    """Fits, and cheap enough to pair with the other dims' edges (see Budget.pair_rows)."""
    return fits(spec, sizes, budget) and (budget.pair_rows is None or output_rows(spec, sizes) <= budget.pair_rows)


def is_big(spec: Spec, sizes: dict[str, int]) -> bool:
    """A point past every small-point budget (a tensor over GPU_BUDGET's elements): judged on
    sampled rows where rows are declared, a GPU point on the CPU. It follows from the sizes
    alone, so a hand-written or hand-edited point is judged exactly as the climb's."""
    return not fits(spec, sizes, GPU_BUDGET)


# ---------------------------------------------------------------------------- measured peaks
# A point is measured when its declared tensors hold at least this many bytes: below it a worker's
# own first-call costs (imports, caches, a library's workspace) would pass for the point's own.
MEASURE_MIN_BYTES = 16 << 20
KERNEL_STAGES = ("inputs", "kernel")           # what runs on the device whatever happens to the reference
REFERENCE_STAGES = ("reference", "peers", "checks")


@dataclass(frozen=True)
class Peak:
    """The memory one measured point took, stage by stage (run/sampling.PeakMemory: the kernel's
    inputs and calls, the float64 reference, the honest peer, the checks), over the elements of its
    tensors: scaled by a later point's elements, what that point will take. One small point a
    spec, measured as the climb runs it, reused for every point after it."""
    point: str                                  # the measured point's id
    elements: int
    host: dict[str, int]                        # stage -> bytes on the host
    device: dict[str, int]                      # stage -> bytes on the device (CUDA)

    def scaled(self, elements: int, stages: tuple[str, ...], where: str = "device") -> int:
        """The most any of `stages` took, scaled to `elements`."""
        took = self.device if where == "device" else self.host
        return int(max((took.get(s, 0) for s in stages), default=0) * elements / max(self.elements, 1))

    @property
    def bytes(self) -> int:
        """The measured point's own peak, wherever it was."""
        return max([*self.host.values(), *self.device.values(), 0])


def elements_of(spec: Spec, sizes: dict[str, int]) -> int:
    """Every element of a point's declared tensors (inputs, outputs, gradients)."""
    return sum(numel_of(spec, n, sizes) for n in spec.all_tensors)


def peak_of(spec: Spec, point, stages: dict | None) -> Peak | None:
    """A Peak from a worker's measurement of `point` (PeakMemory.end), or None where the point is too
    small to stand for the others (MEASURE_MIN_BYTES) or nothing was measured."""
    if not stages or total_bytes(spec, point.sizes, point.dtype_of) < MEASURE_MIN_BYTES:
        return None
    host = {s: int(v[0] or 0) for s, v in stages.items()}
    device = {s: int(v[1]) for s, v in stages.items() if v[1] is not None}
    return Peak(point.id, elements_of(spec, point.sizes), host, device)


def host_need(peak: Peak, spec: Spec, sizes: dict[str, int], device: str, free_bytes: int | None) -> int:
    """What a point will take of the host's memory, from a measured peak: on the CPU all of it; on
    CUDA the reference's and the peer's part when the device cannot hold them beside the kernel's
    (the harness then runs them on the host, in float64: run/harness.reference_device)."""
    n = elements_of(spec, sizes)
    if device != "cuda":
        return peak.scaled(n, KERNEL_STAGES + REFERENCE_STAGES, "host")
    kernel, reference = peak.scaled(n, KERNEL_STAGES), peak.scaled(n, REFERENCE_STAGES)
    if free_bytes is not None and kernel + reference > free_bytes:
        return reference + peak.scaled(n, REFERENCE_STAGES, "host")
    return peak.scaled(n, REFERENCE_STAGES, "host")
