"""A spec's validation, Pydantic's way: every field checked by its row of a table (the field ->
its checks, each a test and the fix), then the rules that relate fields, each run only on parts
well-formed enough to read, then the mistakes that would otherwise be charged to the kernel at run
time (ranges that cannot hold, signatures, links, configs that are not JSON); every problem is
collected and one SpecError lists them all. It reads a kl.Spec (core.py) as an object: core.py
imports this module, never the other way."""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..notation import EnvSet, ImportName, Needs
from ..notation import Toolchain as ToolchainKey   # the `when` keys torch, triton, ...; kl.Toolchain is the rung-7 part
from ..problems import Problem, SpecError, mean as _mean
from .fields import PRODUCT, symbol_dims
from .fields import is_int as _int
from .fields import (BACKWARD, DTYPES, GRADIENT, FLOAT_DTYPES, LAYOUTS, NONFINITE_POLICIES, VALUE_KINDS, Config, Dim, Invariant, Out,
                     Size, Tensor, Tolerance)
from .parts import (COLLECTIVE_REFERENCES, Calls, Collective, Expect, Flag, InModel, Modes, PredicateError, Repetition,
                    Toolchain, is_dtype_key, is_predicate, predicate_edges, when_text)

AnySpec = Any       # a kl.Spec (core.py imports this module: annotations name it so)


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


def _output_names(spec) -> list[str]:
    """The outputs a tolerance may name (Out args, returns, 'grad of w'); none while args or returns
    cannot be read (their own rows name them)."""
    if not isinstance(spec.args, Mapping) or not (spec.returns is None or isinstance(spec.returns, (Tensor, Mapping))):
        return []
    return [n for n in (*spec.outputs, *spec.grad_outputs) if isinstance(n, str)]


TOLERANCE_FIX = "give (rtol, atol), kl.Tolerance(rtol, atol), {'bfloat16': (rtol, atol)} or, by output, {'lse': (rtol, atol)}."


def _tolerance_problem(tol, spec, by_output: bool = True) -> tuple | None:
    """A tolerance as a spec writes it: (rtol, atol), kl.Tolerance, a dict by dtype, and (not within
    an output's own) by output: {'lse': (rtol, atol)} or {'lse': {'float32': (rtol, atol)}}."""
    if tol is None or isinstance(tol, Tolerance):
        pairs = [] if tol is None else [(tol.rtol, tol.atol)]
    elif isinstance(tol, (tuple, Mapping)):
        outputs = _output_names(spec) if by_output and isinstance(tol, Mapping) else []
        bad = [k for k in tol if k not in DTYPES and k not in outputs] if isinstance(tol, Mapping) else []
        if bad:
            meant = _mean(bad[0], list(DTYPES) + outputs, 0.8) if isinstance(bad[0], str) else ""
            named = f" or by output names ({', '.join(outputs)})" if outputs else ""
            return tol, f"{meant}key by dtype names from {DTYPES}{named}; {bad} is not one."
        for k in [k for k in tol if k in outputs and k not in DTYPES] if isinstance(tol, Mapping) else []:
            if not isinstance(tol[k], (tuple, Tolerance, Mapping)):
                return tol, (f"{k!r}: give the output's tolerance as (rtol, atol), kl.Tolerance(rtol, atol) or by dtype, "
                             "e.g. {'float32': (rtol, atol)}.")
            found = _tolerance_problem(tol[k], spec, by_output=False)
            if found is not None:
                return tol, f"{k!r}: {found[1]}"
        pairs = [tol] if isinstance(tol, tuple) else [v for k, v in tol.items() if k in DTYPES]
    else:
        return tol, TOLERANCE_FIX
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
    "mutated": [Rule(lambda v: _write_condition(v, (BACKWARD, GRADIENT)), "give True for an input the kernel writes in "
                     "place by design, a dict of the launcher's keywords under which it does (mutated={'in_place': True}), a "
                     "predicate of the point (mutated=lambda p: ...), 'backward' when the backward writes the input's "
                     "gradient into it, 'gradient' when the forward overwrites the input with its gradient, or leave it "
                     "out.")],
    "grad_overwritten": [Rule(lambda v: _write_condition(v, ()), "give True on an output whose upstream gradient the "
                              "backward overwrites, a dict of the launcher's keywords under which it does "
                              "(grad_overwritten={'in_place': True}), a predicate of the point, or leave it out.")],
    "ignore": [Rule(lambda v: v is None or _int(v), "give the sentinel id the kernel must skip as an int, e.g. ignore=-100 "
                    "(cross entropy's ignore_index), or leave it out.")],
}


def _identifiers(keys) -> bool:
    """Every key a Python name (each becomes a keyword argument)."""
    return all(isinstance(k, str) and k.isidentifier() for k in keys)


def _write_condition(v, words: tuple) -> bool:
    """A declared write's condition: a bool, one of `words`, a non-empty dict keyed by names, a callable."""
    if isinstance(v, bool) or (isinstance(v, str) and v in words) or callable(v):
        return True
    return isinstance(v, Mapping) and len(v) > 0 and _identifiers(v)

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
    "configs": [Rule(lambda v: v is None or (isinstance(v, Mapping) and all(isinstance(c, Mapping) for c in v.values())),
                     "give a dict of the pattern's letters -> a declared config, e.g. configs={'A': {'BLOCK': 64}, "
                     "'B': {'BLOCK': 128}}, or leave it out (every call the launcher's own).")],
}

INVARIANT_FIELDS = {
    "check": [Rule(callable, "pass a callable (inputs, outputs) -> bool or bool tensor.")],
    "values": [Rule(lambda v: v is None or isinstance(v, Mapping), "give a dict of input arg -> value kind, e.g. "
                    "values={'x': 'ones'}.")],
}


class _Found:
    """The problems of one spec so far, each at a location under the spec's head."""

    def __init__(self, spec: AnySpec):
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


def validate(spec: AnySpec) -> None:
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
        _calls_configs(found)
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


def _returned_problem(spec: AnySpec, key, t) -> tuple | None:
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
        _ignore_rules(found, name, where, t, tensors)
    _write_rules(found, name, where, t, output)


def _output_rules(found: _Found, where: tuple, t: Tensor) -> None:
    """An output holds what the kernel writes: no mutated=, values, range or layouts."""
    if t.mutated is not False and found.clean(*where, "mutated"):
        found.add(where + ("mutated",), t.mutated, "mutated= marks an input the kernel also writes; an output (kl.Out or "
                  "returns=) is written anyway: drop mutated=.")
    for f in ("values", "range", "layouts", "ignore"):
        if getattr(t, f) is not None and found.clean(*where, f):
            found.add(where + (f,), getattr(t, f), f"an output holds what the kernel writes: kladder chooses no {f} for it; "
                      f"drop {f}=.")


def _dim_name_rules(found: _Found, where: tuple, t: Tensor, output: bool) -> None:
    """The dims a shape, a range and `valid` name are declared."""
    if not _named(found):
        return
    declared, clean = _declared(found), (lambda f: found.clean(*where, f))
    bad = next((why for why in (_symbol_problem(s, declared) for s in t.symbols) if why), None) if clean("shape") else None
    if bad is not None:
        found.add(where + ("shape",), t.shape, bad)
    if clean("range") and t.range is not None and not output:
        _range_rules(found, where, t, declared)
    if clean("valid") and t.valid is not None:
        if isinstance(t.valid, str) and t.valid not in declared:
            found.add(where + ("valid",), t.valid, f"{_mean(t.valid, declared)}give the number of valid elements of the last "
                      "dim (an int or a dim name); the rest is padding.")
        elif clean("shape") and not t.symbols:
            found.add(where + ("valid",), t.valid, "a 0-d tensor has no rows to pad; drop `valid`.")


def _symbol_problem(sym: str, declared: tuple) -> str | None:
    """Why a shape's symbol is none of a declared dim, a literal size, or a product of them ('G*K'); None if it is one."""
    if sym.isdigit() or sym in declared:
        return None
    factors = sym.split(PRODUCT)
    if len(factors) > 1 and all(f.isdigit() or f.isidentifier() for f in factors):
        bad = next((f for f in factors if not f.isdigit() and f not in declared), None)
        return None if bad is None else (f"{sym!r} is a product of dims: {_mean(bad, declared)}declare {bad!r} in dims, "
                                         f"e.g. dims={{{bad!r}: kl.Dim(1, 64)}}, or use a literal size.")
    if sym.isidentifier():
        return f"{_mean(sym, declared)}declare {sym!r} in dims, e.g. dims={{{sym!r}: kl.Dim(1, 4096, tile=64)}}, or use a literal size."
    return (f"{sym!r}: a dim of a shape is a declared dim, a literal size, or a product of them joined by '*' without "
            "spaces ('G*K': GroupNorm's C = G x K); declare any other size as a dim of its own.")


def _range_rules(found: _Found, where: tuple, t: Tensor, declared: tuple) -> None:
    """A range's bounds: numbers, or dim expressions over declared dims ("E-1", "2*S")."""
    from ..dimexpr import DimExprError, names
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
    if t.mutated in (BACKWARD, GRADIENT) and not output and found.clean(*where, "mutated") and name not in grads:
        found.add(where + ("mutated",), t.mutated, f"mutated={t.mutated!r} says {name}'s buffer is given its gradient: add "
                  f"{name!r} to Spec(grads=[...]) (kladder then runs the backward and judges that gradient), or give "
                  "mutated=True for a write of something else in the forward.")
    keys = {k for c in (spec.configs if isinstance(spec.configs, (list, tuple)) else ()) if isinstance(c, Mapping)
            for k in c}
    for field_name in ("mutated", "grad_overwritten"):
        cond = getattr(t, field_name)
        if isinstance(cond, Mapping) and keys and found.clean(*where, field_name):
            unknown = [k for k in cond if k not in keys]
            if unknown:
                found.add(where + (field_name,), dict(cond), f"{_mean(unknown[0], tuple(keys))}name the launcher's "
                          f"keywords its configs set ({', '.join(sorted(keys))}): {unknown} is in none of them.")


INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


def _ignore_rules(found: _Found, name: str, where: tuple, t: Tensor, tensors: dict) -> None:
    """A sentinel id (ignore=-100) sits among ids: an integer input with a range, and a value its
    dtype holds."""
    if t.ignore is None or not found.clean(*where, "ignore"):
        return
    if t.range is None:
        found.add(where + ("ignore",), t.ignore, "a sentinel is one id among the input's ids: give the ids' range too, "
                  f"e.g. kl.Tensor({t.shape!r}, dtype='int64', range=(0, 'V-1'), ignore={t.ignore}).")
        return
    if not (found.clean(*where, "like") and found.clean(*where, "dtype")):
        return
    dtypes = _dtypes_of(found.spec, name, tensors)
    bad = next((d for d in dtypes if d not in INT_DTYPES), None)
    if bad is not None:
        found.add(where + ("ignore",), t.ignore, f"a sentinel id needs an integer input ({bad} is not one): give an integer "
                  f"dtype ({', '.join(INT_DTYPES)}), or drop ignore=.")
        return
    import torch
    for d in dtypes:
        info = torch.iinfo(getattr(torch, d))
        if not info.min <= t.ignore <= info.max:
            found.add(where + ("ignore",), t.ignore, f"{d} holds no {t.ignore} (its values are {info.min}..{info.max}): "
                      "give a sentinel the dtype holds, or a wider integer dtype.")
            return


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
                found.add(where + ("like",), t.like, "break the cycle: one tensor in a `like` chain needs a dtype.")


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


def _dims_used(spec: AnySpec, tensors: dict) -> set:
    """The dims something reads: a tensor's shape, a value range (range=(1, "L")), a valid length
    (valid="V"), or `rows`. A dim no shape uses is a size the points choose and that the spec's
    values or its build= function read (a paged cache's max_len: lens in 1..L, a page table of
    ceil(L / 16) columns)."""
    used = set(spec.row_dims) | {v.dim for v in spec.args.values() if isinstance(v, Size) and isinstance(v.dim, str)}
    for _, t in tensors.values():
        used |= {d for s in t.symbols for d in symbol_dims(s)} | _range_dims(t)
        if isinstance(t.valid, str):
            used.add(t.valid)
    return used


def _range_dims(t: Tensor) -> set:
    """The dims a tensor's range reads (range=(0, "E-1") reads E); none of a malformed one."""
    from ..dimexpr import DimExprError, names
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
        for i, f in enumerate(spec.toolchain.flags):
            if not _flag(found, f, i):                   # neither a name nor an env, or both: said by _flag
                continue
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


def when_keys(spec: AnySpec) -> list[str]:
    """The config keys a `when` may name: the configs' keys, the keyword flags, the launcher's
    keywords with a default."""
    keys = {k for c in spec.configs if isinstance(c, Mapping) for k in c}
    keys |= {f.name for f in spec.toolchain.flags if isinstance(f, Flag) and isinstance(f.name, str)}
    keys |= set(launcher_defaults(spec.kernel)) if callable(spec.kernel) else set()
    return sorted(keys - set(spec.args) if isinstance(spec.args, Mapping) else keys)


WHEN_FORMS = ("name an environment variable as '$NAME' ({'$MYLIB_FAST': '1'}, None for unset), the toolchain as "
              "one of torch, triton, cuda, capability with a version specifier ({'torch': '>=2.6'}, "
              "{'capability': '>=9.0'}), or a dtype as 'dtype' (the first input's) or 'dtype:NAME' ({'dtype': 'bfloat16'})")


def specifier_problem(text) -> str | None:
    """Why `text` is no version specifier (">=2.6", ">=2.4,<2.7"), or None."""
    from ..versions import parse_specifier
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
        if is_dtype_key(k) and k not in declared:
            if found.clean("args") and found.clean("returns") and _when_dtype(found, where, when, k, v, listed):
                return
            continue
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


def _when_dtype(found: _Found, where: tuple, when: Mapping, k: str, v, listed: list) -> bool:
    """A `when` on a dtype ('dtype': the first input's, 'dtype:w': w's) names a tensor, and dtypes it
    takes (or a predicate over the dtype's name). True where it found a problem."""
    spec, shown = found.spec, {key: when_text(x) for key, x in when.items()}
    name = spec.when_dtype_of(k)
    if name is None or name not in spec.all_tensors:
        found.add(where, shown, f"{k!r}: name a tensor's dtype as 'dtype' (the first input's) or 'dtype:NAME' "
                  f"(NAME one of {', '.join(spec.all_tensors)}), e.g. {{'dtype': 'bfloat16'}}.")
        return True
    if is_predicate(v):
        return False
    t, seen = spec.all_tensors[name], {name}
    while t.like is not None and t.like in spec.all_tensors and t.like not in seen:
        seen.add(t.like)
        t = spec.all_tensors[t.like]
    takes = list(t.dtypes)
    bad = next((x for x in listed if x not in takes), None) if takes else None
    if not listed or bad is not None:
        found.add(where, shown, f"{k}={bad!r}: {name} takes {', '.join(takes)}; give one of those, a list of them, or a "
                  "predicate over the dtype's name (lambda d: d != 'float32').")
        return True
    return False


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


def _flag(found: _Found, f: Flag, i: int) -> bool:
    """One declared flag, at its key (its index where it has neither a name nor an env: no key).
    Returns whether it has exactly one of them (its key is its own)."""
    one = (f.name is None) != (f.env is None)
    spec, where = found.spec, ("toolchain", "flags", f.key if f.name is not None or f.env is not None else i)
    found.fields(f, FLAG_FIELDS, where)
    if not one:
        found.add(where, f"name={f.name!r}, env={f.env!r}", "give either the launcher keyword (kl.Flag('USE_TMA')) or the "
                  "environment variable (kl.Flag(env='MYLIB_FAST')), not both.")
    if found.clean(*where, "set") and f.set == EnvSet.AFTER_IMPORT and f.name is not None:
        found.add(where + ("set",), f.set, "set='after_import' is for an environment variable (kl.Flag(env='MYLIB_FAST', "
                  "set='after_import')): a launcher keyword is passed with every call; drop set=.")
    if found.clean(*where, "name") and found.clean("args") and f.name in spec.args:
        found.add(where + ("name",), f.name, FLAG_FIELDS["name"][0].fix)
    if not found.clean(*where, "values"):
        return one
    if f.env is not None and not all(isinstance(v, str) or v is None for v in f.values):
        found.add(where + ("values",), f.values, "an environment variable's values are strings, or None for unset, "
                  "e.g. ('0', '1') or (None, '1').")
    elif f.name is not None and not all(isinstance(v, (bool, int, float, str)) or v is None for v in f.values):
        found.add(where + ("values",), f.values, "give plain values (bool, int, float, str or None): they go into a point and "
                  "its repro command.")
    return one


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


def _floating(spec: AnySpec, name: str) -> bool:
    t, seen = spec.args[name], {name}
    while t.like is not None and t.like in spec.all_tensors and t.like not in seen:
        seen.add(t.like)
        t = spec.all_tensors[t.like]
    return bool(t.dtypes) and all(d in FLOAT_DTYPES for d in t.dtypes)


# ---- configs: plain dicts or kl.Config(dict, tolerance=...) ----
def _configs(found: _Found) -> None:
    """A config's keywords are names (a plain dict's keys as a kl.Config's: each becomes a keyword
    argument of the launcher), and a kl.Config's tolerance is written as Spec.tolerance is."""
    if not found.clean("configs"):
        return
    for i, c in enumerate(found.spec.configs):
        if not isinstance(c, Config):
            if not _identifiers(c):
                found.add(("configs", i), dict(c), "name each key as the launcher's keyword argument it is, an "
                          "identifier, e.g. {'BLOCK': 64}.")
            continue
        if not isinstance(c._given, Mapping) or not _identifiers(c._given):
            found.add(("configs", i, "values"), c._given, "give the launcher's keyword arguments as a dict, e.g. "
                      "kl.Config({'precise': False}, tolerance={'float32': (1e-3, 1e-5)}).")
        bad = _tolerance_problem(c.tolerance, found.spec)
        if bad is not None:
            found.add(("configs", i, "tolerance"), *bad)


POINT_TIMEOUT_S = 120.0      # a point's default timeout (run/timeouts.DEFAULT_TIMEOUT_S), which a stream must stay within


def _calls_budget(found: _Found) -> None:
    """kl.Calls(seconds=) leaves the point room within its timeout: a stream that ran past it
    would be reported as the kernel's hang."""
    spec = found.spec
    s, timeout = spec.repetition.calls.seconds, spec.timeout_s if _number(spec.timeout_s) else POINT_TIMEOUT_S
    if found.clean("repetition", "calls", "seconds") and s is not None and s > timeout / 2:
        found.add(("repetition", "calls", "seconds"), s, f"give at most half the point's timeout ({timeout:g} s): {timeout / 2:g}, or "
                  f"raise Spec(timeout_s=...) to {2 * s:g} or more.")


def _calls_configs(found: _Found) -> None:
    """kl.Calls(configs=): each key a letter of the pattern, each config one the spec declares."""
    calls, spec, where = found.spec.repetition.calls, found.spec, ("repetition", "calls", "configs")
    if calls.configs is None or not found.clean(*where) or not found.clean("repetition", "calls", "pattern") \
            or not found.clean("configs"):
        return
    declared = [dict(c) for c in spec.configs]
    for letter, config in calls.configs.items():
        if not (isinstance(letter, str) and letter in calls.letters):
            found.add(where, {k: dict(v) for k, v in calls.configs.items()}, f"{letter!r} is no letter of the pattern "
                      f"{calls.pattern!r}: key each config by one of its letters ({', '.join(calls.letters)}).")
            return
        if dict(config) not in declared:
            shown = ", ".join(map(repr, declared)) or "none declared"
            found.add(where + (letter,), dict(config), f"bind a letter to a config the spec declares (configs: {shown}): "
                      "add it to Spec(configs=[...]) first.")
            return


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
    from ..dimexpr import evaluate, names
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
            why = next((w for w in (_int_range_problem(d, lo, hi) for d in dtypes if d in INT_DTYPES) if w), None)
            if why is not None:
                found.add(where + ("range",), t.range, f"{why}{at}.")
                break


def _int_range_problem(dtype: str, lo, hi) -> str | None:
    """Why values of integer `dtype` cannot be drawn from [lo, hi] as declared: a bound that is no
    whole number (the draw would truncate it, and give values outside the range), or one beyond
    what the dtype holds (the draw would fail at every point); None where they can."""
    import torch
    if not all(float(b).is_integer() for b in (lo, hi)):
        return (f"{dtype} values are whole numbers, and [{lo:g}, {hi:g}] has a bound that is not: give int bounds, "
                "e.g. range=(0, 'E-1')")
    info = torch.iinfo(getattr(torch, dtype))
    if lo < info.min or hi > info.max:
        return (f"{dtype} holds {info.min}..{info.max}, and [{lo:g}, {hi:g}] goes beyond it: give bounds within it, or a "
                "wider integer dtype")
    return None


def _dtypes_of(spec: AnySpec, name: str, tensors: dict) -> tuple[str, ...]:
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
    from ..chain import Chain
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
    from ..chain import Chain, Link
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
