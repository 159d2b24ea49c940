"""The parts: what one rung needs, apart from the core every kernel has (kl.Modes, kl.Repetition
with kl.Calls, kl.Collective, kl.Toolchain with kl.Expect and kl.Flag, kl.InModel), and a
`when`'s predicates over a dim (its edges, where rung 7 puts points)."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..notation import EnvSet, Needs
from ..problems import friendly as _friendly
from .fields import as_seq as _seq, as_tuple as _tuple, as_word as _word, convert as _convert, is_int as _int
from .fields import Dim, dtype_name


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
    - a dtype: {"dtype": "bfloat16"} (the first input's), {"dtype:w": "float32"} (the tensor w's), a
      list of dtypes or a callable dtype name -> bool; rung 7 puts points at the dtypes where it holds
      and at one where it does not;
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

    def __post_init__(self):
        if isinstance(self.when, Mapping) and any(map(is_dtype_key, self.when)):
            names = lambda v: [dtype_name(x) for x in v] if isinstance(v, (list, tuple)) else dtype_name(v)
            object.__setattr__(self, "when", {k: names(v) if is_dtype_key(k) else v for k, v in self.when.items()})

    def refuses(self, error: BaseException) -> bool:
        """A runs=False expectation's launcher refused with `error`: one of `raises` (any Exception when None)."""
        return not self.runs and isinstance(error, self.raises or Exception)


BOOLS = (False, True)
DTYPE_KEY = "dtype"          # Expect(when={"dtype": "bfloat16"}): the first input's dtype; "dtype:w": the tensor w's


def is_dtype_key(key) -> bool:
    """A `when` key that names a dtype: 'dtype' or 'dtype:NAME'."""
    return isinstance(key, str) and (key == DTYPE_KEY or key.startswith(DTYPE_KEY + ":"))


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


@_friendly("kl.Calls")
@dataclass(frozen=True)
class Calls:
    """How the model calls the kernel, for a launcher with state (a workspace, a ring of slots,
    counters, a cache of recent results): `pattern` is one step of the model, each letter an
    input set in the order the model passes them ("AABB": twice on the same logits, then twice
    on new ones; "A": new inputs every call); `fresh=True`: every step brings new input sets
    (False: every step the same ones); `count`: how many calls a run of the model makes. Rung 5
    drives a stream of that many calls in that pattern (within its time budget, `seconds` to
    widen it), each judged against the reference of its own inputs. `configs` binds letters to
    declared configs, {"A": {"BLOCK": 64}, "B": {"BLOCK": 128}}: every call on that letter's input
    sets passes that config (the kernel's keywords, the reference's where it takes them), so a
    launcher whose state outlives a change of config (a plan, a workspace sized by the first
    config) meets the model's interleaving; a letter left out runs the launcher's own call."""

    pattern: str = "A"
    fresh: bool = True
    count: int = 10_000
    seconds: float | None = None
    configs: Mapping[str, Mapping] | None = None

    @property
    def letters(self) -> str:
        """The pattern's input sets in order of first use: "AABB" -> "AB"."""
        return "".join(dict.fromkeys(self.pattern))

    def config_of(self, letter: str) -> tuple:
        """The config (its pairs, as a point holds it) of the calls on `letter`'s input sets: () where none is bound."""
        return tuple((self.configs or {}).get(letter, {}).items())


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
