"""Rung 8 on the user's own model: patch one function or method with the kernel under test,
run the user's evaluation, restore.

    adapter = Adapter("torch.nn.modules.normalization:LayerNorm.forward", evaluate=my_eval)
    baseline = adapter.score()                 # the original, unpatched
    with_kernel = adapter.score(my_forward)    # LayerNorm.forward replaced by my_forward

`target` is "package.module:function" or "package.module:Class.method" (any attribute path
after the colon). The patch replaces the attribute where it lives, so it reaches every caller
that looks it up at call time (`module.fn(...)`, `self.method(...)`), not a caller that took
its own reference before (`from module import fn`); patch the name that caller uses.
"""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, Callable, Iterator

_MISSING = object()


class TargetError(ValueError):
    """A target that cannot be resolved: says what was given and the form expected."""


def resolve_target(target: str) -> tuple[Any, str]:
    """'pkg.mod:Class.method' -> (the object holding the attribute, the attribute's name)."""
    modname, sep, path = target.partition(":")
    if not sep or not modname or not path:
        raise TargetError(f"target {target!r}: write 'package.module:function' or 'package.module:Class.method'")
    try:
        owner: Any = importlib.import_module(modname)
    except ImportError as e:
        raise TargetError(f"target {target!r}: cannot import {modname!r} ({e})") from e
    *parents, name = path.split(".")
    for part in parents:
        if not hasattr(owner, part):
            raise TargetError(f"target {target!r}: {owner!r} has no attribute {part!r}")
        owner = getattr(owner, part)
    if not hasattr(owner, name):
        raise TargetError(f"target {target!r}: {owner!r} has no attribute {name!r}")
    return owner, name


@contextlib.contextmanager
def patched(target: str, replacement: Callable) -> Iterator[None]:
    """`target` is `replacement` inside the block and what it was after it, also on error.
    An attribute the owner inherited (a method of a base class) is deleted again, not copied in."""
    owner, name = resolve_target(target)
    own = vars(owner).get(name, _MISSING) if hasattr(owner, "__dict__") else getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        if own is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, own)


class Adapter:
    """Scores the user's model with `target` replaced: `evaluate()` returns a score (higher is
    better) or (score, samples). In a climb (`Spec(model=kl.InModel(slot=Adapter(...)))`), `wrap(kernel)` turns
    the spec's kernel into the replacement (a method taking `self`, say); without `wrap` the
    kernel itself replaces the target."""

    def __init__(self, target: str, evaluate: Callable[[], Any], wrap: Callable[[Callable], Callable] | None = None):
        if not callable(evaluate):
            raise TypeError(f"Adapter(evaluate={evaluate!r}): give a callable returning a score or (score, samples)")
        if wrap is not None and not callable(wrap):
            raise TypeError(f"Adapter(wrap={wrap!r}): give a callable kernel -> replacement, or leave it out")
        resolve_target(target)          # a bad target fails here, not in the middle of a climb
        self.target, self.evaluate = target, evaluate
        self.wrap = wrap if wrap is not None else (lambda kernel: kernel)
        self.samples: list = []

    def score(self, replacement: Callable | None = None) -> float:
        """The score with `target` patched to `replacement` (None: the original). The samples
        evaluate returned, if any, are kept in `self.samples`."""
        ctx = patched(self.target, replacement) if replacement is not None else contextlib.nullcontext()
        with ctx:
            got = self.evaluate()
        score, self.samples = (got[0], list(got[1])) if isinstance(got, tuple) else (got, [])
        return float(score)
