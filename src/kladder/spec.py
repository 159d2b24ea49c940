"""What a kernel's author knows: argument shapes as symbols, dtypes, dim ranges and tiles,
the widths real models use, accepted configs, production shapes, tolerances.

A Spec never holds a failing point. Every field is validated once, at construction, and a
bad field raises one SpecError that names the field, what was given and the fix.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
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
        super().__init__(f"{where}: got {given!r}. {fix}")


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


@dataclass(frozen=True)
class Tensor:
    """A tensor argument or output: shape as symbols ("M N"), and a dtype list or `like`.

    values:  the rung-2 value kinds this input admits (VALUE_KINDS); None = by dtype.
    range:   (lo, hi) inclusive; hi may name a dim. Values are drawn within it at every rung.
    valid:   packed rows: only the first `valid` elements of the last dim are data (int or dim).
    layouts: the rung-3 layouts this input accepts (LAYOUTS); None = all that its rank allows."""

    shape: str
    dtype: str | tuple[str, ...] | list[str] | None = None
    like: str | None = None
    values: str | tuple[str, ...] | list[str] | None = None
    range: tuple | list | None = None
    valid: int | str | None = None
    layouts: str | tuple[str, ...] | list[str] | None = None

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


@dataclass(frozen=True)
class Invariant:
    """A property the outputs must have, with or without a reference: `check(inputs, outputs)`
    (dicts name -> tensor) returns a bool or a bool tensor (True where it holds). Without
    `values` it is checked on every point of rungs 1-3; with values={"v": "ones"} kladder
    adds rung-2 points with those value kinds and checks it there."""

    name: str
    check: Callable[..., Any]
    values: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Out(Tensor):
    """An out-argument: allocated and poisoned by kladder, written by the kernel."""


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
    deterministic: bool = False           # rung 5: the same inputs give the same bits on every call (no float atomics,
                                          # no order that depends on timing); without it a difference within the
                                          # tolerance is a warning (nondeterminism), beyond it a failure

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
    _validate_dims(spec)
    _validate_tensors(spec)
    _validate_shape_lists(spec)
    _validate_tolerance(spec)
    _validate_values(spec)
    if spec.rows is not None:
        for r in spec.row_dims:
            if r not in spec.dims:
                _fail("Spec.rows", spec.rows, f"name dims declared in `dims` ({', '.join(spec.dims)}).")


def _validate_head(spec: Spec) -> None:
    if not isinstance(spec.name, str) or not spec.name.isidentifier():
        _fail("Spec.name", spec.name, "use a Python identifier such as 'rmsnorm'; it becomes a pytest id and a file name.")
    if not callable(spec.kernel):
        _fail(f"Spec({spec.name!r}).kernel", spec.kernel, "pass the kernel's launcher, a callable taking the args in order.")
    if not callable(spec.reference):
        _fail(f"Spec({spec.name!r}).reference", spec.reference, "pass a reference callable (plain torch), taking the non-Out args in order.")
    if not isinstance(spec.args, Mapping) or not spec.args:
        _fail(f"Spec({spec.name!r}).args", spec.args, "give a dict of argument name -> kl.Tensor, kl.Out or a scalar, in call order.")
    if not isinstance(spec.dims, Mapping):
        _fail(f"Spec({spec.name!r}).dims", spec.dims, "give a dict of symbol -> kl.Dim, e.g. {'N': kl.Dim(1, 8192, tile=64)}.")
    if spec.build is not None and not callable(spec.build):
        _fail(f"Spec({spec.name!r}).build", spec.build, "pass a callable (point, generator) -> dict of tensors, or leave it out.")
    if spec.reference_dtype not in FLOAT_DTYPES:
        _fail(f"Spec({spec.name!r}).reference_dtype", spec.reference_dtype, f"use one of {FLOAT_DTYPES}.")
    if not spec.outputs:
        _fail(f"Spec({spec.name!r}).returns", spec.returns, "declare the outputs: returns=kl.Tensor('M N', like='x'), or an kl.Out(...) argument.")
    if not isinstance(spec.deterministic, bool):
        _fail(f"Spec({spec.name!r}).deterministic", spec.deterministic, "give True when the same inputs must give the same "
              "bits on every call (rung 5 then fails any difference), or False (the default).")


def _validate_dims(spec: Spec) -> None:
    for name, d in spec.dims.items():
        where = f"Spec({spec.name!r}).dims[{name!r}]"
        if not isinstance(d, Dim):
            _fail(where, d, f"use kl.Dim(min, max, tile=..., widths=[...]), e.g. kl.Dim(1, 8192, tile=64).")
        if not (isinstance(d.min, int) and isinstance(d.max, int)) or d.min < 0 or d.max < d.min:
            _fail(where + ".min/max", (d.min, d.max), "give integers with 0 <= min <= max.")
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
