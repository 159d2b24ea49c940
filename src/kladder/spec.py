"""What a kernel's author knows: argument shapes as symbols, dtypes, dim ranges and tiles,
the widths real models use, accepted configs, production shapes, tolerances.

A Spec never holds a failing point. Every field is validated once, at construction, and a
bad field raises one SpecError that names the field, what was given and the fix.
"""
from __future__ import annotations

import difflib
import functools
import math
from dataclasses import MISSING, dataclass, fields
from typing import Any, Callable, Mapping

DTYPES = (
    "float64", "float32", "float16", "bfloat16",
    "int64", "int32", "int16", "int8", "uint8", "bool",
)
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


class SpecError(ValueError):
    """A malformed spec: says which field, what was given, and the fix."""

    def __init__(self, where: str, given: Any, fix: str):
        self.where, self.given, self.fix = where, given, fix
        super().__init__(f"{where}: got {_shown(given)}. {fix}")


def _shown(v: Any) -> str:
    """A given value as the user wrote it: a class by its name, a long value cut short."""
    if isinstance(v, type):
        return f"the class kl.{v.__name__}" if v.__module__.startswith("kladder") else f"the class {v.__name__}"
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


def _friendly(label: str):
    """A kladder class whose constructor answers a misspelt, missing or extra argument with a
    SpecError that names it and the fields there are (a typo must not be a traceback)."""
    def wrap(cls):
        init = cls.__init__
        names = [f.name for f in fields(cls)]
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            where = f"{label}({args[0]!r})" if label == "kl.Spec" and args and isinstance(args[0], str) else label
            for k in kwargs:
                if k not in names:
                    close = difflib.get_close_matches(k, names, 1)
                    hint = f"did you mean {close[0]!r}? " if close else ""
                    raise SpecError(f"{where}.{k}", kwargs[k], f"{label} has no field {k!r}; {hint}its fields are "
                                    f"{', '.join(names)}.")
            if len(args) > len(names):
                raise SpecError(where, args, f"{label} takes at most {len(names)} positional arguments ({', '.join(names)}); "
                                "pass the rest by name.")
            given = set(names[:len(args)]) | set(kwargs)
            missing = [n for n in required if n not in given]
            if missing:
                raise SpecError(f"{where}.{missing[0]}", None, f"{label} needs {', '.join(missing)} "
                                f"(its fields are {', '.join(names)}).")
            init(self, *args, **kwargs)
        cls.__init__ = __init__
        return cls
    return wrap


def _dtype_name(v):
    """torch.float32 -> 'float32': a spec may name a dtype either way."""
    if type(v).__name__ == "dtype" and type(v).__module__ == "torch":
        return str(v).removeprefix("torch.")
    return v


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

    @property
    def tiles(self) -> tuple[int, ...]:
        if self.tile is None:
            return ()
        return (self.tile,) if isinstance(self.tile, int) else tuple(self.tile)


VALUE_KINDS = ("normal", "peaked", "ties", "identical", "distinct", "tiny", "huge", "nonfinite",
               "lengths", "masked", "ones")
DEFAULT_FLOAT_VALUES = ("peaked", "ties", "identical", "distinct", "tiny", "huge")
LAYOUTS = ("sliced", "every_other", "transposed", "offset", "shifted", "broadcast", "channels_last")
NONFINITE_POLICIES = ("propagate", "ignore", "raise")


@_friendly("kl.Tensor")
@dataclass(frozen=True)
class Tensor:
    """A tensor argument or output: shape as symbols ("M N"), and a dtype list or `like`.

    values:  the rung-2 value kinds this input admits (VALUE_KINDS); None = by dtype.
    range:   (lo, hi) inclusive; hi may name a dim. Values are drawn within it at every rung.
    valid:   packed rows: only the first `valid` elements of the last dim are data (int or dim).
    layouts: the rung-3 layouts this input accepts (LAYOUTS); None = all that its rank allows.
    mutated: the kernel writes this input in place, as production means it to (an in-place
             epilogue, a cache the kernel appends to). Without it every input must hold, after
             each call, the bytes it was passed (checks/inputs.py). With it the reference must
             do the same to its own copy (it is called on copies: mutate the copy in place),
             and the kernel's buffer after the call is judged against the reference's copy
             after the reference's call, at the tolerance of the input's dtype."""

    shape: str
    dtype: str | tuple[str, ...] | list[str] | None = None
    like: str | None = None
    values: str | tuple[str, ...] | list[str] | None = None
    range: tuple | list | None = None
    valid: int | str | None = None
    layouts: str | tuple[str, ...] | list[str] | None = None
    mutated: bool = False

    def __post_init__(self):
        d = self.dtype
        if isinstance(d, (list, tuple)):
            object.__setattr__(self, "dtype", type(d)(_dtype_name(x) for x in d))
        else:
            object.__setattr__(self, "dtype", _dtype_name(d))

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(self.shape.split())

    @property
    def dtypes(self) -> tuple[str, ...]:
        if self.dtype is None:
            return ()
        return (self.dtype,) if isinstance(self.dtype, str) else tuple(self.dtype)

    def value_kinds(self, dtype: str, nonfinite: str | None) -> tuple[str, ...]:
        """The rung-2 value kinds of this input: as declared, or by dtype."""
        if self.values is not None:
            return (self.values,) if isinstance(self.values, str) else tuple(self.values)
        if dtype in FLOAT_DTYPES:
            return DEFAULT_FLOAT_VALUES + (("nonfinite",) if nonfinite else ())
        return ("lengths",) if self.range is not None else ()

    def layout_list(self) -> tuple[str, ...]:
        """The rung-3 layouts of this input: as declared, or every one its rank allows."""
        rank = len(self.symbols)
        if self.layouts is not None:
            chosen = (self.layouts,) if isinstance(self.layouts, str) else tuple(self.layouts)
        else:
            chosen = LAYOUTS
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
    applies: dims or config keys -> a value or a list of values (None: every rung-7 point);
    rung 7 puts a point at every shape it names, contiguous and not. `launch` holds the
    constexpr and launch-option values that launch must have (the tuned config). `label` is
    what a report calls it: "the decode kernel", "the tuned config"."""

    kernel: str
    when: Mapping[str, Any] | None = None
    launch: Mapping[str, Any] | None = None
    label: str = ""


BOOLS = (False, True)


@_friendly("kl.Flag")
@dataclass(frozen=True)
class Flag:
    """A flag that must change the code (rung 7): a keyword the launcher takes (`name`), or an
    environment variable the kernel's library reads (`env`), and the values to compare.
    kladder runs the kernel once per value and fails a flag whose values all launch the same
    code (on CUDA the compiled binaries; under Triton's interpreter the kernel's source and the
    constexprs it reads)."""

    name: str | None = None
    env: str | None = None
    values: tuple | list = BOOLS

    def __post_init__(self):
        if self.env is not None and self.values is BOOLS:
            object.__setattr__(self, "values", ("0", "1"))     # the default for a variable: an environment holds strings

    @property
    def key(self) -> str:
        """How points and reports name it: the keyword, or $VAR for an environment variable."""
        return self.name if self.name is not None else f"${self.env}"


@_friendly("kl.Out")
@dataclass(frozen=True)
class Out(Tensor):
    """An out-argument: allocated and poisoned by kladder, written by the kernel."""


COLLECTIVE_REFERENCES = {"all_reduce": ("sum", "max", "min", "product"), "all_gather": ("",)}


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
    needs: str = ""
    share_device: bool = False
    world_dim: str | None = None
    lag_us: int | None = None
    watchdog_s: float | None = None

    @property
    def worlds(self) -> tuple[int, ...]:
        return (self.world,) if isinstance(self.world, int) else tuple(self.world)


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


# torch.testing's defaults, by output dtype. The absolute part is scaled by the reference
# row's RMS in compare.py, so that elements near zero are not flagged for rounding noise.
DEFAULT_TOLERANCES = {
    "float64": Tolerance(1e-7, 1e-7),
    "float32": Tolerance(1.3e-6, 1e-5),
    "float16": Tolerance(1e-3, 1e-5),
    "bfloat16": Tolerance(1.6e-2, 1e-5),
}


@_friendly("kl.Spec")
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
    slot: Any = None                      # rung 8: a slot of kladder's model ("rmsnorm", or ("rmsnorm", fn) when the
                                          # slot takes another callable than `kernel`), or a kladder.model.Adapter
    model_tolerance: float = 0.02         # rung 8: the largest exact-match drop that passes
    model_nll_tolerance: float = 0.03     # rung 8: the largest relative rise of the answers' NLL that passes (correct kernels: +-0.6%)
    expect: tuple | list = ()             # rung 7: kernels that must run: name globs or kl.Expect(kernel, when=, launch=, label=)
    flags: tuple | list = ()              # rung 7: kl.Flag(name) / kl.Flag(env=...) that must change the code
    imports: tuple | list = ()            # rung 7: "pkg.mod:name" that downstream code imports: must resolve to what is tested
    collective: Any = None                # rung 6: a kl.Collective; the kernel then runs on every rank, and `reference` is None
    deterministic: bool = False           # rung 5: the same inputs give the same bits on every call (no float atomics,
                                          # no order that depends on timing); without it a difference within the
                                          # tolerance is a warning (nondeterminism), beyond it a failure
    graphs: bool | None = None            # rung 4: production runs the kernel captured in CUDA graphs. True (claimed):
                                          # a kernel that cannot be captured fails; False (not claimed): a graph
                                          # point whose capture fails is skipped with a note; None (not said): a
                                          # failed capture is a warning. A capture that replays wrong fails whatever
                                          # it says.

    def __post_init__(self):
        validate(self)
        from .chain import Chain
        if isinstance(self.kernel, Chain):       # chains are called positionally: give them the names
            object.__setattr__(self, "kernel", self.kernel.bound(self.args))
        if isinstance(self.reference, Chain):
            object.__setattr__(self, "reference", self.reference.bound(n for n in self.args if n not in self.out_args))

    def slot_target(self) -> tuple[Any, Callable]:
        """(slot name or adapter, the callable that goes into it)."""
        if isinstance(self.slot, tuple):
            return self.slot[0], self.slot[1]
        return self.slot, self.kernel

    def range_of(self, name: str, sizes: dict[str, int]) -> tuple | None:
        r = self.all_tensors[name].range
        if r is None:
            return None
        return tuple(sizes[v] if isinstance(v, str) else v for v in r)

    def valid_of(self, name: str, sizes: dict[str, int]) -> int | None:
        v = self.all_tensors[name].valid
        return sizes[v] if isinstance(v, str) else v

    @property
    def expectations(self) -> tuple[Expect, ...]:
        return tuple(Expect(e) if isinstance(e, str) else e for e in self.expect)

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
        """Inputs the kernel writes in place by design (kl.Tensor(mutated=True))."""
        return {k: v for k, v in self.input_args.items() if v.mutated}

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
        return {**self.tensor_args, **self.returned}

    @property
    def row_dims(self) -> tuple[str, ...]:
        if self.rows is None:
            return ()
        return (self.rows,) if isinstance(self.rows, str) else tuple(self.rows)

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

    def tolerance_for(self, dtype: str) -> Tolerance:
        tol = self.tolerance
        if tol is None:
            return DEFAULT_TOLERANCES.get(dtype, Tolerance(0.0, 0.0))
        if isinstance(tol, Tolerance):
            return tol
        if isinstance(tol, tuple):
            return Tolerance(*tol)
        if dtype in tol:
            return Tolerance(*tol[dtype]) if isinstance(tol[dtype], tuple) else tol[dtype]
        return DEFAULT_TOLERANCES.get(dtype, Tolerance(0.0, 0.0))


# --------------------------------------------------------------------------- validation
def _fail(where, given, fix):
    raise SpecError(where, given, fix)


def validate(spec: Spec) -> None:
    _validate_head(spec)
    _validate_kinds(spec)
    _validate_dims(spec)
    _validate_tensors(spec)
    _validate_shape_lists(spec)
    _validate_tolerance(spec)
    _validate_values(spec)
    _validate_use(spec)
    _validate_toolchain(spec)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate_kinds(spec: Spec) -> None:
    """Each field of the right kind before any is read: a wrong kind gets its own message,
    never a traceback from deeper in."""
    name = spec.name
    for key, v in spec.args.items():
        where = f"Spec({name!r}).args[{key!r}]"
        if not isinstance(key, str) or not key.isidentifier():
            _fail(f"Spec({name!r}).args", key, "name every argument with a Python identifier, as the kernel's parameter is named.")
        if isinstance(v, type):
            _fail(where, v, f"call it: kl.Tensor('M N', dtype='bfloat16') (or kl.Out(...)), not the class itself.")
    for key, d in spec.dims.items():
        if not isinstance(key, str) or not key.isidentifier():
            _fail(f"Spec({name!r}).dims", key, "name every dim with an identifier used in the shapes, e.g. {'N': kl.Dim(1, 4096)}.")
        if isinstance(d, type):
            _fail(f"Spec({name!r}).dims[{key!r}]", d, "call it: kl.Dim(1, 4096, tile=64), not the class itself.")
    r = spec.returns
    if r is not None:
        items = {"out": r} if isinstance(r, Tensor) else r if isinstance(r, Mapping) else None
        if items is None:
            _fail(f"Spec({name!r}).returns", r, "give kl.Tensor('M N', like='x') for one output, or a dict of name -> kl.Tensor "
                  "for several, in the order the kernel returns them.")
        for key, t in items.items():
            where = f"Spec({name!r}).returns[{key!r}]"
            if not isinstance(key, str) or not key.isidentifier():
                _fail(f"Spec({name!r}).returns", key, "name every returned output with an identifier.")
            if isinstance(t, type) or not isinstance(t, Tensor):
                _fail(where, t, "give a kl.Tensor('M N', like='x'), the returned tensor's shape and dtype.")
            if isinstance(t, Out):
                _fail(where, t, "a kl.Out is an argument the kernel writes into: declare it in args; a tensor the kernel "
                      "returns is a kl.Tensor.")
            if key in spec.args:
                _fail(where, t, f"{key!r} is also an argument; give the returned output another name (e.g. {key + '_out'!r}).")
    if spec.timeout_s is not None and (not _is_number(spec.timeout_s) or not spec.timeout_s > 0):
        _fail(f"Spec({name!r}).timeout_s", spec.timeout_s, "give the seconds a point may run as a number above 0, e.g. 60.")
    for t_name, t in spec.all_tensors.items():
        _validate_tensor_kinds(spec, t_name, t)
    if not spec.outputs:
        _fail(f"Spec({spec.name!r}).returns", spec.returns, "declare the outputs: returns=kl.Tensor('M N', like='x'), or an kl.Out(...) argument.")


def _validate_tensor_kinds(spec: Spec, name: str, t: Tensor) -> None:
    where = f"Spec({spec.name!r}).args[{name!r}]" if name in spec.args else f"Spec({spec.name!r}).returns[{name!r}]"
    if not isinstance(t.shape, str):
        _fail(where + ".shape", t.shape, "write the shape as symbols separated by spaces, e.g. 'M N' (use '' for a 0-d tensor).")
    d = t.dtype
    if d is not None and not (isinstance(d, str) or (isinstance(d, (list, tuple)) and d and all(isinstance(x, str) for x in d))):
        _fail(where + ".dtype", d, f"give a dtype name or a list of them, from {DTYPES} (torch.float32 works too).")
    if t.like is not None and not isinstance(t.like, str):
        _fail(where + ".like", t.like, "name another tensor argument, e.g. like='x'.")
    for field_name in ("values", "layouts"):
        v = getattr(t, field_name)
        if v is not None and not (isinstance(v, str) or (isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v))):
            _fail(f"{where}.{field_name}", v, f"give a list of names, e.g. {field_name}=['peaked', 'ties'] or [] for none."
                  if field_name == "values" else f"give a list of layout names, e.g. layouts=['sliced'], or [] for none.")
    output = isinstance(t, Out) or name not in spec.args
    if not isinstance(t.mutated, bool):
        _fail(where + ".mutated", t.mutated, "give True for an input the kernel writes in place by design, or leave it out.")
    if t.mutated and output:
        _fail(where + ".mutated", t.mutated, "mutated= marks an input the kernel also writes; an output (kl.Out or "
              "returns=) is written anyway: drop mutated=.")
    if output:
        for field_name in ("values", "range", "layouts"):
            if getattr(t, field_name) is not None:
                _fail(f"{where}.{field_name}", getattr(t, field_name), f"an output holds what the kernel writes: kladder "
                      f"chooses no {field_name} for it; drop {field_name}=.")


def _dims_used(spec: Spec) -> set:
    """The dims something reads: a tensor's shape, a value range (range=(1, "L")), a valid length
    (valid="V"), or `rows`. A dim no shape uses is a size the points choose and that the spec's
    values or its build= function read (a paged cache's max_len: lens in 1..L, a page table of
    ceil(L / 16) columns)."""
    used = {s for t in spec.all_tensors.values() for s in t.symbols}
    for t in spec.all_tensors.values():
        if isinstance(t.range, (tuple, list)):
            used |= {v for v in t.range if isinstance(v, str)}
        if isinstance(t.valid, str):
            used.add(t.valid)
    rows = spec.rows
    used |= {rows} if isinstance(rows, str) else {r for r in rows if isinstance(r, str)} if isinstance(rows, (list, tuple)) else set()
    return used


def _validate_use(spec: Spec) -> None:
    """Every dim is used (by a shape, a value range, a valid length or `rows`), and `rows` names dims."""
    used = _dims_used(spec)
    for d in spec.dims:
        if d not in used:
            _fail(f"Spec({spec.name!r}).dims[{d!r}]", spec.dims[d], f"nothing uses {d!r}: no tensor's shape, value range "
                  f"(range=(1, {d!r})), valid= or rows; drop it, or use it in a shape "
                  f"(shapes: {', '.join(f'{n}={t.shape!r}' for n, t in spec.all_tensors.items())}).")
    rows = spec.rows
    if rows is not None:
        if not (isinstance(rows, str) or (isinstance(rows, (list, tuple)) and all(isinstance(r, str) for r in rows))):
            _fail(f"Spec({spec.name!r}).rows", rows, "name the dim (or dims) whose rows are independent, e.g. rows='M'.")
    if spec.collective is not None:
        _validate_collective(spec)
    if spec.rows is not None:
        for r in spec.row_dims:
            if r not in spec.dims:
                _fail(f"Spec({spec.name!r}).rows", rows, f"name dims declared in `dims` ({', '.join(spec.dims)}).")


def _validate_head(spec: Spec) -> None:
    if not isinstance(spec.name, str) or not spec.name.isidentifier():
        _fail("Spec.name", spec.name, "use a Python identifier such as 'rmsnorm'; it becomes a pytest id and a file name.")
    if not callable(spec.kernel):
        _fail(f"Spec({spec.name!r}).kernel", spec.kernel, "pass the kernel's launcher, a callable taking the args in order.")
    if not callable(spec.reference) and not (spec.reference is None and spec.collective is not None):
        _fail(f"Spec({spec.name!r}).reference", spec.reference, "pass a reference callable (plain torch), taking the non-Out args in order.")
    if not isinstance(spec.args, Mapping) or not spec.args:
        _fail(f"Spec({spec.name!r}).args", spec.args, "give a dict of argument name -> kl.Tensor, kl.Out or a scalar, in call order.")
    if not isinstance(spec.dims, Mapping):
        _fail(f"Spec({spec.name!r}).dims", spec.dims, "give a dict of symbol -> kl.Dim, e.g. {'N': kl.Dim(1, 8192, tile=64)}.")
    if spec.build is not None and not callable(spec.build):
        _fail(f"Spec({spec.name!r}).build", spec.build, "pass a callable (point, generator) -> dict of tensors, or leave it out.")
    if spec.reference_dtype not in FLOAT_DTYPES:
        _fail(f"Spec({spec.name!r}).reference_dtype", spec.reference_dtype, f"use one of {FLOAT_DTYPES}.")
    if not isinstance(spec.deterministic, bool):
        _fail(f"Spec({spec.name!r}).deterministic", spec.deterministic, "give True when the same inputs must give the same "
              "bits on every call (rung 5 then fails any difference), or False (the default).")
    if not isinstance(spec.graphs, (bool, type(None))):
        _fail(f"Spec({spec.name!r}).graphs", spec.graphs, "say whether production runs the kernel captured in CUDA graphs: "
              "True (a failed capture then fails rung 4), False (a failed capture skips the point), or leave it out "
              "(None: a failed capture is a warning).")


def _validate_dims(spec: Spec) -> None:
    for name, d in spec.dims.items():
        where = f"Spec({spec.name!r}).dims[{name!r}]"
        if not isinstance(d, Dim):
            _fail(where, d, f"use kl.Dim(min, max, tile=..., widths=[...]), e.g. kl.Dim(1, 8192, tile=64).")
        if (not (isinstance(d.min, int) and isinstance(d.max, int)) or isinstance(d.min, bool) or isinstance(d.max, bool)
                or d.min < 0 or d.max < d.min):
            _fail(where + ".min/max", (d.min, d.max), "give integers with 0 <= min <= max.")
        for field_name in ("widths", "chunks"):
            v = getattr(d, field_name)
            if not isinstance(v, (list, tuple)):
                _fail(f"{where}.{field_name}", v, f"give a list, e.g. {field_name}=[{v!r}]." if isinstance(v, int) else
                      f"give a list of ints, e.g. {field_name}=[2880, 4096].")
        if d.tile is not None and not isinstance(d.tile, (int, list, tuple)):
            _fail(where + ".tile", d.tile, "give a positive int tile (or a list of them), the block size the kernel cuts this dim into.")
        for t in d.tiles:
            if not isinstance(t, int) or isinstance(t, bool) or t <= 0:
                _fail(where + ".tile", d.tile, "give a positive int tile (or a list of them), the block size the kernel cuts this dim into.")
        for w in d.widths:
            if not isinstance(w, int) or not d.min <= w <= d.max:
                _fail(where + ".widths", list(d.widths), f"give integer widths within [{d.min}, {d.max}], or widen the range.")


def _validate_tensors(spec: Spec) -> None:
    tensors = spec.all_tensors
    for name, t in tensors.items():
        where = f"Spec({spec.name!r}).args[{name!r}]" if name in spec.args else f"Spec({spec.name!r}).returns[{name!r}]"
        if not isinstance(t.shape, str):
            _fail(where + ".shape", t.shape, "write the shape as symbols separated by spaces, e.g. 'M N' (use '' for a 0-d tensor).")
        for s in t.symbols:
            if not (s.isdigit() or s in spec.dims):
                _fail(where + ".shape", t.shape, f"declare {s!r} in dims, e.g. dims={{{s!r}: kl.Dim(1, 4096, tile=64)}}, or use a literal size.")
        if t.like is not None:
            if t.like not in tensors or t.like == name:
                _fail(where + ".like", t.like, f"name another tensor argument ({', '.join(n for n in tensors if n != name)}).")
            if t.dtype is not None:
                _fail(where, f"dtype={t.dtype!r}, like={t.like!r}", "give either dtype or like, not both.")
        else:
            if not t.dtypes:
                _fail(where + ".dtype", t.dtype, f"give a dtype or a list of dtypes from {DTYPES}, or like='<other arg>'.")
            for dt in t.dtypes:
                if dt not in DTYPES:
                    hint = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}.get(dt)
                    _fail(where + ".dtype", dt, f"use {hint!r}." if hint else f"use one of {DTYPES}.")
    _check_like_cycles(spec, tensors)


def _check_like_cycles(spec: Spec, tensors: dict[str, Tensor]) -> None:
    for name in tensors:
        seen, cur = {name}, tensors[name]
        while cur.like is not None:
            if cur.like in seen:
                _fail(f"Spec({spec.name!r}).args[{name!r}].like", cur.like, "break the cycle: one tensor in a `like` chain needs a dtype.")
            seen.add(cur.like)
            cur = tensors[cur.like]


def _validate_shape_lists(spec: Spec) -> None:
    for fname in ("configs", "production", "tuned"):
        items = getattr(spec, fname)
        if not isinstance(items, (list, tuple)) or not all(isinstance(c, Mapping) for c in items):
            _fail(f"Spec({spec.name!r}).{fname}", items, f"give a list of dicts, e.g. [{{'BLOCK': 128}}]." if fname == "configs"
                  else f"give a list of dicts over the dims, e.g. [{{{', '.join(repr(d) + ': 1' for d in spec.dims)}}}].")
    for fname in ("production", "tuned"):
        for shape in getattr(spec, fname):
            if set(shape) != set(spec.dims) and not set(spec.dims) <= set(shape):
                _fail(f"Spec({spec.name!r}).{fname}", dict(shape), f"give a size for every dim: {', '.join(spec.dims)}.")
            for d, v in shape.items():
                if d in spec.dims and (not isinstance(v, int) or not spec.dims[d].min <= v <= spec.dims[d].max):
                    _fail(f"Spec({spec.name!r}).{fname}", dict(shape), f"{d} must be an int within [{spec.dims[d].min}, {spec.dims[d].max}].")
    clash = [k for c in spec.configs for k in c if k in spec.args]
    if clash:
        _fail(f"Spec({spec.name!r}).configs", list(spec.configs), f"config keys {clash} collide with args; configs are extra keyword arguments.")


def _validate_values(spec: Spec) -> None:
    name = spec.name
    for a, t in spec.all_tensors.items():
        where = f"Spec({name!r}).args[{a!r}]" if a in spec.args else f"Spec({name!r}).returns[{a!r}]"
        if t.values is not None:
            kinds = (t.values,) if isinstance(t.values, str) else t.values
            for k in kinds:
                if k not in VALUE_KINDS:
                    _fail(where + ".values", t.values, f"use value kinds from {VALUE_KINDS}, or [] for none.")
            if "nonfinite" in kinds and spec.nonfinite is None:
                _fail(where + ".values", t.values, "'nonfinite' needs the spec's NaN/Inf policy: Spec(nonfinite='propagate' | 'ignore' | 'raise').")
        if t.range is not None:
            r = t.range
            ok = isinstance(r, (tuple, list)) and len(r) == 2 and all(
                (isinstance(v, (int, float)) and not isinstance(v, bool)) or (isinstance(v, str) and v in spec.dims) for v in r)
            if not ok:
                _fail(where + ".range", r, "give (lo, hi), inclusive, numbers or dim names, e.g. range=(1, 'S').")
        if t.valid is not None:
            v = t.valid
            if not ((isinstance(v, int) and not isinstance(v, bool) and v >= 0) or (isinstance(v, str) and v in spec.dims)):
                _fail(where + ".valid", v, "give the number of valid elements of the last dim (an int or a dim name); the rest is padding.")
            if not t.symbols:
                _fail(where + ".valid", v, "a 0-d tensor has no rows to pad; drop `valid`.")
        if t.layouts is not None:
            lays = (t.layouts,) if isinstance(t.layouts, str) else t.layouts
            for lay in lays:
                if lay not in LAYOUTS:
                    _fail(where + ".layouts", t.layouts, f"use layouts from {LAYOUTS}, or [] for contiguous only.")
    for d, dim in spec.dims.items():
        for c in dim.chunks:
            if not isinstance(c, int) or isinstance(c, bool) or c <= 0:
                _fail(f"Spec({name!r}).dims[{d!r}].chunks", list(dim.chunks), "give positive int chunk sizes, e.g. chunks=[256].")
    if spec.nonfinite is not None and spec.nonfinite not in NONFINITE_POLICIES:
        _fail(f"Spec({name!r}).nonfinite", spec.nonfinite, f"use one of {NONFINITE_POLICIES}, or None for no NaN/Inf points.")
    invs = spec.invariants
    if not isinstance(invs, (list, tuple)) or not all(isinstance(i, Invariant) for i in invs):
        _fail(f"Spec({name!r}).invariants", invs, "give a list of kl.Invariant(name, check, values=None).")
    for inv in invs:
        if not callable(inv.check):
            _fail(f"Spec({name!r}).invariants[{inv.name!r}].check", inv.check, "pass a callable (inputs, outputs) -> bool or bool tensor.")
        for a, k in (inv.values or {}).items():
            if a not in spec.input_args:
                _fail(f"Spec({name!r}).invariants[{inv.name!r}].values", dict(inv.values), f"name input args ({', '.join(spec.input_args)}).")
            if k not in VALUE_KINDS:
                _fail(f"Spec({name!r}).invariants[{inv.name!r}].values", dict(inv.values), f"use value kinds from {VALUE_KINDS}.")
    slot = spec.slot
    if slot is not None and not (isinstance(slot, str) or hasattr(slot, "score")
                                 or (isinstance(slot, tuple) and len(slot) == 2 and isinstance(slot[0], str) and callable(slot[1]))):
        _fail(f"Spec({name!r}).slot", slot, "name a slot of kladder's model ('rmsnorm', 'attention_decode', ...), give "
              "(slot, callable) when the slot takes another callable than `kernel`, or a kladder.model.Adapter.")
    if not isinstance(spec.model_nll_tolerance, (int, float)) or spec.model_nll_tolerance < 0:
        _fail(f"Spec({name!r}).model_nll_tolerance", spec.model_nll_tolerance, "give the largest relative rise of the answers' "
              "negative log-likelihood that passes, >= 0 (e.g. 0.05 for 5%).")
    if not isinstance(spec.model_tolerance, (int, float)) or not 0 <= spec.model_tolerance <= 1:
        _fail(f"Spec({name!r}).model_tolerance", spec.model_tolerance, "give the largest score drop that passes, between 0 and 1 (e.g. 0.02).")


def _validate_tolerance(spec: Spec) -> None:
    tol = spec.tolerance
    if tol is None or isinstance(tol, Tolerance):
        return
    pairs = [tol] if isinstance(tol, tuple) else list(tol.values()) if isinstance(tol, Mapping) else None
    if pairs is None:
        _fail(f"Spec({spec.name!r}).tolerance", tol, "give (rtol, atol), kl.Tolerance(rtol, atol), or {'bfloat16': (rtol, atol)}.")
    if isinstance(tol, Mapping):
        bad = [k for k in tol if k not in DTYPES]
        if bad:
            _fail(f"Spec({spec.name!r}).tolerance", tol, f"key by dtype names from {DTYPES}; {bad} is not one.")
    for p in pairs:
        vals = (p.rtol, p.atol) if isinstance(p, Tolerance) else p
        if not (isinstance(vals, tuple) and len(vals) == 2 and all(isinstance(v, (int, float)) and v >= 0 and math.isfinite(v) for v in vals)):
            _fail(f"Spec({spec.name!r}).tolerance", tol, "each tolerance is (rtol, atol): two finite numbers >= 0.")


def _validate_toolchain(spec: Spec) -> None:
    """Rung 7's fields: expect, flags, imports."""
    name = spec.name
    if not isinstance(spec.expect, (list, tuple)) or not all(isinstance(e, (str, Expect)) for e in spec.expect):
        _fail(f"Spec({name!r}).expect", spec.expect, "give a list of kernel-name globs ('*decode*') or "
              "kl.Expect('*decode*', when={'S': 1}, label='the decode kernel').")
    for i, e in enumerate(spec.expectations):
        _validate_expect(spec, f"Spec({name!r}).expect[{i}]", e)
    if not isinstance(spec.flags, (list, tuple)) or not all(isinstance(f, Flag) for f in spec.flags):
        _fail(f"Spec({name!r}).flags", spec.flags, "give a list of kl.Flag('USE_TMA', values=(False, True)) or "
              "kl.Flag(env='MYLIB_FAST', values=('0', '1')).")
    seen = set()
    for f in spec.flags:
        _validate_flag(spec, f)
        if f.key in seen:
            _fail(f"Spec({name!r}).flags", f.key, "declare each flag once.")
        seen.add(f.key)
    if not isinstance(spec.imports, (list, tuple)):
        _fail(f"Spec({name!r}).imports", spec.imports, "give a list of 'pkg.mod:name' strings.")
    for imp in spec.imports:
        mod, _, attr = imp.partition(":") if isinstance(imp, str) else ("", "", "")
        if not (mod and attr and all(p.isidentifier() for p in mod.split(".") + attr.split("."))):
            _fail(f"Spec({name!r}).imports", imp, "write each as 'pkg.mod:name' (a module, a colon, a name in it; "
                  "'pkg.mod:Class.method' for an attribute of one), e.g. 'mylib.ops:rmsnorm'.")


def _validate_expect(spec: Spec, where: str, e: Expect) -> None:
    if not isinstance(e.kernel, str) or not e.kernel:
        _fail(where + ".kernel", e.kernel, "give a glob over kernel or function names, e.g. '*decode*'.")
    if e.when is not None:
        if not isinstance(e.when, Mapping) or not e.when:
            _fail(where + ".when", e.when, "give a dict of dims or config keys -> a value or a list, e.g. {'S': 1}.")
        for k, v in e.when.items():
            if k not in spec.dims and k not in spec.config_keys:
                _fail(where + ".when", dict(e.when), f"{k!r} is neither a dim ({', '.join(spec.dims)}) nor a config "
                      f"key ({', '.join(sorted(spec.config_keys)) or 'no configs'}).")
            for x in (v if isinstance(v, (list, tuple)) else [v]):
                if k in spec.dims and (not isinstance(x, int) or isinstance(x, bool)
                                       or not spec.dims[k].min <= x <= spec.dims[k].max):
                    _fail(where + ".when", dict(e.when), f"{k} must be an int within [{spec.dims[k].min}, "
                          f"{spec.dims[k].max}] (or a list of them).")
    if e.launch is not None and (not isinstance(e.launch, Mapping) or not all(isinstance(k, str) for k in e.launch)):
        _fail(where + ".launch", e.launch, "give the constexpr and launch-option values the launch must have, "
              "e.g. {'BLOCK_M': 64, 'num_warps': 4}.")
    if not isinstance(e.label, str):
        _fail(where + ".label", e.label, "give a short name for reports, e.g. 'the decode kernel'.")


def _validate_flag(spec: Spec, f: Flag) -> None:
    where = f"Spec({spec.name!r}).flags[{f.key!r}]"
    if (f.name is None) == (f.env is None):
        _fail(where, f"name={f.name!r}, env={f.env!r}", "give either the launcher keyword (kl.Flag('USE_TMA')) or "
              "the environment variable (kl.Flag(env='MYLIB_FAST')), not both.")
    if f.name is not None and (not isinstance(f.name, str) or not f.name.isidentifier() or f.name in spec.args):
        _fail(where + ".name", f.name, "give the keyword the launcher takes (an identifier that is not one of args).")
    if f.env is not None and (not isinstance(f.env, str) or not f.env or "=" in f.env):
        _fail(where + ".env", f.env, "give the environment variable's name, e.g. 'MYLIB_FAST'.")
    values = f.values
    if not isinstance(values, (list, tuple)) or len(values) < 2 or len({repr(v) for v in values}) != len(values):
        _fail(where + ".values", values, "give at least two distinct values to compare, e.g. (False, True).")
    if f.env is not None and not all(isinstance(v, str) for v in values):
        _fail(where + ".values", values, "an environment variable's values are strings, e.g. ('0', '1').")
    if f.name is not None and not all(isinstance(v, (bool, int, float, str)) or v is None for v in values):
        _fail(where + ".values", values, "give plain values (bool, int, float, str or None): they go into a point "
              "and its repro command.")
def _validate_collective(spec: Spec) -> None:
    c, name = spec.collective, spec.name
    where = f"Spec({name!r}).collective"
    if not isinstance(c, Collective):
        _fail(where, c, "give kl.Collective(world=[2], switches=[bytes, ...]), the ranks and the protocol's size switches.")
    if spec.reference is not None:
        _fail(f"Spec({name!r}).reference", spec.reference, "a collective is judged against the torch.distributed "
              "collective it names (Collective(reference='all_reduce', op='sum')): leave Spec.reference None.")
    worlds = c.worlds
    if not worlds or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 2 for w in worlds):
        _fail(where + ".world", c.world, "give the world sizes to run, ints >= 2, e.g. world=[2, 4, 8].")
    sw = list(c.switches)
    if not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in sw) or sw != sorted(set(sw)):
        _fail(where + ".switches", c.switches, "give the message sizes in bytes where the protocol changes, positive "
              "and increasing, e.g. switches=[512 << 10, 4 << 20].")
    if c.reference not in COLLECTIVE_REFERENCES:
        _fail(where + ".reference", c.reference, f"use one of {tuple(COLLECTIVE_REFERENCES)}.")
    if c.reference == "all_reduce" and c.op not in COLLECTIVE_REFERENCES["all_reduce"]:
        _fail(where + ".op", c.op, f"use one of {COLLECTIVE_REFERENCES['all_reduce']}.")
    if len(spec.input_args) != 1 or len(spec.outputs) != 1:
        _fail(f"Spec({name!r}).args", list(spec.args), "a collective takes one input tensor (the rank's message) and "
              "has one output (a kl.Out argument or returns=).")
    if not isinstance(c.queued, int) or isinstance(c.queued, bool) or c.queued < 1:
        _fail(where + ".queued", c.queued, "give the number of calls queued before one synchronisation, e.g. 64.")
    if c.setup is not None and not callable(c.setup):
        _fail(where + ".setup", c.setup, "pass a callable (group, device) -> communicator, or leave it out (the kernel "
              "then gets the torch.distributed group).")
    if c.needs not in ("", "cuda"):
        _fail(where + ".needs", c.needs, "give 'cuda' for a protocol that runs only on CUDA ranks, or leave it out.")
    for fname in ("dim", "world_dim"):
        v = getattr(c, fname)
        if v is not None and v not in spec.dims:
            _fail(f"{where}.{fname}", v, f"name a dim declared in `dims` ({', '.join(spec.dims)}).")
    if spec.message_dim is None:
        _fail(where + ".dim", c.dim, "name the dim that sets the message size: the input has no symbolic dim.")
    if c.lag_us is not None and (not isinstance(c.lag_us, int) or c.lag_us < 0):
        _fail(where + ".lag_us", c.lag_us, "give the lagging rank's wait before each call in microseconds, an int >= 0.")
    if c.watchdog_s is not None and (not isinstance(c.watchdog_s, (int, float)) or not c.watchdog_s > 0):
        _fail(where + ".watchdog_s", c.watchdog_s, "give the seconds without progress that make a hang, > 0.")
