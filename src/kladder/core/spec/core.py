"""kl.Spec: the core every kernel has (name, kernel, reference, args, returns, dims, configs,
tolerance, rows, build, ...) with its parts, normalised once at construction and validated
(validation.py); the views generators, the materialiser and the checks read (inputs, outputs,
gradients, a point's declared writes, the tolerance of a config, the reference's keywords)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..notation import Nonfinite
from ..problems import friendly as _friendly
from .fields import as_seq as _seq, as_tuple as _tuple, as_word as _word, convert as _convert
from .fields import BACKWARD, DEFAULT_TOLERANCES, GRADIENT, Dim, Out, Tensor, Tolerance, declared_at, grad_name, upstream_name
from .parts import DTYPE_KEY, MOVED, PART_CLASSES, Expect, is_dtype_key
from .validation import validate


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
        from ..chain import Chain
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
        from ..dimexpr import evaluate
        return tuple(evaluate(v, sizes) if isinstance(v, str) else v for v in r)

    def valid_of(self, name: str, sizes: dict[str, int]) -> int | None:
        v = self.all_tensors[name].valid
        return sizes[v] if isinstance(v, str) else v

    @property
    def expectations(self) -> tuple[Expect, ...]:
        return self.toolchain.expect

    def when_dtype_of(self, key) -> str | None:
        """The tensor whose dtype a `when` key names: 'dtype' the first input's, 'dtype:w' w's; None for
        any other key (a dim named 'dtype' stays a dim)."""
        if not is_dtype_key(key) or key in self.dims:
            return None
        return next(iter(self.input_args), None) if key == DTYPE_KEY else key[len(DTYPE_KEY) + 1:]

    def dtype_at(self, name: str, chosen: Mapping[str, str]) -> str:
        """A tensor's dtype at a point's chosen dtypes: its own choice, else its `like` model's, else its only one."""
        t, seen = self.all_tensors[name], {name}
        while t.like is not None and t.like in self.all_tensors and t.like not in seen:
            name, t = t.like, self.all_tensors[t.like]
            seen.add(name)
        return chosen.get(name, t.dtypes[0] if t.dtypes else "")

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
        """Inputs whose buffer holds their gradient after a forward and backward at this point: the backward
        may write it there (mutated='backward'), or the forward did (mutated='gradient')."""
        return tuple(n for n, t in self.input_args.items() if declared_at(t.mutated, point) in (BACKWARD, GRADIENT))

    def written_in_forward(self, point) -> tuple[str, ...]:
        """Inputs the forward overwrites with their gradient at this point (mutated='gradient'): a call of
        the forward alone may leave anything there."""
        return tuple(n for n, t in self.input_args.items() if declared_at(t.mutated, point) == GRADIENT)

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

    def tolerance_for(self, dtype: str, config=(), output: str | None = None) -> Tolerance:
        """The tolerance of `output` (an output's name: 'out', 'lse', 'grad of w'), of `dtype`, at a
        point whose call passes `config` (its pairs or dict). Precedence, the first that names the
        output or the dtype (the output before the dtype within each): the tolerance of the kl.Config
        that config is (config_of), then Spec.tolerance, then DEFAULT_TOLERANCES. (The honest peer
        may still widen it where a correct implementation cannot do better.)"""
        own = self.config_of(config)
        found = _tolerance_in(getattr(own, "tolerance", None), dtype, output)
        if found is None:
            found = _tolerance_in(self.tolerance, dtype, output)
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
    from ..chain import Chain
    if isinstance(fn, Chain) or not callable(fn):
        return frozenset()
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    return frozenset("**" if p.kind == p.VAR_KEYWORD else p.name for p in params
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.VAR_KEYWORD) and p.name not in args)


def _tolerance_in(tol, dtype: str, output: str | None = None) -> Tolerance | None:
    """What a tolerance as a spec writes it (None, kl.Tolerance, (rtol, atol), by dtype, or by output:
    {"lse": (rtol, atol)} or {"lse": {"float32": (rtol, atol)}}) says for `output` of `dtype`, or
    None when it names neither."""
    if tol is None:
        return None
    if isinstance(tol, Tolerance):
        return tol
    if isinstance(tol, tuple):
        return Tolerance(*tol)
    if not isinstance(tol, Mapping):
        return None
    if output is not None and output in tol:
        found = _tolerance_in(tol[output], dtype)
        if found is not None:
            return found
    if dtype in tol:
        return Tolerance(*tol[dtype]) if isinstance(tol[dtype], (tuple, list)) else tol[dtype]
    return None
