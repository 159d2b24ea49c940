"""What a kernel's author knows: argument shapes as symbols, dtypes, dim ranges and tiles,
the widths real models use, accepted configs, production shapes, tolerances.

A Spec never holds a failing point. Every field is normalised once, at construction (a str
or a list becomes a tuple, a torch dtype its name), then validated: each field by its row of a
table (SPEC_FIELDS, TENSOR_FIELDS, ...), then the rules that relate fields. Every problem is
collected, and one SpecError lists them all, each naming the field, what was given and the fix.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .notation import UPSTREAM_ONLY, EnvSet, ImportName, Layout, Needs, Nonfinite, Values, Word
from .notation import Toolchain as ToolchainKey   # the `when` keys torch, triton, ...; kl.Toolchain is the rung-7 part below
from .problems import Problem, SpecError, friendly as _friendly, mean as _mean, shown as _shown, where_text  # noqa: F401

DTYPES = (
    "float64", "float32", "float16", "bfloat16",
    "int64", "int32", "int16", "int8", "uint8", "bool",
)
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def _dtype_name(v):
    """torch.float32 -> 'float32': a spec may name a dtype either way."""
    if type(v).__name__ == "dtype" and type(v).__module__ == "torch":
        return str(v).removeprefix("torch.")
    return v


# ---- converters: each field normalised once, at construction (attrs' converters). A value of
# a kind they do not know is left as given, for its validator to name.
def _tuple(v, one=str):
    """A single value of type `one` -> (v,); a list or tuple -> a tuple; anything else as given."""
    if isinstance(v, one):
        return (v,)
    return tuple(v) if isinstance(v, (list, tuple)) else v


def _seq(v):
    """A list -> a tuple; anything else as given."""
    return tuple(v) if isinstance(v, list) else v


def _word(words: type[Word]):
    """A converter to a closed set's member; a value outside the set (or None) stays as given."""
    def convert(v):
        return words(v) if words.has(v) else v
    return convert


def _words(words: type[Word]):
    """`_tuple`, then each name a member of the closed set; a tuple with one outside it stays as given."""
    def convert(v):
        v = _tuple(v)
        ok = isinstance(v, tuple) and all(map(words.has, v))
        return tuple(map(words, v)) if ok else v
    return convert


def _convert(obj, **converters) -> None:
    for name, convert in converters.items():
        object.__setattr__(obj, name, convert(getattr(obj, name)))


def _sized(dim) -> None:
    """Dim(sizes=[...]): sorted and deduplicated; min and max left at their defaults become
    the least and the largest size (a min or max given as well is validated against them)."""
    if not isinstance(dim.sizes, (list, tuple)) or not all(_int(v) and v >= 1 for v in dim.sizes):
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
        _convert(self, tile=lambda v: () if v is None else _tuple(v, int), widths=_seq, chunks=_seq, sizes=_seq)
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
    grad_overwritten: on an output, with Spec.grads: the backward overwrites the upstream gradient
             it is given for this output (to save memory): after the call that buffer holds a
             gradient (the kernel's own bit for bit, or the reference's within its tolerance) or
             its values as passed. True, a dict of the launcher's keywords or a predicate, as
             for `mutated`."""

    shape: str
    dtype: str | tuple[str, ...] | list[str] | None = None
    like: str | None = None
    values: str | tuple[str, ...] | list[str] | None = None
    range: tuple | list | None = None
    valid: int | str | None = None
    layouts: str | tuple[str, ...] | list[str] | None = None
    mutated: bool | str | Mapping | Callable[..., Any] = False
    grad_overwritten: bool | Mapping | Callable[..., Any] = False

    def __post_init__(self):
        dtypes = lambda v: tuple(map(_dtype_name, v)) if isinstance(v, (list, tuple)) else _tuple(_dtype_name(v))
        _convert(self, dtype=dtypes, values=_words(Values), layouts=_words(Layout), range=_seq)

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


@_friendly("kl.Expect")
@dataclass(frozen=True)
class Expect:
    """A kernel that must run (rung 7's dispatch check). `kernel` is a glob (fnmatch, case
    sensitive) over the names of what a call ran: the Triton kernels it launched, the GPU
    kernels the profiler records on CUDA, the Python functions it called. `when` says where it
    applies (None: every rung-7 point), each key -> a value or a list of values:
    - a dim: {"S": 1}; rung 7 puts a point at every shape it names, contiguous and not. A gate
      over many sizes is a predicate: a range ({"N": range(1, 257)}: N <= 256; range(64, 8193, 64):
      the multiples of 64 up to 8192) or a callable size -> bool ({"N": lambda n: n % 16 == 0});
      rung 7 then puts points at its edges only (each size where it holds beside one where it does
      not, both sizes the dim takes: the least and largest edges of a periodic one), never at
      every size; a point just outside is judged by the expectations that apply there;
    - a config key or launcher keyword: {"precise": True}; a call that leaves the keyword at the
      launcher's default matches its default;
    - an environment variable as "$NAME": {"$MYLIB_FAST": "1"} (None: unset), matched against the
      point's own environment; rung 7 runs a point with the variable set that way;
    - the toolchain, with a version specifier: {"torch": ">=2.6"}, "triton", "cuda", or the device's
      "capability" (">=9.0"), read from the environment fingerprint where the point runs: where
      one does not hold, the expectation does not apply there, and the point's note says so.
    `launch` holds the constexpr and launch-option values that launch must have (the tuned
    config). `label` is what a report calls it: "the decode kernel", "the tuned config".
    `runs=False`: what `kernel` names must NOT run where `when` applies; `kernel="*"` with
    runs=False is a launcher documented to refuse there (a shape, a config): a call that raises
    (an exception of `raises`, a class or a tuple of them; any exception when None) passes at
    every rung, with a note; at rung 7 a call that returns having run what `kernel` names (with
    "*", any call that returns) fails, its values not judged (the reference need not take it)."""

    kernel: str
    when: Mapping[str, Any] | None = None
    launch: Mapping[str, Any] | None = None
    label: str = ""
    runs: bool = True
    raises: Any = None

    def refuses(self, error: BaseException) -> bool:
        """A runs=False expectation's launcher refused with `error`: one of `raises` (any Exception when None)."""
        return not self.runs and isinstance(error, self.raises or Exception)


BOOLS = (False, True)


# ---- a `when` over a dim may be a predicate: a range of sizes or a callable size -> bool ----
EDGE_SCAN = 1 << 17       # a predicate is asked at every size of a dim up to this many; past it near powers of two, bisected
EDGES_KEPT = 4            # a predicate with more edges (multiples of 64): its first and its last this many


def is_predicate(v) -> bool:
    """A `when` value that is a set of sizes: a range, or a callable size -> bool."""
    return isinstance(v, range) or (callable(v) and not isinstance(v, type))


def when_holds(want, have) -> bool:
    """Whether a `when` value holds for what a point has: a predicate's answer, else equal to one
    of the values listed (a bool only equals a bool: True is not the 1 of a block size)."""
    if isinstance(want, range):
        return _int(have) and have in want
    if is_predicate(want):
        return bool(want(have))
    listed = want if isinstance(want, (list, tuple)) else [want]
    return any(have == w and isinstance(have, bool) == isinstance(w, bool) for w in listed)


class PredicateError(Exception):
    """A predicate in a `when` raised at a size: (size, its exception)."""


def predicate_edges(dim: Dim, pred) -> tuple[int, ...]:
    """The sizes rung 7 tries for a predicate over a dim: both sides of every edge (a size where
    it holds beside the next size the dim takes where it does not), and the dim's least and largest
    size where it holds there; of a predicate with more than 2 * EDGES_KEPT edges (multiples), the
    first and the last EDGES_KEPT. () where it holds at no size the dim takes."""
    try:
        return _edges(dim, pred)
    except TypeError as e:                      # an unhashable callable: asked without the cache
        if "unhashable" not in str(e):
            raise
        return _edges.__wrapped__(dim, pred)


def _ask(pred, size: int) -> bool:
    try:
        return size in pred if isinstance(pred, range) else bool(pred(size))
    except Exception as e:
        raise PredicateError(size, e) from e


@functools.lru_cache(maxsize=256)
def _edges(dim: Dim, pred) -> tuple[int, ...]:
    if dim.sizes or dim.max - dim.min <= EDGE_SCAN:
        sizes = dim.sizes or range(dim.min, dim.max + 1)
    else:
        near = {(1 << k) + d for k in range(64) for d in (-1, 0, 1)}
        sizes = sorted({*range(dim.min, dim.min + EDGE_SCAN), *(s for s in near if dim.min <= s <= dim.max), dim.max})
    edges, prev, before = [], None, False
    for s in sizes:
        now = _ask(pred, s)
        if prev is None and now:
            edges.append((s,))                  # the dim's least size: nothing below it to be outside
        elif prev is not None and now != before:
            lo, hi = prev, s
            while not dim.sizes and hi - lo > 1:   # sampled past the scan: bisect to the edge
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _ask(pred, mid) == before else (lo, mid)
            edges.append((lo, hi))
        prev, before = s, now
    if prev is not None and before:
        edges.append((prev,))                   # the dim's largest size
    if not edges:
        return ()
    if len(edges) > 2 * EDGES_KEPT:
        edges = edges[:EDGES_KEPT] + edges[-EDGES_KEPT:]
    return tuple(sorted({s for e in edges for s in e}))


def when_sizes(dim: Dim, want) -> list:
    """The sizes of a dim rung 7 puts points at for a `when` value: a predicate's edges, else the
    sizes listed."""
    if is_predicate(want):
        return list(predicate_edges(dim, want))
    return list(want) if isinstance(want, (list, tuple)) else [want]


def when_text(want):
    """A `when` value as facts hold it (JSON): a predicate as its text ('range(1, 257)', the
    callable's name), lists as lists."""
    if isinstance(want, range):
        return repr(want)
    if is_predicate(want):
        return f"a predicate ({getattr(want, '__qualname__', type(want).__name__)})"
    return list(want) if isinstance(want, tuple) else want


@_friendly("kl.Flag")
@dataclass(frozen=True)
class Flag:
    """A flag that must change the code (rung 7): a keyword the launcher takes (`name`), or an
    environment variable the kernel's library reads (`env`), and the values to compare.
    kladder runs the kernel once per value and fails a flag whose values all launch the same
    code (on CUDA the compiled binaries; under Triton's interpreter the kernel's source and the
    constexprs it reads). A variable's value None means unset for that run. `set` says when the
    program sets a variable: "at_start" (in the environment the process starts with) or
    "after_import" (a serving launcher sets it from its config after importing the library):
    rung 7 then runs it both ways, at start and after the kernel's module was imported and the
    kernel called once, and each must change the code and dispatch as the spec's `expect` says."""

    name: str | None = None
    env: str | None = None
    values: tuple | list = BOOLS
    set: str = EnvSet.AT_START

    def __post_init__(self):
        if self.env is not None and self.values is BOOLS:
            object.__setattr__(self, "values", ("0", "1"))     # the default for a variable: an environment holds strings
        _convert(self, values=_seq, set=_word(EnvSet))

    def before(self, value):
        """What the variable holds when the process starts, for a run that sets `value` after
        import: the first of the values that is not `value`."""
        return next(v for v in self.values if v != value)

    @property
    def key(self) -> str:
        """How points and reports name it: the keyword, or $VAR for an environment variable."""
        return self.name if self.name is not None else f"${self.env}"


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
        from .problems import call_problems
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


@_friendly("kl.Calls")
@dataclass(frozen=True)
class Calls:
    """How the model calls the kernel, for a launcher with state (a workspace, a ring of slots,
    counters, a cache of recent results): `pattern` is one step of the model, each letter an
    input set in the order the model passes them ("AABB": twice on the same logits, then twice
    on new ones; "A": new inputs every call); `fresh=True`: every step brings new input sets
    (False: every step the same ones); `count`: how many calls a run of the model makes. Rung 5
    drives a stream of that many calls in that pattern (within its time budget, `seconds` to
    widen it), each judged against the reference of its own inputs."""

    pattern: str = "A"
    fresh: bool = True
    count: int = 10_000
    seconds: float | None = None

    @property
    def letters(self) -> str:
        """The pattern's input sets in order of first use: "AABB" -> "AB"."""
        return "".join(dict.fromkeys(self.pattern))


@_friendly("kl.Out")
@dataclass(frozen=True)
class Out(Tensor):
    """An out-argument: allocated and poisoned by kladder, written by the kernel."""


COLLECTIVE_REFERENCES = {"all_reduce": ("sum", "max", "min", "product"), "all_gather": ("",)}


@_friendly("kl.Collective")
@dataclass(frozen=True)
class Collective:
    """A kernel that runs across ranks, one process each (rung 6): a custom all-reduce, an
    all-gather, a peer-to-peer exchange. The kernel is called `kernel(comm, *args)` on every
    rank, where `comm` is what `setup(group, device)` returned (the library's communicator,
    built once per rank), or the torch.distributed group when there is no setup. Its outputs
    must equal the torch.distributed collective named by `reference` (gloo on the CPU, NCCL on
    GPUs) on float64 copies of every rank's inputs.

    world:      the world sizes to run (ranks).
    switches:   the bytes of one rank's message where the protocol changes (a one-shot ->
                two-shot switch, the end of a registered buffer): each round of calls takes
                three sizes, below, between and above them.
    dim:        the dim that sets the message size (default: the input's last dim).
    queued:     calls queued before one synchronisation, each on new inputs.
    needs:      "cuda" when the protocol runs only on CUDA ranks.
    share_device: on fewer GPUs than ranks, ranks may share a GPU (CUDA IPC between processes).
    world_dim:  a dim that is the world size (an all-gather's output "W N").
    lag_us:     how long the lagging rank waits before each call (default 2000 on the CPU,
                200 on CUDA, as a busy kernel).
    watchdog_s: no rank making progress for this long is a hang (default 10 on the CPU; 20 on CUDA,
                counted once every call is queued)."""

    world: int | tuple[int, ...] | list[int] = 2
    switches: tuple[int, ...] | list[int] = ()
    dim: str | None = None
    reference: str = "all_reduce"
    op: str = "sum"
    queued: int = 64
    setup: Callable[..., Any] | None = None
    needs: Needs = Needs.NOTHING
    share_device: bool = False
    world_dim: str | None = None
    lag_us: int | None = None
    watchdog_s: float | None = None

    def __post_init__(self):
        _convert(self, world=lambda v: _tuple(v, int), switches=_seq, needs=_word(Needs))

    @property
    def worlds(self) -> tuple[int, ...]:
        return self.world


# ---- the parts: what one rung needs, apart from the core every kernel has. Each is optional
# (Spec(..., repetition=None) is the part's defaults), validated with the spec (its table in
# PARTS) and reported in the spec's one SpecError at its path (Spec('x').repetition.calls).

@_friendly("kl.Repetition")
@dataclass(frozen=True, kw_only=True)
class Repetition:
    """Rung 5 (repetition): what repeated calls must show.

    deterministic: the same inputs give the same bits on every call (no float atomics, no order
                   that depends on timing); without it a difference within the tolerance is a
                   warning (nondeterminism), beyond it a failure.
    calls:         a kl.Calls(pattern="AABB", fresh=True, count=10000): how the model calls a
                   launcher with state; rung 5 drives a stream of distinct inputs so."""

    deterministic: bool = False
    calls: Any = None


@_friendly("kl.Toolchain")
@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """Rung 7 (toolchain): what the build and the environment must do.

    expect:  kernels that must run: name globs or kl.Expect(kernel, when=, launch=, label=).
    flags:   kl.Flag(name) / kl.Flag(env=...) that must change the code.
    imports: "pkg.mod:name" that downstream code imports: must resolve to what is tested."""

    expect: tuple | list = ()
    flags: tuple | list = ()
    imports: tuple | list = ()

    def __post_init__(self):
        expect = lambda v: tuple(Expect(e) if isinstance(e, str) else e for e in v) if isinstance(v, (list, tuple)) else v
        _convert(self, expect=expect, flags=_seq, imports=_seq)


@_friendly("kl.InModel")
@dataclass(frozen=True, kw_only=True)
class InModel:
    """Rung 8 (in a model): the kernel inside kladder's small model, or an adapter's.

    slot:          a slot of kladder's model ("rmsnorm", or ("rmsnorm", fn) when the slot takes
                   another callable than `kernel`), or a kladder.model.Adapter.
    tolerance:     the largest exact-match drop that passes.
    nll_tolerance: the largest relative rise of the answers' NLL that passes (correct kernels: +-0.6%)."""

    slot: Any = None
    tolerance: float = 0.02
    nll_tolerance: float = 0.03


@_friendly("kl.Modes")
@dataclass(frozen=True, kw_only=True)
class Modes:
    """Rung 4 (execution modes): how production runs the kernel.

    graphs: production runs the kernel captured in CUDA graphs. True (claimed): a kernel that
            cannot be captured fails; False (not claimed): a graph point whose capture fails is
            skipped with a note; None (not said): a failed capture is a warning. A capture that
            replays wrong fails whatever it says."""

    graphs: bool | None = None


# Spec's field -> its part's class (the table of its fields is PARTS, with the validation).
PART_CLASSES = {"repetition": Repetition, "toolchain": Toolchain, "model": InModel, "modes": Modes}

# The flat fields the parts replaced: a Spec given one is told where it went (problems.friendly).
MOVED = {
    "deterministic": ("repetition", "kl.Repetition", "deterministic", "True"),
    "calls": ("repetition", "kl.Repetition", "calls", "kl.Calls(pattern='AABB')"),
    "expect": ("toolchain", "kl.Toolchain", "expect", "['*decode*']"),
    "flags": ("toolchain", "kl.Toolchain", "flags", "[kl.Flag('USE_TMA')]"),
    "imports": ("toolchain", "kl.Toolchain", "imports", "['mylib.ops:rmsnorm']"),
    "slot": ("model", "kl.InModel", "slot", "'rmsnorm'"),
    "model_tolerance": ("model", "kl.InModel", "tolerance", "0.02"),
    "model_nll_tolerance": ("model", "kl.InModel", "nll_tolerance", "0.03"),
    "graphs": ("modes", "kl.Modes", "graphs", "True"),
}


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


@_friendly("kl.Spec", moved=MOVED)
@dataclass(frozen=True, eq=False)
class Spec:
    name: str
    kernel: Callable[..., Any]
    reference: Callable[..., Any]
    args: Mapping[str, Any]
    dims: Mapping[str, Dim]
    returns: Tensor | Mapping[str, Tensor] | None = None
    configs: tuple[dict, ...] | list[dict] = ()
    production: tuple[dict, ...] | list[dict] = ()
    tuned: tuple[dict, ...] | list[dict] = ()
    tolerance: Any = None
    rows: str | tuple[str, ...] | list[str] | None = None
    build: Callable[..., Any] | None = None
    reference_dtype: str = "float64"
    timeout_s: float | None = None
    nonfinite: str | None = None          # NaN/Inf policy: None, "propagate", "ignore", "raise"
    invariants: tuple | list = ()         # kl.Invariant(...)
    collective: Any = None                # rung 6: a kl.Collective; the kernel then runs on every rank, and `reference` is None
    modes: Any = None                     # rung 4: kl.Modes(graphs=); None = its defaults
    repetition: Any = None                # rung 5: kl.Repetition(deterministic=, calls=); None = its defaults
    toolchain: Any = None                 # rung 7: kl.Toolchain(expect=, flags=, imports=); None = its defaults
    model: Any = None                     # rung 8: kl.InModel(slot=, tolerance=, nll_tolerance=); None = its defaults
    grads: str | tuple[str, ...] | list[str] = ()   # the inputs whose gradients the kernel computes (its launcher is
                                          # differentiable: a torch.autograd.Function); each point then runs forward
                                          # and backward, and judges every listed input's gradient ("grad of w")
                                          # against the float64 reference's autograd

    def __post_init__(self):
        _convert(self, configs=_seq, production=_seq, tuned=_seq, rows=_tuple, invariants=_seq,
                 nonfinite=_word(Nonfinite), grads=_tuple)
        _convert(self, **{f: (lambda v, part=part: part() if v is None else v) for f, part in PART_CLASSES.items()})
        validate(self)
        from .chain import Chain
        if isinstance(self.kernel, Chain):       # chains are called positionally: give them the names
            object.__setattr__(self, "kernel", self.kernel.bound(self.args))
        if isinstance(self.reference, Chain):
            object.__setattr__(self, "reference", self.reference.bound(n for n in self.args if n not in self.out_args))

    def derive(self, **changes) -> Spec:
        """This spec with `changes` (any of Spec's keywords, parts included), validated as a new
        spec is: one base spec, its variants derived from it, e.g.
        `base.derive(name="rmsnorm_graphs", modes=kl.Modes(graphs=True))`."""
        import dataclasses
        return dataclasses.replace(self, **changes)

    def slot_target(self) -> tuple[Any, Callable]:
        """(slot name or adapter, the callable that goes into it)."""
        slot = self.model.slot
        if isinstance(slot, tuple):
            return slot[0], slot[1]
        return slot, self.kernel

    def range_of(self, name: str, sizes: dict[str, int]) -> tuple | None:
        r = self.all_tensors[name].range
        if r is None:
            return None
        from .dimexpr import evaluate
        return tuple(evaluate(v, sizes) if isinstance(v, str) else v for v in r)

    def valid_of(self, name: str, sizes: dict[str, int]) -> int | None:
        v = self.all_tensors[name].valid
        return sizes[v] if isinstance(v, str) else v

    @property
    def expectations(self) -> tuple[Expect, ...]:
        return self.toolchain.expect

    @property
    def when_variables(self) -> tuple[str, ...]:
        """The environment variables the expectations' `when`s name ("$NAME" keys), without the $."""
        return tuple(sorted({k[1:] for e in self.expectations for k in (e.when or {}) if k.startswith("$")}))

    @property
    def config_keys(self) -> set[str]:
        return {k for c in self.configs for k in c}

    # ---- derived views, used by generators and the materialiser ----
    @property
    def tensor_args(self) -> dict[str, Tensor]:
        return {k: v for k, v in self.args.items() if isinstance(v, Tensor)}

    @property
    def out_args(self) -> dict[str, Out]:
        return {k: v for k, v in self.args.items() if isinstance(v, Out)}

    @property
    def input_args(self) -> dict[str, Tensor]:
        return {k: v for k, v in self.tensor_args.items() if not isinstance(v, Out)}

    @property
    def mutated_args(self) -> dict[str, Tensor]:
        """Inputs the kernel may write in place by design at some point (kl.Tensor(mutated=...))."""
        return {k: v for k, v in self.input_args.items() if v.mutated is not False}

    def mutated_at(self, point) -> tuple[str, ...]:
        """Inputs the forward writes in place at this point (mutated=True, or its condition holds)."""
        return tuple(n for n, t in self.input_args.items() if declared_at(t.mutated, point) is True)

    def written_in_backward(self, point) -> tuple[str, ...]:
        """Inputs whose buffer the backward may write its gradient into at this point (mutated='backward')."""
        return tuple(n for n, t in self.input_args.items() if declared_at(t.mutated, point) == BACKWARD)

    def overwritten_at(self, point) -> tuple[str, ...]:
        """Outputs whose upstream gradient the backward may overwrite at this point (grad_overwritten=)."""
        return tuple(n for n, t in self.outputs.items() if self.grads and declared_at(t.grad_overwritten, point) is True)

    def declared_writes(self, point) -> list[str]:
        """Every write the spec declares at this point, as findings name the buffers: inputs,
        then the upstream gradients ('upstream y') the backward overwrites."""
        return [*self.mutated_at(point), *self.written_in_backward(point),
                *(upstream_name(n) for n in self.overwritten_at(point))]

    @property
    def returned(self) -> dict[str, Tensor]:
        if self.returns is None:
            return {}
        if isinstance(self.returns, Tensor):
            return {"out": self.returns}
        return dict(self.returns)

    @property
    def outputs(self) -> dict[str, Tensor]:
        """Every output, in the order the reference returns them: Out args, then returns."""
        return {**self.out_args, **self.returned}

    @property
    def all_tensors(self) -> dict[str, Tensor]:
        return {**self.tensor_args, **self.returned, **self.grad_outputs}

    # ---- gradients (Spec.grads): each listed input's gradient is one more output ----
    @property
    def grad_outputs(self) -> dict[str, Tensor]:
        """'grad of w' -> a tensor of w's shape and dtype, for each input in `grads`."""
        if not isinstance(self.grads, tuple) or not isinstance(self.args, Mapping):
            return {}
        return {grad_name(n): Tensor(self.args[n].shape, like=n) for n in self.grads if isinstance(self.args.get(n), Tensor)}

    @property
    def upstream(self) -> dict[str, str]:
        """The upstream gradient of each output, by the name points give it ('upstream y' -> 'y'):
        an input of the backward like any other (rung 2 chooses its values, rung 3 its layout)."""
        return {upstream_name(n): n for n in self.outputs} if self.grads else {}

    @property
    def row_dims(self) -> tuple[str, ...]:
        return () if self.rows is None else self.rows

    @property
    def message_dim(self) -> str | None:
        """Rung 6: the dim that sets a collective's message size (declared, or the input's last)."""
        c = self.collective
        if c is None:
            return None
        if c.dim is not None:
            return c.dim
        symbols = [s for s in next(iter(self.input_args.values())).symbols if s in self.dims]
        return symbols[-1] if symbols else None

    def dtype_choices(self, name: str) -> tuple[str, ...]:
        """The dtypes a tensor may take; a `like` tensor follows its model (empty tuple)."""
        t = self.all_tensors[name]
        return () if t.like else t.dtypes

    def tolerance_for(self, dtype: str, config=()) -> Tolerance:
        """The tolerance of an output of `dtype` at a point whose call passes `config` (its
        pairs or dict). Precedence, the first that names the dtype: the tolerance of the
        kl.Config that config is (config_of), then Spec.tolerance, then DEFAULT_TOLERANCES.
        (The honest peer may still widen it where a correct implementation cannot do better.)"""
        own = self.config_of(config)
        found = _tolerance_in(getattr(own, "tolerance", None), dtype)
        if found is None:
            found = _tolerance_in(self.tolerance, dtype)
        return found if found is not None else DEFAULT_TOLERANCES.get(dtype, Tolerance(0.0, 0.0))

    def config_of(self, config=()) -> Mapping | None:
        """The declared config a call with these keyword arguments is: the one whose every key
        the call sets to the same value (or leaves at the launcher's default, when that is the
        value); with several, the one with the most keys, the first declared among equals."""
        given = dict(config)
        if not self.configs or not isinstance(self.configs, tuple):
            return None
        defaults = self.launcher_defaults
        best = None
        for c in self.configs:
            if not isinstance(c, Mapping):
                continue
            if all((given[k] == v) if k in given else (k in defaults and defaults[k] == v) for k, v in c.items()) \
                    and (best is None or len(c) > len(best)):
                best = c
        return best

    def reference_keywords(self, config=()) -> dict:
        """The config values a call with `config` (its pairs or dict) passes the reference: each
        config key (the call's, else the launcher's default for a declared config key) that the
        reference's signature takes as a keyword, every one where it takes **kwargs; {} for a
        reference whose signature cannot be read (a builtin) or a chain."""
        accepted = _keywords_taken(self.reference, tuple(self.args))
        if not accepted:
            return {}
        call = {**{k: v for k, v in self.launcher_defaults.items() if k in self.config_keys}, **dict(config)}
        return {k: v for k, v in call.items() if "**" in accepted or k in accepted}

    @property
    def launcher_defaults(self) -> dict:
        """The kernel's keyword defaults ({"precise": True} for rowsum(x, precise=True)); {}
        where its signature cannot be read."""
        import inspect
        try:
            params = inspect.signature(self.kernel).parameters.values()
        except (TypeError, ValueError):
            return {}
        return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def _keywords_taken(fn, args: tuple) -> frozenset:
    """The names `fn` takes as keywords, not counting `args` (passed positionally); '**' among
    them where it takes **kwargs. Empty for a chain or a callable without a readable signature."""
    import inspect
    from .chain import Chain
    if isinstance(fn, Chain) or not callable(fn):
        return frozenset()
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    return frozenset("**" if p.kind == p.VAR_KEYWORD else p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.VAR_KEYWORD) and p.name not in args)


def _tolerance_in(tol, dtype: str) -> Tolerance | None:
    """What a tolerance as a spec writes it (None, kl.Tolerance, (rtol, atol) or by dtype) says
    for `dtype`, or None when it does not name it."""
    if tol is None:
        return None
    if isinstance(tol, Tolerance):
        return tol
    if isinstance(tol, tuple):
        return Tolerance(*tol)
    if isinstance(tol, Mapping) and dtype in tol:
        return Tolerance(*tol[dtype]) if isinstance(tol[dtype], (tuple, list)) else tol[dtype]
    return None


BACKWARD = "backward"         # kl.Tensor(mutated="backward"): the backward writes the input's gradient into it


def declared_at(condition, point) -> bool | str:
    """A declared write's condition at a point: True, False or "backward" as given; a dict of the
    launcher's keywords -> values: True where the point's call passes every one of them; a
    predicate of the point: its answer (True, "backward", or false)."""
    if isinstance(condition, (bool, str)):
        return condition
    if isinstance(condition, Mapping):
        kwargs = point.kwargs
        return all(k in kwargs and kwargs[k] == v for k, v in condition.items())
    answer = condition(point)
    return BACKWARD if answer == BACKWARD else bool(answer)


def grad_name(arg: str) -> str:
    """How outputs and reports name an input's gradient: 'grad of w'."""
    return f"grad of {arg}"


def upstream_name(output: str) -> str:
    """How points name an output's upstream gradient (the backward's grad_output): 'upstream y'."""
    return f"upstream {output}"


# --------------------------------------------------------------------------- validation
# Pydantic's way: every field checked by its row of a table (the field -> its checks, each a
# test and the fix), then the rules that relate fields, each run only on parts well-formed
# enough to read; every problem is collected and one SpecError lists them all.

def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _names(v) -> bool:
    return isinstance(v, tuple) and all(isinstance(x, str) for x in v)


def _listing(v, of=object) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(x, of) for x in v)


@dataclass(frozen=True)
class Rule:
    """A field's check: `ok(value)` holds, or the field is reported with `fix` (a text, or
    fix(value, spec) -> text). With each=True every element is tested and the first bad one is
    what the report shows as given."""

    ok: Callable[[Any], bool]
    fix: str | Callable[[Any, Any], str]
    each: bool = False

    def problem(self, value, spec) -> tuple | None:
        for v in (value if self.each else (value,)):
            if not self.ok(v):
                return v, self.fix(v, spec) if callable(self.fix) else self.fix
        return None


def _list_fix(field: str, example: str):
    return lambda v, _: f"give a list, e.g. {field}=[{v!r}]." if isinstance(v, int) else f"give a list of ints, e.g. {field}={example}."


def _shapes_fix(v, spec) -> str:
    dims = spec.dims if isinstance(spec.dims, Mapping) else {}
    return f"give a list of dicts over the dims, e.g. [{{{', '.join(repr(d) + ': 1' for d in dims)}}}]."


def _tolerance_problem(tol, spec) -> tuple | None:
    if tol is None or isinstance(tol, Tolerance):
        pairs = [] if tol is None else [(tol.rtol, tol.atol)]
    elif isinstance(tol, (tuple, Mapping)):
        bad = [k for k in tol if k not in DTYPES] if isinstance(tol, Mapping) else []
        if bad:
            return tol, f"key by dtype names from {DTYPES}; {bad} is not one."
        pairs = [tol] if isinstance(tol, tuple) else list(tol.values())
    else:
        return tol, "give (rtol, atol), kl.Tolerance(rtol, atol), or {'bfloat16': (rtol, atol)}."
    pairs = [(p.rtol, p.atol) if isinstance(p, Tolerance) else p for p in pairs]
    if not all(isinstance(p, tuple) and len(p) == 2 and all(_number(v) and v >= 0 and math.isfinite(v) for v in p)
               for p in pairs):
        return tol, "each tolerance is (rtol, atol): two finite numbers >= 0."
    return None


def _is_slot(v) -> bool:
    return (v is None or isinstance(v, str) or hasattr(v, "score")
            or (isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) and callable(v[1])))


def _is_import(v) -> bool:
    try:
        ImportName.parse(v)
    except ValueError:
        return False
    return True


REFERENCE_FIX = "pass a reference callable (plain torch), taking the non-Out args in order."

SPEC_FIELDS = {
    "name": [Rule(lambda v: isinstance(v, str) and v.isidentifier(),
                  "use a Python identifier such as 'rmsnorm'; it becomes a pytest id and a file name.")],
    "kernel": [Rule(callable, "pass the kernel's launcher, a callable taking the args in order.")],
    "reference": [lambda v, spec: None if callable(v) or (v is None and spec.collective is not None) else (v, REFERENCE_FIX)],
    "args": [Rule(lambda v: isinstance(v, Mapping) and len(v) > 0,
                  "give a dict of argument name -> kl.Tensor, kl.Out or a scalar, in call order.")],
    "dims": [Rule(lambda v: isinstance(v, Mapping), "give a dict of symbol -> kl.Dim, e.g. {'N': kl.Dim(1, 8192, tile=64)}.")],
    "returns": [Rule(lambda v: v is None or isinstance(v, (Tensor, Mapping)),
                     "give kl.Tensor('M N', like='x') for one output, or a dict of name -> kl.Tensor for several, in the "
                     "order the kernel returns them.")],
    "build": [Rule(lambda v: v is None or callable(v), "pass a callable (point, generator) -> dict of tensors, or leave it out.")],
    "reference_dtype": [Rule(lambda v: v in FLOAT_DTYPES, lambda v, _: f"{_mean(v, FLOAT_DTYPES, 0.8)}use one of {FLOAT_DTYPES}.")],
    "timeout_s": [Rule(lambda v: v is None or (_number(v) and v > 0),
                       "give the seconds a point may run as a number above 0, e.g. 60.")],
    "configs": [Rule(lambda v: _listing(v, Mapping), "give a list of dicts or kl.Config(dict, tolerance=...), e.g. "
                     "[{'BLOCK': 128}] or [kl.Config({'precise': False}, tolerance={'float32': (1e-3, 1e-5)})].")],
    "production": [Rule(lambda v: _listing(v, Mapping), _shapes_fix)],
    "tuned": [Rule(lambda v: _listing(v, Mapping), _shapes_fix)],
    "tolerance": [_tolerance_problem],
    "nonfinite": [Rule(lambda v: v is None or v in NONFINITE_POLICIES, lambda v, _: f"{_mean(v, NONFINITE_POLICIES, 0.8)}"
                       f"use one of {NONFINITE_POLICIES}, or None for no NaN/Inf points.")],
    "invariants": [Rule(lambda v: _listing(v, Invariant), "give a list of kl.Invariant(name, check, values=None).")],
    "rows": [Rule(lambda v: v is None or _names(v), "name the dim (or dims) whose rows are independent, e.g. rows='M'.")],
    "collective": [Rule(lambda v: v is None or isinstance(v, Collective), "give kl.Collective(world=[2], switches=[bytes, "
                        "...]), the ranks and the protocol's size switches.")],
    "modes": [Rule(lambda v: isinstance(v, Modes), "give kl.Modes(graphs=True), or leave it out.")],
    "repetition": [Rule(lambda v: isinstance(v, Repetition), "give kl.Repetition(deterministic=True, calls=kl.Calls(...)), "
                        "or leave it out.")],
    "toolchain": [Rule(lambda v: isinstance(v, Toolchain), "give kl.Toolchain(expect=[...], flags=[...], imports=[...]), "
                       "or leave it out.")],
    "model": [Rule(lambda v: isinstance(v, InModel), "give kl.InModel(slot='rmsnorm'), or leave it out.")],
}

# The parts' fields, each by its row (validate() runs them at the part's path under the spec).
MODES_FIELDS = {
    "graphs": [Rule(lambda v: v is None or isinstance(v, bool), "say whether production runs the kernel captured in CUDA "
                    "graphs: True (a failed capture then fails rung 4), False (a failed capture skips the point), or leave "
                    "it out (None: a failed capture is a warning).")],
}

REPETITION_FIELDS = {
    "deterministic": [Rule(lambda v: isinstance(v, bool), "give True when the same inputs must give the same bits on every "
                           "call (rung 5 then fails any difference), or False (the default).")],
    "calls": [Rule(lambda v: v is None or isinstance(v, Calls), "give kl.Calls(pattern='AABB', fresh=True, count=10000): "
                   "how the model calls a launcher with state, or leave it out.")],
}

TOOLCHAIN_FIELDS = {
    "expect": [Rule(lambda v: _listing(v, Expect), "give a list of kernel-name globs ('*decode*') or "
                    "kl.Expect('*decode*', when={'S': 1}, label='the decode kernel').")],
    "flags": [Rule(lambda v: _listing(v, Flag), "give a list of kl.Flag('USE_TMA', values=(False, True)) or "
                   "kl.Flag(env='MYLIB_FAST', values=('0', '1')).")],
    "imports": [Rule(lambda v: isinstance(v, (list, tuple)), "give a list of 'pkg.mod:name' strings."),
                Rule(_is_import, "write each as 'pkg.mod:name' (a module, a colon, a name in it; 'pkg.mod:Class.method' "
                     "for an attribute of one), e.g. 'mylib.ops:rmsnorm'.", each=True)],
}

INMODEL_FIELDS = {
    "slot": [Rule(_is_slot, "name a slot of kladder's model ('rmsnorm', 'attention_decode', ...), give (slot, callable) "
                  "when the slot takes another callable than `kernel`, or a kladder.model.Adapter.")],
    "tolerance": [Rule(lambda v: _number(v) and 0 <= v <= 1,
                       "give the largest score drop that passes, between 0 and 1 (e.g. 0.02).")],
    "nll_tolerance": [Rule(lambda v: _number(v) and v >= 0, "give the largest relative rise of the answers' negative "
                           "log-likelihood that passes, >= 0 (e.g. 0.05 for 5%).")],
}

PARTS = {"modes": MODES_FIELDS, "repetition": REPETITION_FIELDS, "toolchain": TOOLCHAIN_FIELDS, "model": INMODEL_FIELDS}

TENSOR_FIELDS = {
    "shape": [Rule(lambda v: isinstance(v, str),
                   "write the shape as symbols separated by spaces, e.g. 'M N' (use '' for a 0-d tensor).")],
    "dtype": [Rule(lambda v: v is None or (_names(v) and len(v) > 0),
                   f"give a dtype name or a list of them, from {DTYPES} (torch.float32 works too).")],
    "like": [Rule(lambda v: v is None or isinstance(v, str), "name another tensor argument, e.g. like='x'.")],
    "values": [Rule(lambda v: v is None or _names(v), "give a list of names, e.g. values=['peaked', 'ties'] or [] for none.")],
    "range": [Rule(lambda v: v is None or (isinstance(v, tuple) and len(v) == 2 and all(_number(x) or isinstance(x, str)
                                                                                       for x in v)),
                   "give (lo, hi), inclusive, numbers or dim expressions, e.g. range=(1, 'S') or (0, 'E-1').")],
    "valid": [Rule(lambda v: v is None or isinstance(v, str) or (_int(v) and v >= 0),
                   "give the number of valid elements of the last dim (an int or a dim name); the rest is padding.")],
    "layouts": [Rule(lambda v: v is None or _names(v), "give a list of layout names, e.g. layouts=['sliced'], or [] for none.")],
    "mutated": [Rule(lambda v: _write_condition(v, (BACKWARD,)), "give True for an input the kernel writes in place by "
                     "design, a dict of the launcher's keywords under which it does (mutated={'in_place': True}), a "
                     "predicate of the point (mutated=lambda p: ...), 'backward' when the backward writes the input's "
                     "gradient into it, or leave it out.")],
    "grad_overwritten": [Rule(lambda v: _write_condition(v, ()), "give True on an output whose upstream gradient the "
                              "backward overwrites, a dict of the launcher's keywords under which it does "
                              "(grad_overwritten={'in_place': True}), a predicate of the point, or leave it out.")],
}


def _write_condition(v, words: tuple) -> bool:
    """A declared write's condition: a bool, one of `words`, a non-empty dict keyed by names, a callable."""
    if isinstance(v, bool) or (isinstance(v, str) and v in words) or callable(v):
        return True
    return isinstance(v, Mapping) and len(v) > 0 and all(isinstance(k, str) and k.isidentifier() for k in v)

TILE_FIX = "give a positive int tile (or a list of them), the block size the kernel cuts this dim into."
DIM_FIELDS = {
    "min/max": [Rule(lambda v: _int(v[0]) and _int(v[1]) and 0 <= v[0] <= v[1], "give integers with 0 <= min <= max.")],
    "tile": [Rule(lambda v: isinstance(v, tuple) and all(_int(t) and t > 0 for t in v), TILE_FIX)],
    "widths": [Rule(lambda v: isinstance(v, tuple), _list_fix("widths", "[2880, 4096]"))],
    "chunks": [Rule(lambda v: isinstance(v, tuple), _list_fix("chunks", "[256]")),
               Rule(lambda v: all(_int(c) and c > 0 for c in v), "give positive int chunk sizes, e.g. chunks=[256].")],
    "sizes": [Rule(lambda v: isinstance(v, tuple), _list_fix("sizes", "[8, 16, 64]")),
              Rule(lambda v: all(_int(c) and c >= 1 for c in v), "give the sizes the dim takes as ints >= 1, e.g. "
                   "sizes=[8, 16, 64].")],
}


def _takes(d: Dim) -> str:
    """The sizes a dim takes, as a fix says them."""
    return f"one of its sizes {list(d.sizes)}" if d.sizes else f"an int within [{d.min}, {d.max}]"


def _sizes_rules(found, key: str, d: Dim) -> None:
    """Dim(sizes=[...]): min and max, if given, are the least and largest size; widths and
    chunks are among the sizes (a width the dim never takes is no width of it)."""
    if not d.sizes or not found.clean("dims", key, "sizes"):
        return
    lo, hi = getattr(d, "_range", (d.min, d.max))
    if (lo != 1 and lo != d.sizes[0]) or (hi != 1 << 16 and hi != d.sizes[-1]):
        found.add(("dims", key, "sizes"), f"min={lo}, max={hi}, sizes={list(d.sizes)}", "give either min/max or sizes: "
                  f"with sizes the range is the least and the largest size, e.g. kl.Dim(sizes={list(d.sizes)}).")
    bad = [w for w in d.widths if _int(w) and w not in d.sizes]
    if bad:
        found.add(("dims", key, "widths"), d.widths, f"{bad} are not among the sizes {list(d.sizes)}: give widths the dim "
                  "takes, or drop widths= (every size is tested).")

COLLECTIVE_FIELDS = {
    "world": [Rule(lambda v: isinstance(v, tuple) and len(v) > 0 and all(_int(w) and w >= 2 for w in v),
                   "give the world sizes to run, ints >= 2, e.g. world=[2, 4, 8].")],
    "switches": [Rule(lambda v: isinstance(v, tuple) and all(_int(b) and b > 0 for b in v) and list(v) == sorted(set(v)),
                      "give the message sizes in bytes where the protocol changes, positive and increasing, e.g. "
                      "switches=[512 << 10, 4 << 20].")],
    "reference": [Rule(lambda v: v in COLLECTIVE_REFERENCES,
                       lambda v, _: f"{_mean(v, COLLECTIVE_REFERENCES, 0.8)}use one of {tuple(COLLECTIVE_REFERENCES)}.")],
    "queued": [Rule(lambda v: _int(v) and v >= 1, "give the number of calls queued before one synchronisation, e.g. 64.")],
    "setup": [Rule(lambda v: v is None or callable(v), "pass a callable (group, device) -> communicator, or leave it out (the "
                   "kernel then gets the torch.distributed group).")],
    "needs": [Rule(lambda v: v in tuple(Needs), "give 'cuda' for a protocol that runs only on CUDA ranks, or leave it out.")],
    "share_device": [Rule(lambda v: isinstance(v, bool), "give True to let ranks share a GPU (CUDA IPC between processes) "
                          "when there are fewer GPUs than ranks, or leave it out.")],
    "dim": [Rule(lambda v: v is None or isinstance(v, str), "name the dim that sets the message size.")],
    "world_dim": [Rule(lambda v: v is None or isinstance(v, str), "name the dim that is the world size.")],
    "lag_us": [Rule(lambda v: v is None or (_int(v) and v >= 0),
                    "give the lagging rank's wait before each call in microseconds, an int >= 0.")],
    "watchdog_s": [Rule(lambda v: v is None or (_number(v) and v > 0), "give the seconds without progress that make a hang, > 0.")],
}

EXPECT_FIELDS = {
    "kernel": [Rule(lambda v: isinstance(v, str) and len(v) > 0, "give a glob over kernel or function names, e.g. '*decode*'.")],
    "when": [Rule(lambda v: v is None or (isinstance(v, Mapping) and len(v) > 0 and all(isinstance(k, str) for k in v)),
                  "give a dict of dims, config keys, '$ENV_VARIABLE's or the toolchain (torch, triton, cuda, capability) "
                  "-> a value or a list, e.g. {'S': 1}, {'$MYLIB_FAST': '1'} or {'torch': '>=2.6'}.")],
    "launch": [Rule(lambda v: v is None or (isinstance(v, Mapping) and all(isinstance(k, str) for k in v)),
                    "give the constexpr and launch-option values the launch must have, e.g. {'BLOCK_M': 64, 'num_warps': 4}.")],
    "label": [Rule(lambda v: isinstance(v, str), "give a short name for reports, e.g. 'the decode kernel'.")],
    "runs": [Rule(lambda v: isinstance(v, bool), "give False for a kernel that must not run where `when` applies (with "
                  "kernel='*': a launcher that refuses there), or leave it out (True: it must run).")],
    "raises": [Rule(lambda v: v is None or _exception_class(v) or (isinstance(v, tuple) and len(v) > 0
                                                                   and all(map(_exception_class, v))),
                    "give the exception class the launcher refuses with (raises=ValueError) or a tuple of them, or "
                    "leave it out (any exception).")],
}


def _exception_class(v) -> bool:
    return isinstance(v, type) and issubclass(v, Exception)

FLAG_FIELDS = {
    "name": [Rule(lambda v: v is None or (isinstance(v, str) and v.isidentifier()),
                  "give the keyword the launcher takes (an identifier that is not one of args).")],
    "env": [Rule(lambda v: v is None or (isinstance(v, str) and len(v) > 0 and "=" not in v),
                 "give the environment variable's name, e.g. 'MYLIB_FAST'.")],
    "values": [Rule(lambda v: isinstance(v, (list, tuple)) and len(v) >= 2 and len({repr(x) for x in v}) == len(v),
                    "give at least two distinct values to compare, e.g. (False, True).")],
    "set": [Rule(lambda v: v in tuple(EnvSet), lambda v, _: f"{_mean(v, tuple(EnvSet), 0.6)}give 'at_start' (the variable "
                 "is in the environment the process starts with, the default) or 'after_import' (the program sets it "
                 "after importing the kernel's library, as a serving launcher does from its config).")],
}

CALLS_FIELDS = {
    "pattern": [Rule(lambda v: isinstance(v, str) and len(v) > 0 and v.isascii() and v.isalpha() and v.isupper(),
                     "give one step of the model's calls as capital letters, one an input set, in the order the model "
                     "passes them, e.g. 'AABB' (twice on the same inputs, then twice on new ones) or 'A'.")],
    "fresh": [Rule(lambda v: isinstance(v, bool), "give True when every step brings new inputs (a decode loop), False "
                   "when every step passes the same input sets again.")],
    "count": [Rule(lambda v: _int(v) and v >= 1, "give how many calls a run of the model makes, an int >= 1, e.g. 10000.")],
    "seconds": [Rule(lambda v: v is None or (_number(v) and v > 0), "give the seconds rung 5's stream may run, > 0, or "
                     "leave it out (the device's budget).")],
}

INVARIANT_FIELDS = {
    "check": [Rule(callable, "pass a callable (inputs, outputs) -> bool or bool tensor.")],
    "values": [Rule(lambda v: v is None or isinstance(v, Mapping), "give a dict of input arg -> value kind, e.g. "
                    "values={'x': 'ones'}.")],
}


class _Found:
    """The problems of one spec so far, each at a location under the spec's head."""

    def __init__(self, spec: Spec):
        self.spec, self.problems = spec, []
        ok = isinstance(spec.name, str) and spec.name.isidentifier()
        self.head = ("Spec", spec.name if ok else None)

    def add(self, where: tuple, given, fix: str) -> None:
        self.problems.append(Problem((self.head,) + where, given, fix))

    def clean(self, *where) -> bool:
        """Nothing found at `where` or under it."""
        n = len(where)
        return not self.problems or not any(p.where[1:1 + n] == where for p in self.problems)

    def fields(self, obj, table: dict, where: tuple = ()) -> None:
        """Each field of `obj` by its row of `table`; a field's first failed check is its problem."""
        for name, rules in table.items():
            value = tuple(getattr(obj, n) for n in name.split("/")) if "/" in name else getattr(obj, name)
            for rule in rules:
                found = rule.problem(value, self.spec) if isinstance(rule, Rule) else rule(value, self.spec)
                if found is not None:
                    self.add(where + (name,), *found)
                    break


def validate(spec: Spec) -> None:
    found = _Found(spec)
    found.fields(spec, SPEC_FIELDS)
    if not all(found.clean(part) for part in PARTS):
        raise SpecError("", problems=found.problems)   # a part that is not one: the rules below read its fields
    for part, table in PARTS.items():
        found.fields(getattr(spec, part), table, (part,))
    tensors = _entries(found)
    dims = _dims(found)
    _tensors(found, tensors)
    _shape_lists(found, dims)
    _invariants(found)
    _use(found, tensors)
    if isinstance(spec.collective, Collective):
        _collective(found, tensors)
    _toolchain(found, dims)
    _grads(found, tensors)
    _configs(found)
    if isinstance(spec.repetition.calls, Calls):
        found.fields(spec.repetition.calls, CALLS_FIELDS, ("repetition", "calls"))
        _calls_budget(found)
    _blame(found, tensors, dims)
    if found.problems:
        raise SpecError("", problems=found.problems)


def _entries(found: _Found) -> dict[str, tuple[tuple, Tensor]]:
    """The tensors of args and returns that are tensors, by name: (their location, the tensor)."""
    spec, tensors = found.spec, {}
    if found.clean("args"):
        for key, v in spec.args.items():
            if not isinstance(key, str) or not key.isidentifier():
                found.add(("args",), key, "name every argument with a Python identifier, as the kernel's parameter is named.")
            elif isinstance(v, type):
                found.add(("args", key), v, "call it: kl.Tensor('M N', dtype='bfloat16') (or kl.Out(...)), not the class itself.")
            elif isinstance(v, Tensor):
                tensors[key] = (("args", key), v)
            elif isinstance(v, (Dim, Size)):
                _size_arg(found, key, v)
    if found.clean("returns") and spec.returns is not None:
        for key, t in ({"out": spec.returns} if isinstance(spec.returns, Tensor) else spec.returns).items():
            problem = _returned_problem(spec, key, t)
            if problem:
                found.add(*problem)
            else:
                tensors[key] = (("returns", key), t)
    if found.clean("args") and found.clean("returns") and not (spec.out_args or spec.returns):
        found.add(("returns",), spec.returns, "declare the outputs: returns=kl.Tensor('M N', like='x'), or an kl.Out(...) argument.")
    return tensors


def _size_arg(found: _Found, key: str, v) -> None:
    """kl.Size("E") names a declared dim; a kl.Dim is no argument (it would reach the kernel as
    the Dim object): the dim goes in dims, and kl.Size(name) passes its size."""
    declared = _declared(found)
    if isinstance(v, Dim):
        dim = key if key in declared else "E"
        found.add(("args", key), v, f"an argument that is a dim's size is kl.Size({dim!r}): declare the dim in dims "
                  f"({dim!r}: kl.Dim(...)) and pass args={{{key!r}: kl.Size({dim!r})}}; the kernel then gets the point's "
                  "size as a Python int.")
    elif not isinstance(v.dim, str) or (isinstance(found.spec.dims, Mapping) and v.dim not in declared):
        found.add(("args", key, "dim"), v.dim, f"{_mean(v.dim, declared) if isinstance(v.dim, str) else ''}name a dim "
                  f"declared in dims ({', '.join(declared) or 'none declared'}).")


def _returned_problem(spec: Spec, key, t) -> tuple | None:
    """(where, given, fix) for one returned output, or None."""
    if not isinstance(key, str) or not key.isidentifier():
        return ("returns",), key, "name every returned output with an identifier."
    if isinstance(t, type) or not isinstance(t, Tensor):
        fix = "give a kl.Tensor('M N', like='x'), the returned tensor's shape and dtype."
    elif isinstance(t, Out):
        fix = "a kl.Out is an argument the kernel writes into: declare it in args; a tensor the kernel returns is a kl.Tensor."
    elif isinstance(spec.args, Mapping) and key in spec.args:
        fix = f"{key!r} is also an argument; give the returned output another name (e.g. {key + '_out'!r})."
    else:
        return None
    return ("returns", key), t, fix


def _dims(found: _Found) -> dict[str, Dim]:
    """The well-formed dims, by name (a rule that reads a dim's range reads only these)."""
    spec, good = found.spec, {}
    if not found.clean("dims"):
        return good
    for key, d in spec.dims.items():
        if not isinstance(key, str) or not key.isidentifier():
            found.add(("dims",), key, "name every dim with an identifier used in the shapes, e.g. {'N': kl.Dim(1, 4096)}.")
        elif isinstance(d, type):
            found.add(("dims", key), d, "call it: kl.Dim(1, 4096, tile=64), not the class itself.")
        elif not isinstance(d, Dim):
            found.add(("dims", key), d, "use kl.Dim(min, max, tile=..., widths=[...]), e.g. kl.Dim(1, 8192, tile=64).")
        else:
            found.fields(d, DIM_FIELDS, ("dims", key))
            _sizes_rules(found, key, d)
            if found.clean("dims", key, "min/max") and found.clean("dims", key, "widths") \
                    and not all(_int(w) and d.min <= w <= d.max for w in d.widths):
                found.add(("dims", key, "widths"), d.widths, f"give integer widths within [{d.min}, {d.max}], or widen the range.")
            if found.clean("dims", key, "min/max"):
                good[key] = d
    return good


def _declared(found: _Found) -> tuple:
    return tuple(found.spec.dims) if isinstance(found.spec.dims, Mapping) else ()


def _named(found: _Found) -> bool:
    """The dims' names can be read: a dict whose keys are names (a bad Dim still has a name)."""
    return isinstance(found.spec.dims, Mapping) and not any(p.where[1:] == ("dims",) for p in found.problems)


def _tensors(found: _Found, tensors: dict) -> None:
    for name, (where, t) in tensors.items():
        found.fields(t, TENSOR_FIELDS, where)
        _tensor_rules(found, name, where, t, tensors)
    _like_cycles(found, tensors)


def _tensor_rules(found: _Found, name: str, where: tuple, t: Tensor, tensors: dict) -> None:
    output = where[0] == "returns" or isinstance(t, Out)
    if output:
        _output_rules(found, where, t)
    _dim_name_rules(found, where, t, output)
    if found.clean(*where, "like") and found.clean(*where, "dtype"):
        _dtype_rules(found, name, where, t, tensors)
    if not output:
        _kind_rules(found, where, t)
    _write_rules(found, name, where, t, output)


def _output_rules(found: _Found, where: tuple, t: Tensor) -> None:
    """An output holds what the kernel writes: no mutated=, values, range or layouts."""
    if t.mutated is not False and found.clean(*where, "mutated"):
        found.add(where + ("mutated",), t.mutated, "mutated= marks an input the kernel also writes; an output (kl.Out or "
                  "returns=) is written anyway: drop mutated=.")
    for f in ("values", "range", "layouts"):
        if getattr(t, f) is not None and found.clean(*where, f):
            found.add(where + (f,), getattr(t, f), f"an output holds what the kernel writes: kladder chooses no {f} for it; "
                      f"drop {f}=.")


def _dim_name_rules(found: _Found, where: tuple, t: Tensor, output: bool) -> None:
    """The dims a shape, a range and `valid` name are declared."""
    if not _named(found):
        return
    declared, clean = _declared(found), (lambda f: found.clean(*where, f))
    bad = next((s for s in t.symbols if not (s.isdigit() or s in declared)), None) if clean("shape") else None
    if bad is not None:
        found.add(where + ("shape",), t.shape, f"{_mean(bad, declared)}declare {bad!r} in dims, e.g. dims={{{bad!r}: "
                  "kl.Dim(1, 4096, tile=64)}, or use a literal size.")
    if clean("range") and t.range is not None and not output:
        _range_rules(found, where, t, declared)
    if clean("valid") and t.valid is not None:
        if isinstance(t.valid, str) and t.valid not in declared:
            found.add(where + ("valid",), t.valid, f"{_mean(t.valid, declared)}give the number of valid elements of the last "
                      "dim (an int or a dim name); the rest is padding.")
        elif clean("shape") and not t.symbols:
            found.add(where + ("valid",), t.valid, "a 0-d tensor has no rows to pad; drop `valid`.")


def _range_rules(found: _Found, where: tuple, t: Tensor, declared: tuple) -> None:
    """A range's bounds: numbers, or dim expressions over declared dims ("E-1", "2*S")."""
    from .dimexpr import DimExprError, names
    for v in t.range:
        if not isinstance(v, str):
            continue
        try:
            read = names(v)
        except DimExprError as e:
            found.add(where + ("range",), t.range, f"{e}: give (lo, hi), inclusive, each a number or an expression over "
                      "dim names with + - * // and integers, e.g. range=(0, 'E-1') or (1, '2*S').")
            return
        bad = next((n for n in read if n not in declared), None)
        if bad is not None:
            found.add(where + ("range",), t.range, f"{_mean(bad, declared)}give (lo, hi), inclusive, numbers or expressions "
                      f"over declared dims ({', '.join(declared)}), e.g. range=(0, 'E-1').")
            return


def _write_rules(found: _Found, name: str, where: tuple, t: Tensor, output: bool) -> None:
    """A declared write names what is there to write: grad_overwritten an output of a spec with a
    backward (grads=), mutated='backward' an input whose gradient the backward computes, a dict
    the launcher's keywords (those its configs set, when it declares configs)."""
    spec, grads = found.spec, found.spec.grads if isinstance(found.spec.grads, tuple) else ()
    if t.grad_overwritten is not False and found.clean(*where, "grad_overwritten"):
        if not output:
            found.add(where + ("grad_overwritten",), t.grad_overwritten, "grad_overwritten= marks an output whose upstream "
                      "gradient the backward overwrites; an input's writes are mutated=: move it to the output.")
        elif not grads:
            found.add(where + ("grad_overwritten",), t.grad_overwritten, "a backward overwrites the upstream gradient: "
                      "declare the inputs whose gradients it computes (Spec(grads=['x', ...])), or drop grad_overwritten=.")
    if t.mutated == BACKWARD and not output and found.clean(*where, "mutated") and name not in grads:
        found.add(where + ("mutated",), t.mutated, f"mutated='backward' says the backward writes {name}'s gradient into "
                  f"it: add {name!r} to Spec(grads=[...]), or give mutated=True for a write in the forward.")
    keys = {k for c in (spec.configs if isinstance(spec.configs, (list, tuple)) else ()) if isinstance(c, Mapping)
            for k in c}
    for field_name in ("mutated", "grad_overwritten"):
        cond = getattr(t, field_name)
        if isinstance(cond, Mapping) and keys and found.clean(*where, field_name):
            unknown = [k for k in cond if k not in keys]
            if unknown:
                found.add(where + (field_name,), dict(cond), f"{_mean(unknown[0], tuple(keys))}name the launcher's "
                          f"keywords its configs set ({', '.join(sorted(keys))}): {unknown} is in none of them.")


def _kind_rules(found: _Found, where: tuple, t: Tensor) -> None:
    """An input's value kinds and layouts are kladder's names (and 'nonfinite' needs a policy)."""
    if t.values is not None and found.clean(*where, "values"):
        bad = next((k for k in t.values if k not in VALUE_KINDS), None)
        if bad is not None:
            found.add(where + ("values",), t.values, f"{_mean(bad, VALUE_KINDS, 0.8)}use value kinds from {VALUE_KINDS}, "
                      "or [] for none.")
        elif "nonfinite" in t.values and found.spec.nonfinite is None:
            found.add(where + ("values",), t.values, "'nonfinite' needs the spec's NaN/Inf policy: "
                      "Spec(nonfinite='propagate' | 'ignore' | 'raise').")
    if t.layouts is not None and found.clean(*where, "layouts"):
        bad = next((lay for lay in t.layouts if lay not in LAYOUTS), None)
        if bad is not None:
            found.add(where + ("layouts",), t.layouts, f"{_mean(bad, LAYOUTS, 0.8)}use layouts from {LAYOUTS}, or [] for "
                      "contiguous only.")


DTYPE_HINTS = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def _dtype_rules(found: _Found, name: str, where: tuple, t: Tensor, tensors: dict) -> None:
    if t.like is not None:
        others = [n for n in tensors if n != name]
        if t.like not in others:
            if found.clean("args") and found.clean("returns"):     # else the tensor it names may be one of those
                found.add(where + ("like",), t.like, f"{_mean(t.like, others)}name another tensor argument "
                          f"({', '.join(others)}).")
        elif t.dtype is not None:
            dtype = t.dtype[0] if len(t.dtype) == 1 else list(t.dtype)       # as it was most likely written
            found.add(where, f"dtype={dtype!r}, like={t.like!r}", "give either dtype or like, not both.")
        return
    if not t.dtypes:
        found.add(where + ("dtype",), t.dtype, f"give a dtype or a list of dtypes from {DTYPES}, or like='<other arg>'.")
    for dt in t.dtypes:
        if dt not in DTYPES:
            hint = DTYPE_HINTS.get(dt)
            found.add(where + ("dtype",), dt, f"use {hint!r}." if hint else f"{_mean(dt, DTYPES, 0.8)}use one of {DTYPES}.")
            return


def _like_cycles(found: _Found, tensors: dict) -> None:
    """A `like` chain that comes back to where it started has no dtype: one problem a cycle."""
    seen_cycles = set()
    for name, (where, t) in tensors.items():
        path, cur = [name], t
        while found.clean(*tensors[path[-1]][0]) and cur.like in tensors and cur.like not in path:
            path.append(cur.like)
            cur = tensors[cur.like][1]
        if cur.like in path and found.clean(*tensors[path[-1]][0]):
            cycle = frozenset(path[path.index(cur.like):])
            if cycle not in seen_cycles:
                seen_cycles.add(cycle)
                found.add(where + ("like",), cur.like, "break the cycle: one tensor in a `like` chain needs a dtype.")


def _shape_lists(found: _Found, dims: dict) -> None:
    """production and tuned shapes: a size for every dim, each an int within its range; config keys not args."""
    spec, declared = found.spec, _declared(found)
    for fname in ("production", "tuned"):
        if not found.clean(fname) or not _named(found):
            continue
        for shape in getattr(spec, fname):
            bad = next((d for d, v in shape.items() if d in dims and not (_int(v) and dims[d].allows(v))), None)
            if not set(declared) <= set(shape):
                missing = [d for d in declared if d not in shape]
                extra = next((k for k in shape if k not in declared), None)      # a misspelt dim: did you mean
                found.add((fname,), dict(shape), f"{_mean(extra, missing)}give a size for every dim: {', '.join(declared)}.")
            elif bad is not None:
                found.add((fname,), dict(shape), f"{bad} must be {_takes(dims[bad])}.")
    if found.clean("configs") and found.clean("args"):
        clash = [k for c in spec.configs for k in c if k in spec.args]
        if clash:
            found.add(("configs",), list(spec.configs), f"config keys {clash} collide with args; configs are extra keyword "
                      "arguments.")


def _invariants(found: _Found) -> None:
    spec = found.spec
    if not found.clean("invariants"):
        return
    inputs = tuple(spec.input_args) if found.clean("args") else None
    for inv in spec.invariants:
        where = ("invariants", inv.name)
        found.fields(inv, INVARIANT_FIELDS, where)
        if not found.clean(*where, "values") or not inv.values or inputs is None:
            continue
        bad = next((a for a in inv.values if a not in inputs), None)
        if bad is not None:
            found.add(where + ("values",), dict(inv.values), f"{_mean(bad, inputs)}name input args ({', '.join(inputs)}).")
        elif any(k not in VALUE_KINDS for k in inv.values.values()):
            found.add(where + ("values",), dict(inv.values), f"use value kinds from {VALUE_KINDS}.")


def _dims_used(spec: Spec, tensors: dict) -> set:
    """The dims something reads: a tensor's shape, a value range (range=(1, "L")), a valid length
    (valid="V"), or `rows`. A dim no shape uses is a size the points choose and that the spec's
    values or its build= function read (a paged cache's max_len: lens in 1..L, a page table of
    ceil(L / 16) columns)."""
    used = set(spec.row_dims) | {v.dim for v in spec.args.values() if isinstance(v, Size) and isinstance(v.dim, str)}
    for _, t in tensors.values():
        used |= set(t.symbols) | _range_dims(t)
        if isinstance(t.valid, str):
            used.add(t.valid)
    return used


def _range_dims(t: Tensor) -> set:
    """The dims a tensor's range reads (range=(0, "E-1") reads E); none of a malformed one."""
    from .dimexpr import DimExprError, names
    out = set()
    for v in t.range or ():
        if isinstance(v, str):
            with contextlib.suppress(DimExprError):          # a malformed one: _range_rules names it
                out |= set(names(v))
    return out


def _use(found: _Found, tensors: dict) -> None:
    """Every dim is used (by a shape, a value range, a valid length or `rows`), and `rows` names dims.
    Judged only when every shape, range, valid and rows could be read: a malformed one would
    leave a dim it uses looking unused."""
    spec, declared = found.spec, _declared(found)
    if not _named(found):
        return
    if found.clean("rows"):
        bad = next((r for r in spec.row_dims if r not in declared), None)
        if bad is not None:
            found.add(("rows",), spec.rows, f"{_mean(bad, declared)}name dims declared in `dims` ({', '.join(declared)}).")
    readable = found.clean("args") and found.clean("returns") and found.clean("rows") and all(
        found.clean(*where, f) for where, _ in tensors.values() for f in ("shape", "range", "valid"))
    if not readable:
        return
    used = _dims_used(spec, tensors)
    for d in declared:
        if d not in used:
            found.add(("dims", d), spec.dims[d], f"nothing uses {d!r}: no tensor's shape, value range (range=(1, {d!r})), "
                      f"valid= or rows; drop it, or use it in a shape (shapes: "
                      f"{', '.join(f'{n}={t.shape!r}' for n, (_, t) in tensors.items())}).")


def _collective(found: _Found, tensors: dict) -> None:
    spec, c, declared = found.spec, found.spec.collective, _declared(found)
    found.fields(c, COLLECTIVE_FIELDS, ("collective",))
    if spec.reference is not None:
        found.add(("reference",), spec.reference, "a collective is judged against the torch.distributed collective it names "
                  "(Collective(reference='all_reduce', op='sum')): leave Spec.reference None.")
    if c.reference == "all_reduce" and c.op not in COLLECTIVE_REFERENCES["all_reduce"]:
        found.add(("collective", "op"), c.op, f"{_mean(c.op, COLLECTIVE_REFERENCES['all_reduce'], 0.8)}use one of "
                  f"{COLLECTIVE_REFERENCES['all_reduce']}.")
    for fname in ("dim", "world_dim"):
        v = getattr(c, fname)
        if v is not None and found.clean("collective", fname) and _named(found) and v not in declared:
            found.add(("collective", fname), v, f"{_mean(v, declared)}name a dim declared in `dims` ({', '.join(declared)}).")
    if not found.clean("args") or not found.clean("returns"):
        return
    if len(spec.input_args) != 1 or len(spec.outputs) != 1:
        found.add(("args",), list(spec.args), "a collective takes one input tensor (the rank's message) and has one output "
                  "(a kl.Out argument or returns=).")
    elif found.clean("collective", "dim") and found.clean(*tensors[next(iter(spec.input_args))][0], "shape") \
            and spec.message_dim is None:
        found.add(("collective", "dim"), c.dim, "name the dim that sets the message size: the input has no symbolic dim.")


def _toolchain(found: _Found, dims: dict) -> None:
    """Rung 7's fields: expect, flags (imports are checked by their row of SPEC_FIELDS)."""
    spec = found.spec
    if found.clean("toolchain", "expect"):
        for i, e in enumerate(spec.toolchain.expect):
            found.fields(e, EXPECT_FIELDS, ("toolchain", "expect", i))
            if isinstance(e, Expect) and e.raises is not None and e.runs is True and \
                    found.clean("toolchain", "expect", i, "raises"):
                found.add(("toolchain", "expect", i, "raises"), e.raises, "raises= says how a launcher refuses where it "
                          "must not run: give runs=False with it (kl.Expect('*', runs=False, when={...}, "
                          "raises=ValueError)), or drop it.")
            if found.clean("toolchain", "expect", i, "when") and e.when is not None and _named(found):
                _when(found, ("toolchain", "expect", i, "when"), e.when, dims)
    if found.clean("toolchain", "flags"):
        seen = set()
        for f in spec.toolchain.flags:
            _flag(found, f)
            if f.key in seen:
                found.add(("toolchain", "flags"), f.key, "declare each flag once.")
            seen.add(f.key)


def launcher_defaults(kernel) -> dict[str, Any]:
    """The launcher's keyword defaults (inspect.signature): a call that leaves `precise` out runs
    with the default, so `when={"precise": True}` matches it. {} when the signature is unknown."""
    import inspect
    try:
        params = inspect.signature(kernel).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def when_keys(spec: Spec) -> list[str]:
    """The config keys a `when` may name: the configs' keys, the keyword flags, the launcher's
    keywords with a default."""
    keys = {k for c in spec.configs if isinstance(c, Mapping) for k in c}
    keys |= {f.name for f in spec.toolchain.flags if isinstance(f, Flag) and isinstance(f.name, str)}
    keys |= set(launcher_defaults(spec.kernel)) if callable(spec.kernel) else set()
    return sorted(keys - set(spec.args) if isinstance(spec.args, Mapping) else keys)


WHEN_FORMS = ("name an environment variable as '$NAME' ({'$MYLIB_FAST': '1'}, None for unset) or the toolchain as "
              "one of torch, triton, cuda, capability with a version specifier ({'torch': '>=2.6'}, "
              "{'capability': '>=9.0'})")


def specifier_problem(text) -> str | None:
    """Why `text` is no version specifier (">=2.6", ">=2.4,<2.7"), or None."""
    from .versions import parse_specifier
    if not isinstance(text, str) or not text.strip():
        return "give a version specifier string"
    try:
        parse_specifier(text)
    except ValueError as e:
        return str(e)
    return None


def _when(found: _Found, where: tuple, when: Mapping, dims: dict) -> None:
    spec, declared = found.spec, _declared(found)
    keys = when_keys(spec) if found.clean("configs") and found.clean("toolchain", "flags") else []
    for k, v in when.items():
        listed = list(v) if isinstance(v, (list, tuple)) else [v]
        if is_predicate(v):
            if k not in declared:
                found.add(where, dict(when), f"{k!r}: a range or a predicate (a callable) is a condition on a dim's size "
                          f"({', '.join(declared)}); a config key, a variable or the toolchain takes a value or a list.")
                return
            if k in dims:
                _when_predicate(found, where, when, k, v, dims[k])
            continue
        if k.startswith("$"):
            if not k[1:] or "=" in k or not listed or not all(x is None or isinstance(x, str) for x in listed):
                found.add(where, dict(when), f"{k!r}: an environment variable's condition is '$NAME' -> its value as a "
                          "string, None for unset, or a list of them, e.g. {'$MYLIB_FAST': '1'} or "
                          "{'$MYLIB_FAST': [None, '0']}.")
                return
            continue
        if ToolchainKey.has(k):
            why = specifier_problem(v)
            if why:
                found.add(where, dict(when), f"{k}={v!r}: {why}; give a version specifier, e.g. "
                          f"{{{k!r}: {'>=9.0' if k == ToolchainKey.CAPABILITY else '>=2.6'!r}}} (>=, <, ==, != or ~=, "
                          "several joined by commas).")
                return
            continue
        if k not in declared and k not in keys:
            found.add(where, dict(when), f"{_mean(k, list(declared) + keys + list(ToolchainKey))}{k!r} is neither a dim "
                      f"({', '.join(declared)}) nor a config key or launcher keyword ({', '.join(keys) or 'none'}); "
                      f"{WHEN_FORMS}.")
            return
        if k in dims and not all(_int(x) and dims[k].allows(x) for x in listed):
            found.add(where, dict(when), f"{k} must be {_takes(dims[k])} (or a list of them).")
            return


def _when_predicate(found: _Found, where: tuple, when: Mapping, k: str, v, dim: Dim) -> None:
    """A predicate over a dim answers at the sizes the dim takes, and holds at one of them."""
    shown = {key: when_text(x) for key, x in when.items()}
    if isinstance(v, range) and v.step < 0:
        found.add(where, shown, f"{k}={v!r}: give an increasing range, e.g. range(1, 257) (N <= 256) or "
                  "range(64, 8193, 64) (the multiples of 64 up to 8192).")
        return
    try:
        edges = predicate_edges(dim, v)
    except PredicateError as e:
        size, err = e.args
        found.add(where, shown, f"{k}: the predicate raised {type(err).__name__}({err}) at {k} = {size}: it must "
                  f"answer True or False at every size the dim takes ({_takes(dim)}).")
        return
    if not edges:
        found.add(where, shown, f"{k}: the predicate holds at no size the dim takes ({_takes(dim)}): widen it, or the "
                  "dim's range.")


def _flag(found: _Found, f: Flag) -> None:
    spec, where = found.spec, ("toolchain", "flags", f.key)
    found.fields(f, FLAG_FIELDS, where)
    if (f.name is None) == (f.env is None):
        found.add(where, f"name={f.name!r}, env={f.env!r}", "give either the launcher keyword (kl.Flag('USE_TMA')) or the "
                  "environment variable (kl.Flag(env='MYLIB_FAST')), not both.")
    if found.clean(*where, "set") and f.set == EnvSet.AFTER_IMPORT and f.name is not None:
        found.add(where + ("set",), f.set, "set='after_import' is for an environment variable (kl.Flag(env='MYLIB_FAST', "
                  "set='after_import')): a launcher keyword is passed with every call; drop set=.")
    if found.clean(*where, "name") and found.clean("args") and f.name in spec.args:
        found.add(where + ("name",), f.name, FLAG_FIELDS["name"][0].fix)
    if not found.clean(*where, "values"):
        return
    if f.env is not None and not all(isinstance(v, str) or v is None for v in f.values):
        found.add(where + ("values",), f.values, "an environment variable's values are strings, or None for unset, "
                  "e.g. ('0', '1') or (None, '1').")
    elif f.name is not None and not all(isinstance(v, (bool, int, float, str)) or v is None for v in f.values):
        found.add(where + ("values",), f.values, "give plain values (bool, int, float, str or None): they go into a point and "
                  "its repro command.")


# ---- Spec.grads: the inputs whose gradients the kernel computes ----
GRADS_FIX = "name the tensor inputs whose gradients the kernel's backward computes, e.g. grads=['x', 'w']"


def _grads(found: _Found, tensors: dict) -> None:
    """Each name in `grads` is a floating tensor input (not an Out, not a scalar), named once;
    a collective is judged on its ranks, not differentiated."""
    spec, g = found.spec, found.spec.grads
    if not (isinstance(g, tuple) and all(isinstance(n, str) for n in g)):
        found.add(("grads",), g, GRADS_FIX + ".")
        return
    if not g or not found.clean("args"):
        return
    if spec.collective is not None:
        found.add(("grads",), list(g), "a collective is judged on its ranks' outputs: drop grads=.")
        return
    inputs = list(spec.input_args)
    for n in g:
        if n not in inputs:
            kind = "an output" if n in spec.outputs else "a scalar argument" if n in spec.args else ""
            why = f"{n!r} is {kind}; " if kind else _mean(n, inputs)
            found.add(("grads",), n, f"{why}{GRADS_FIX} (the tensor inputs: {', '.join(inputs) or 'none'}).")
        elif found.clean(*tensors[n][0]) and not _floating(spec, n):
            found.add(("grads",), n, f"{n!r} is not of a floating dtype: no gradient flows to it; drop it from grads.")
    if len(set(g)) != len(g):
        found.add(("grads",), list(g), "name each input once.")


def _floating(spec: Spec, name: str) -> bool:
    t, seen = spec.args[name], {name}
    while t.like is not None and t.like in spec.all_tensors and t.like not in seen:
        seen.add(t.like)
        t = spec.all_tensors[t.like]
    return bool(t.dtypes) and all(d in FLOAT_DTYPES for d in t.dtypes)


# ---- configs: plain dicts or kl.Config(dict, tolerance=...) ----
def _configs(found: _Found) -> None:
    """A kl.Config's keywords are a dict of names, and its tolerance is written as Spec.tolerance is."""
    if not found.clean("configs"):
        return
    for i, c in enumerate(found.spec.configs):
        if not isinstance(c, Config):
            continue
        if not isinstance(c._given, Mapping) or not all(isinstance(k, str) and k.isidentifier() for k in c._given):
            found.add(("configs", i, "values"), c._given, "give the launcher's keyword arguments as a dict, e.g. "
                      "kl.Config({'precise': False}, tolerance={'float32': (1e-3, 1e-5)}).")
        bad = _tolerance_problem(c.tolerance, found.spec)
        if bad is not None:
            found.add(("configs", i, "tolerance"), *bad)


POINT_TIMEOUT_S = 120.0      # a point's default timeout (run/isolation.DEFAULT_TIMEOUT_S), which a stream must stay within


def _calls_budget(found: _Found) -> None:
    """kl.Calls(seconds=) leaves the point room within its timeout: a stream that ran past it
    would be reported as the kernel's hang."""
    spec = found.spec
    s, timeout = spec.repetition.calls.seconds, spec.timeout_s if _number(spec.timeout_s) else POINT_TIMEOUT_S
    if found.clean("repetition", "calls", "seconds") and s is not None and s > timeout / 2:
        found.add(("repetition", "calls", "seconds"), s, f"give at most half the point's timeout ({timeout:g} s): {timeout / 2:g}, or "
                  f"raise Spec(timeout_s=...) to {2 * s:g} or more.")


# ---- a spec's mistakes found when it loads, never charged to the kernel at run time ----
def representable_range(dtype: str, rng) -> tuple[float, float] | None:
    """The smallest and largest values of float `dtype` inside [lo, hi] (both inclusive), or None
    where the dtype holds no value there (an empty range, or one narrower than the dtype's spacing)."""
    import torch
    dt = getattr(torch, dtype)
    lo, hi = float(rng[0]), float(rng[1])
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return None
    fi = torch.finfo(dt)
    a = torch.tensor(max(lo, float(fi.min)), dtype=torch.float64).to(dt)
    b = torch.tensor(min(hi, float(fi.max)), dtype=torch.float64).to(dt)
    if float(a) < lo:                               # rounded below lo: one value up
        a = _next_value(a, lo, up=True)
    if float(b) > hi:
        b = _next_value(b, hi, up=False)
    return (float(a), float(b)) if float(a) <= float(b) else None


def _next_value(v, bound: float, up: bool):
    """`v`'s neighbour in its dtype towards `bound` (rounding moves a bound by at most one value)."""
    import torch
    ints = {8: torch.int64, 4: torch.int32, 2: torch.int16}[v.element_size()]
    x = v.reshape(1).clone()
    for _ in range(4):
        f = float(x)
        if (up and f >= bound) or (not up and f <= bound):
            break
        if f == 0.0:                                # +-0: the smallest subnormal on the bound's side
            fi = torch.finfo(x.dtype)
            x = torch.tensor([fi.tiny * fi.eps if up else -fi.tiny * fi.eps], dtype=torch.float64).to(x.dtype)
        else:
            x.view(ints).add_(-1 if (f > 0) != up else 1)   # up from a negative value shrinks its bits
    return x.reshape(())


def _blame(found: _Found, tensors: dict, dims: dict) -> None:
    """What would otherwise make every point BROKEN, or fail each as the kernel's, found at load."""
    _range_values(found, tensors, dims)
    _signatures(found)
    _links(found)
    _plain_configs(found)
    _env_text(found)
    _rows_in_shapes(found, tensors)
    _grads_mutated(found)


def _corners(names: list[str], dims: dict) -> list[dict[str, int]]:
    """Every dim a range reads at its least and largest size (the range must hold at each)."""
    out = [{}]
    for n in names:
        d = dims[n]
        ends = sorted({d.sizes[0], d.sizes[-1]} if d.sizes else {d.min, d.max})
        out = [{**c, n: e} for c in out for e in ends]
    return out[:64]


def _range_values(found: _Found, tensors: dict, dims: dict) -> None:
    """A range holds a value of its tensor's dtype at every size its dims take: lo <= hi, finite,
    no division by zero, and (floats) some value of the dtype inside it."""
    from .dimexpr import evaluate, names
    for name, (where, t) in tensors.items():
        if t.range is None or not found.clean(*where) or where[0] == "returns" or isinstance(t, Out):
            continue
        read = [n for v in t.range if isinstance(v, str) for n in names(v)]
        if not all(n in dims and found.clean("dims", n) for n in read):
            continue                                  # an undeclared or malformed dim: named already
        for sizes in _corners(list(dict.fromkeys(read)), dims):
            at = f" at {', '.join(f'{k} = {v}' for k, v in sizes.items())}" if sizes else ""
            try:
                lo, hi = (evaluate(v, sizes) if isinstance(v, str) else v for v in t.range)
            except ZeroDivisionError:
                found.add(where + ("range",), t.range, f"the range divides by zero{at}: give (lo, hi) whose expressions "
                          "hold at every size the dims take, e.g. range=(0, 'E-1').")
                break
            if not (math.isfinite(lo) and math.isfinite(hi)):
                found.add(where + ("range",), t.range, "give finite bounds (NaN and infinities are the nonfinite policy's: "
                          "Spec(nonfinite=...)), e.g. range=(0, 1).")
                break
            if lo > hi:
                found.add(where + ("range",), t.range, f"lo > hi{at} ({lo:g} > {hi:g}): give (lo, hi) with lo <= hi at every "
                          "size the dims take (raise the dim's min, or change the bounds).")
                break
            dtypes = _dtypes_of(found.spec, name, tensors)
            bad = next((d for d in dtypes if d in FLOAT_DTYPES and representable_range(d, (lo, hi)) is None), None)
            if bad is not None:
                found.add(where + ("range",), t.range, f"no {bad} value lies in [{lo:g}, {hi:g}]{at}: widen the range to "
                          f"hold at least one {bad} value.")
                break


def _dtypes_of(spec: Spec, name: str, tensors: dict) -> tuple[str, ...]:
    t, seen = tensors[name][1], {name}
    while t.like is not None and t.like in tensors and t.like not in seen:
        seen.add(t.like)
        t = tensors[t.like][1]
    return t.dtypes


def _signature(fn):
    import inspect
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):                   # a builtin or C extension: nothing to bind against
        return None


def _signatures(found: _Found) -> None:
    """The launcher takes the declared args in order and each config's keywords; the reference
    takes the non-Out args in order (a launcher that does not would fail every point as the
    kernel's TypeError)."""
    from .chain import Chain
    spec = found.spec
    if not (found.clean("args") and found.clean("configs") and found.clean("toolchain", "flags")) or spec.collective is not None:
        return
    names = list(spec.args)
    sig = None if isinstance(spec.kernel, Chain) or not callable(spec.kernel) else _signature(spec.kernel)
    if sig is not None:
        keyword = [{f.name: f.values[0]} for f in spec.toolchain.flags if isinstance(f, Flag) and f.name is not None
                   and isinstance(f.values, (list, tuple)) and f.values]
        for config in [dict(c) for c in spec.configs if isinstance(c, Mapping)] or [{}]:
            for extra in keyword or [{}]:
                try:
                    sig.bind(*names, **config, **extra)
                except TypeError as e:
                    found.add(("kernel",), f"{_fn_name(spec.kernel)}{sig}{_defined_at(spec.kernel)}", f"kladder calls kernel({', '.join(names)}"
                              f"{''.join(f', {k}=...' for k in {**config, **extra})}): the args in the order declared, "
                              f"each config's keys as keywords ({e}); make the launcher take them, or declare args in its "
                              "order.")
                    break
            else:
                continue
            break
    rsig = None if isinstance(spec.reference, Chain) or not callable(spec.reference) else _signature(spec.reference)
    if rsig is not None and found.clean("returns"):
        ins = [n for n in names if not isinstance(spec.args[n], Out)]
        for config in [dict(c) for c in spec.configs if isinstance(c, Mapping)] or [{}]:
            kw = spec.reference_keywords(config)
            try:
                rsig.bind(*ins, **kw)
            except TypeError as e:
                found.add(("reference",), f"{_fn_name(spec.reference)}{rsig}{_defined_at(spec.reference)}", f"kladder calls "
                          f"reference({', '.join(ins)}{''.join(f', {k}=...' for k in kw)}): the non-Out args in the order "
                          f"declared, then each config key it takes as a keyword ({e}); {REFERENCE_FIX}")
                break


def _fn_name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _defined_at(fn) -> str:
    """' (defined at path:line)' for a Python function, '' for anything else: where to fix it."""
    import inspect
    import os
    try:
        code = inspect.unwrap(fn).__code__
    except (AttributeError, ValueError):
        return ""
    path = code.co_filename
    try:
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else path
    except ValueError:
        pass
    return f" (defined at {path}:{code.co_firstlineno})"


def _links(found: _Found) -> None:
    """A chain's links: each a kl.Link of a callable with outputs named, and every parameter
    without a default provided by the spec's args, a config key or an earlier link's outputs."""
    from .chain import Chain, Link
    spec = found.spec
    if not found.clean("args"):
        return
    configs = {k for c in spec.configs if isinstance(c, Mapping) for k in c} if found.clean("configs") else set()
    for field, fn in (("kernel", spec.kernel), ("reference", spec.reference)):
        if not isinstance(fn, Chain):
            continue
        scope = set(spec.args) if field == "kernel" else {n for n in spec.args if not isinstance(spec.args[n], Out)}
        scope |= configs if field == "kernel" else set()
        for i, link in enumerate(fn.links):
            where = (field, "links", i)
            if not isinstance(link, Link) or not callable(link.fn):
                found.add(where, link, "give kl.Link(fn, outputs=('name',)) with a callable fn.")
                return
            outs = link.outputs
            if not (isinstance(outs, tuple) and outs and all(isinstance(o, str) and o.isidentifier() for o in outs)):
                found.add(where + ("outputs",), outs, "name the link's outputs with identifiers, e.g. outputs=('q', 'scale').")
                return
            sig = _signature(link.fn)
            if sig is not None:
                missing = [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                           and p.default is p.empty and p.name not in scope]
                if missing:
                    found.add(where, link.name, f"nothing provides {', '.join(map(repr, missing))}: a link's parameters "
                              f"are the spec's args ({', '.join(sorted(scope - configs)) or 'none'}), config keys or an "
                              "earlier link's outputs; rename the parameter, or declare outputs= on the link that makes it.")
                    return
            scope |= set(outs)


def _plain(v) -> bool:
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v))


def _plain_configs(found: _Found) -> None:
    """A config's values go into a point, its id and its repro command as JSON: plain values only."""
    if not found.clean("configs"):
        return
    for i, c in enumerate(found.spec.configs):
        if not isinstance(c, Mapping):
            continue
        for k, v in c.items():
            if not _plain(v):
                found.add(("configs", i, k), v, "give plain values (bool, int, finite float, str, None, or lists of them): a "
                          "config goes into a point and its repro command as JSON; pass a name the launcher maps "
                          "(e.g. 'float16' for torch.float16).")


def _nul(v) -> bool:
    return isinstance(v, str) and "\x00" in v


def _env_text(found: _Found) -> None:
    """Environment names and values hold no NUL byte (no process can be given one)."""
    spec = found.spec
    if found.clean("toolchain", "flags"):
        for f in spec.toolchain.flags:
            if isinstance(f, Flag) and (_nul(f.env) or any(_nul(v) for v in f.values or ())):
                found.add(("toolchain", "flags", f.key), f.env if _nul(f.env) else f.values, "an environment variable's name and "
                          "values cannot hold a NUL byte ('\\x00'): remove it.")
    if found.clean("toolchain", "expect"):
        for i, e in enumerate(spec.toolchain.expect):
            when = e.when if isinstance(e, Expect) and isinstance(e.when, Mapping) else {}
            for k, v in when.items():
                vals = v if isinstance(v, (list, tuple)) else [v]
                if isinstance(k, str) and k.startswith("$") and (_nul(k) or any(_nul(x) for x in vals)):
                    found.add(("toolchain", "expect", i, "when"), dict(when), "an environment variable's name and values cannot "
                              "hold a NUL byte ('\\x00'): remove it.")


def _rows_in_shapes(found: _Found, tensors: dict) -> None:
    """`rows` names dims of the tensors' shapes: the rows a big point checks are rows of them."""
    spec = found.spec
    if not (found.clean("rows") and found.clean("args") and found.clean("returns") and _named(found)):
        return
    symbols = {s for _, t in tensors.values() if isinstance(t.shape, str) for s in t.symbols}
    for r in spec.row_dims:
        if r in _declared(found) and r not in symbols:
            found.add(("rows",), spec.rows, f"no tensor's shape uses {r!r}: rows are a dim of the tensors' shapes "
                      f"({', '.join(f'{n}={t.shape!r}' for n, (_, t) in tensors.items())}); name one, or drop rows=.")


def _grads_mutated(found: _Found) -> None:
    """A gradient with respect to an input the forward overwrites is not defined."""
    spec = found.spec
    if not (found.clean("grads") and found.clean("args")) or not isinstance(spec.grads, tuple):
        return
    for n in spec.grads:
        t = spec.args.get(n)
        if isinstance(t, Tensor) and t.mutated is True:
            found.add(("grads",), n, f"{n!r} is mutated= (the forward writes it in place): its gradient is not defined; "
                      "drop it from grads, or drop mutated=.")
