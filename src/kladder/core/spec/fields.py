"""The core's fields: Dim, Tensor, Out, Size, Config, Invariant, Tolerance and the defaults
(dtypes, value kinds, layouts, tolerances); the converters every spec class normalises its
fields with, once, at construction; the names of what a point derives (gradients, upstream
gradients) and a declared write's condition at a point."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..notation import UPSTREAM_ONLY, Layout, Nonfinite, Values, Word
from ..problems import SpecError, friendly as _friendly

DTYPES = (
    "float64", "float32", "float16", "bfloat16",
    "int64", "int32", "int16", "int8", "uint8", "bool",
)
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def dtype_name(v):
    """torch.float32 -> 'float32': a spec may name a dtype either way."""
    if type(v).__name__ == "dtype" and type(v).__module__ == "torch":
        return str(v).removeprefix("torch.")
    return v


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# ---- a shape's symbols: a dim ('N'), a literal size ('64'), or a product of them ('G*K': GroupNorm's C)
PRODUCT = "*"


def symbol_dims(sym: str) -> tuple[str, ...]:
    """The dims a shape symbol reads: 'N' -> ('N',), 'G*K' -> ('G', 'K'), '64' -> ()."""
    return tuple(f for f in sym.split(PRODUCT) if not f.isdigit())


def symbol_size(sym: str, sizes: Mapping[str, int]) -> int:
    """A shape symbol's size at a point's sizes: a literal, a dim's size, or the product of its factors."""
    if PRODUCT not in sym:
        return int(sym) if sym.isdigit() else sizes[sym]
    return math.prod(int(f) if f.isdigit() else sizes[f] for f in sym.split(PRODUCT))


# ---- converters: each field normalised once, at construction (attrs' converters). A value of
# a kind they do not know is left as given, for its validator to name.
def as_tuple(v, one=str):
    """A single value of type `one` -> (v,); a list or tuple -> a tuple; anything else as given."""
    if isinstance(v, one):
        return (v,)
    return tuple(v) if isinstance(v, (list, tuple)) else v


def as_seq(v):
    """A list -> a tuple; anything else as given."""
    return tuple(v) if isinstance(v, list) else v


def as_word(words: type[Word]):
    """A converter to a closed set's member; a value outside the set (or None) stays as given."""
    def convert(v):
        return words(v) if words.has(v) else v
    return convert


def as_words(words: type[Word]):
    """`as_tuple`, then each name a member of the closed set; a tuple with one outside it stays as given."""
    def convert(v):
        v = as_tuple(v)
        ok = isinstance(v, tuple) and all(map(words.has, v))
        return tuple(map(words, v)) if ok else v
    return convert


def convert(obj, **converters) -> None:
    for name, convert in converters.items():
        object.__setattr__(obj, name, convert(getattr(obj, name)))


def _sized(dim) -> None:
    """Dim(sizes=[...]): sorted and deduplicated; min and max left at their defaults become
    the least and the largest size (a min or max given as well is validated against them)."""
    if not isinstance(dim.sizes, (list, tuple)) or not all(is_int(v) and v >= 1 for v in dim.sizes):
        return                                                   # left as given: DIM_FIELDS["sizes"] names it
    object.__setattr__(dim, "sizes", tuple(sorted(set(dim.sizes))))
    object.__setattr__(dim, "_range", (dim.min, dim.max))       # as given, for the conflict rule (_dims)
    if dim.sizes:
        object.__setattr__(dim, "min", dim.sizes[0])
        object.__setattr__(dim, "max", dim.sizes[-1])


@_friendly("kl.Dim")
@dataclass(frozen=True)
class Dim:
    """A symbolic dimension: its range, the tile(s) the kernel cuts it into, and the widths
    real models use (the sizes a tile most often fails to divide)."""

    min: int = 1
    max: int = 1 << 16
    tile: int | tuple[int, ...] | list[int] | None = None
    widths: tuple[int, ...] | list[int] = ()
    chunks: tuple[int, ...] | list[int] = ()   # chunk / top-k sizes: rung 2 puts lengths at c-1, c, c+1
    sizes: tuple[int, ...] | list[int] = ()    # the only sizes the dim takes (experts in {8, 16, 64}); () = any in range

    def __post_init__(self):
        convert(self, tile=lambda v: () if v is None else as_tuple(v, int), widths=as_seq, chunks=as_seq, sizes=as_seq)
        _sized(self)

    @property
    def tiles(self) -> tuple[int, ...]:
        return self.tile

    # ---- a dim with a set of sizes (sizes=[8, 16, 64]): every generator asks these
    def allows(self, v: int) -> bool:
        """v is a size this dim takes: within [min, max] and, with `sizes`, one of them."""
        return self.min <= v <= self.max and (not self.sizes or v in self.sizes)

    def snap(self, v: int) -> int:
        """The largest size this dim takes that is <= v (its least above it when none is): a
        generator's target size made one the dim takes, never larger than the target (so a
        size that fitted the budget still fits)."""
        v = min(self.max, max(self.min, v))
        if not self.sizes:
            return v
        below = [s for s in self.sizes if s <= v]
        return below[-1] if below else self.sizes[0]


VALUE_KINDS = tuple(v for v in Values if v not in UPSTREAM_ONLY)
DEFAULT_FLOAT_VALUES = (Values.PEAKED, Values.TIES, Values.IDENTICAL, Values.DISTINCT, Values.TINY, Values.HUGE)
LAYOUTS = tuple(Layout)
NONFINITE_POLICIES = tuple(Nonfinite)


@_friendly("kl.Tensor")
@dataclass(frozen=True)
class Tensor:
    """A tensor argument or output: shape as symbols ("M N"), and a dtype list or `like`.

    values:  the rung-2 value kinds this input admits (VALUE_KINDS); None = by dtype.
    range:   (lo, hi), both inclusive; each a number or an expression over dims with + - * // and
             integers: range=(0, "E-1") for expert ids, (1, "2*S"). Values are drawn within it at
             every rung; an integer tensor with a range also gets rung 2's id kinds ("ids").
    valid:   packed rows: only the first `valid` elements of the last dim are data (int or dim).
    layouts: the rung-3 layouts this input accepts (LAYOUTS); None = all that its rank allows.
    mutated: the kernel writes this input in place, as production means it to (an in-place
             epilogue, a cache the kernel appends to). Without it every input must hold, after
             each call, the bytes it was passed (checks/inputs.py). With it the reference must
             do the same to its own copy (it is called on copies: mutate the copy in place),
             and the kernel's buffer after the call is judged against the reference's copy
             after the reference's call, at the tolerance of the input's dtype. Only under some
             configs: a dict of the launcher's keywords, mutated={"in_place": True} (a point
             whose config holds every one of them); only at some points: a predicate of the
             point, mutated=lambda p: "x" not in dict(p.layouts) (x written only when contiguous).
             "backward": the backward writes this input's gradient into its buffer (the input is
             in Spec.grads): after the call it holds that gradient (the kernel's own `grad of x`
             bit for bit, or the reference's within the gradient's tolerance) or, where the kernel
             did not write it, its data as passed; a predicate may answer "backward" too.
             "gradient": the launcher overwrites this input with its gradient during the forward
             (liger's fused cross entropy: the gradient for an upstream gradient of 1, scaled in
             place by the backward; the input is in Spec.grads): after a forward and backward the
             buffer must hold the reference's gradient for the upstream gradient kladder passed (or
             the kernel's own `grad of x`, or its data as passed); a call of the forward alone may
             leave anything there, and no point repeats a call on it.
    grad_overwritten: on an output, with Spec.grads: the backward overwrites the upstream gradient
             it is given for this output (to save memory): after the call that buffer holds a
             gradient (the kernel's own bit for bit, or the reference's within its tolerance) or
             its values as passed. True, a dict of the launcher's keywords or a predicate, as
             for `mutated`.
    ignore:  a sentinel id among an integer input's ids that the kernel must skip (cross entropy's
             ignore_index=-100 beside targets in [0, V-1]): the input needs a range; rung 2 adds
             the id kind `ids/ignored` (ids in the range, the sentinel at about a quarter of the
             positions: the last always, the first never)."""

    shape: str
    dtype: str | tuple[str, ...] | list[str] | None = None
    like: str | None = None
    values: str | tuple[str, ...] | list[str] | None = None
    range: tuple | list | None = None
    valid: int | str | None = None
    layouts: str | tuple[str, ...] | list[str] | None = None
    mutated: bool | str | Mapping | Callable[..., Any] = False
    grad_overwritten: bool | Mapping | Callable[..., Any] = False
    ignore: int | None = None

    def __post_init__(self):
        dtypes = lambda v: tuple(map(dtype_name, v)) if isinstance(v, (list, tuple)) else as_tuple(dtype_name(v))
        convert(self, dtype=dtypes, values=as_words(Values), layouts=as_words(Layout), range=as_seq)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(self.shape.split())

    @property
    def dtypes(self) -> tuple[str, ...]:
        return () if self.dtype is None else self.dtype

    def value_kinds(self, dtype: str, nonfinite: str | None) -> tuple[str, ...]:
        """The rung-2 value kinds of this input: as declared, or by dtype."""
        if self.values is not None:
            return self.values
        if dtype in FLOAT_DTYPES:
            return DEFAULT_FLOAT_VALUES + ((Values.NONFINITE,) if nonfinite else ())
        return (Values.LENGTHS, Values.IDS) if self.range is not None and dtype != "bool" else ()

    def layout_list(self) -> tuple[str, ...]:
        """The rung-3 layouts of this input: as declared, or every one its rank allows."""
        rank = len(self.symbols)
        chosen = LAYOUTS if self.layouts is None else self.layouts
        need = {"sliced": 2, "every_other": 1, "transposed": 2, "offset": 1, "shifted": 1,
                "broadcast": 2, "channels_last": 4}
        return tuple(lay for lay in chosen if rank >= need[lay] and (lay != "channels_last" or rank == 4))


@_friendly("kl.Invariant")
@dataclass(frozen=True)
class Invariant:
    """A property the outputs must have, with or without a reference: `check(inputs, outputs)`
    (dicts name -> tensor) returns a bool or a bool tensor (True where it holds). Without
    `values` it is checked on every point of rungs 1-3; with values={"v": "ones"} kladder
    adds rung-2 points with those value kinds and checks it there."""

    name: str
    check: Callable[..., Any]
    values: Mapping[str, str] | None = None


@_friendly("kl.Size")
@dataclass(frozen=True)
class Size:
    """An argument that is a dim's size at the point, passed as a Python int to the kernel and
    to the reference: `expert_counts(ids, E)` is args={"ids": kl.Tensor("T", ...), "E": kl.Size("E")}."""

    dim: str


class Config(dict):
    """One config the launcher accepts (its keyword arguments), with what its author documents
    about its accuracy: `kl.Config({"precise": False}, tolerance={"float32": (1e-3, 1e-5)})`.
    It is the dict of its keywords (a point, a report and `kladder repro` hold only those), and
    `tolerance` (optional, as Spec.tolerance is written) replaces the spec's tolerance, for the
    dtypes it names, at every point whose call is this config (Spec.tolerance_for). A plain dict
    in `configs` is a Config without a tolerance."""

    __slots__ = ("tolerance", "_given")
    FIELDS = ("values", "tolerance")

    def __init__(self, *args, **kwargs):
        from ..problems import call_problems
        problems = call_problems("kl.Config", list(self.FIELDS), ["values"], args, kwargs)
        if problems:
            raise SpecError("", problems=problems)
        bound = {**dict(zip(self.FIELDS, args, strict=False)), **kwargs}
        given = bound["values"]
        super().__init__(given if isinstance(given, Mapping) else {})
        self.tolerance = bound.get("tolerance")
        self._given = given                  # as given: CONFIG_FIELDS names a values= that is not a dict

    def __repr__(self) -> str:
        tol = "" if self.tolerance is None else f", tolerance={self.tolerance!r}"
        return f"kl.Config({dict(self)!r}{tol})"

    def __reduce__(self):
        return (type(self), (dict(self), self.tolerance))


@_friendly("kl.Out")
@dataclass(frozen=True)
class Out(Tensor):
    """An out-argument: allocated and poisoned by kladder, written by the kernel."""


@_friendly("kl.Tolerance")
@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


# torch.testing's defaults, by output dtype. The absolute part is scaled by the reference
# row's RMS in checks/values.py, so that elements near zero are not flagged for rounding noise.
DEFAULT_TOLERANCES = {
    "float64": Tolerance(1e-7, 1e-7),
    "float32": Tolerance(1.3e-6, 1e-5),
    "float16": Tolerance(1e-3, 1e-5),
    "bfloat16": Tolerance(1.6e-2, 1e-5),
}


BACKWARD = "backward"         # kl.Tensor(mutated="backward"): the backward writes the input's gradient into it
GRADIENT = "gradient"         # kl.Tensor(mutated="gradient"): the forward overwrites the input with its gradient


def declared_at(condition, point) -> bool | str:
    """A declared write's condition at a point: True, False, "backward" or "gradient" as given; a dict
    of the launcher's keywords -> values: True where the point's call passes every one of them; a
    predicate of the point: its answer (True, "backward", "gradient", or false)."""
    if isinstance(condition, (bool, str)):
        return condition
    if isinstance(condition, Mapping):
        kwargs = point.kwargs
        return all(k in kwargs and kwargs[k] == v for k, v in condition.items())
    answer = condition(point)
    return answer if answer in (BACKWARD, GRADIENT) else bool(answer)


def grad_name(arg: str) -> str:
    """How outputs and reports name an input's gradient: 'grad of w'."""
    return f"grad of {arg}"


def upstream_name(output: str) -> str:
    """How points name an output's upstream gradient (the backward's grad_output): 'upstream y'."""
    return f"upstream {output}"
