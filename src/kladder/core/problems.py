"""A spec's problems: where each is (a location tuple, rendered once), what was given and the
fix; one SpecError carries them all. Shared by spec/ and chain.py (kl.Link), so that every
public class answers a misspelt keyword the same way."""
from __future__ import annotations

import difflib
import functools
from dataclasses import MISSING, dataclass, fields
from typing import Any

from .errors import UsageError


class SpecError(UsageError):
    """A malformed spec: every problem found in it, each saying which field, what was given and
    the fix. `where`, `given` and `fix` are the first problem's; `problems` holds them all."""

    def __init__(self, where: str | tuple, given: Any = None, fix: str = "", problems: tuple = ()):
        self.problems = tuple(problems) or (Problem(where, given, fix),)
        first = self.problems[0]
        self.where, self.given, self.fix = where_text(first.where), first.given, first.fix
        super().__init__(listed(self.problems))

    def __reduce__(self):                       # the problems, not the message, rebuild it in another process
        return SpecError, ("", None, "", self.problems)


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a spec. `where` is a location tuple, (("Spec", "rmsnorm"), "args", "x",
    "dtype"), rendered once by where_text as Spec('rmsnorm').args['x'].dtype."""

    where: tuple | str
    given: Any
    fix: str

    def __str__(self) -> str:
        return f"{where_text(self.where)}: got {shown(self.given)}. {self.fix}"


KEYED = ("args", "returns", "dims", "invariants", "flags", "expect")   # the part after one of these is a key: [...]


def _moved_fix(label: str, key: str, moved: tuple, given: Any) -> str:
    """The fix for a field that moved into a part, with the value given where it is short and plain."""
    field, part, name, example = moved
    if isinstance(given, (bool, int, float, str)) and len(repr(given)) <= 40:
        example = repr(given)
    return (f"{key}= is now {part}({name}=...): {label}(..., {field}={part}({name}={example})); "
            "see docs/spec.md.")


def where_text(where: tuple | str) -> str:
    """(("Spec", "t"), "args", "x", "dtype") -> "Spec('t').args['x'].dtype"; a head without a
    name ("kl.Tensor", None) is the bare label."""
    if isinstance(where, str):
        return where
    (label, name), *parts = where
    text = label if name is None else f"{label}({name!r})"
    keyed = False
    for part in parts:
        text += f"[{part!r}]" if keyed else f".{_printable(part)}"
        keyed = not keyed and part in KEYED
    return text


def _printable(part) -> str:
    """A location's part as text, a control character in it escaped ('\\x1b'): a keyword a spec
    was given (kl.Spec(**{...})) is the user's text, and a message must not pass it to a terminal."""
    text = str(part)
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def listed(problems: tuple) -> str:
    """One problem: one line, as it always was. Several: a count, then one problem a line."""
    if len(problems) == 1:
        return str(problems[0])
    head = problems[0].where[0] if isinstance(problems[0].where, tuple) else None
    whose = f" in {where_text((head,))}" if head else ""
    return f"{len(problems)} problems{whose}:\n" + "\n".join(f"  {p}" for p in problems)


def shown(v: Any) -> str:
    """A given value as the user wrote it: a class by its name, a long value cut short."""
    if isinstance(v, type):
        return f"the class kl.{v.__name__}" if v.__module__.startswith("kladder") else f"the class {v.__name__}"
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


def mean(given: Any, names, cutoff: float = 0.6) -> str:
    """'did you mean 'N'? ' when a name is close to one of `names` (case aside: 'n' means 'N'); ''
    otherwise."""
    if not isinstance(given, str):
        return ""
    by_lower = {n.lower(): n for n in reversed([n for n in names if isinstance(n, str)])}
    close = difflib.get_close_matches(given.lower(), list(by_lower), 1, cutoff)
    return f"did you mean {by_lower[close[0]]!r}? " if close else ""


def friendly(label: str, moved: dict | None = None):
    """A kladder class whose constructor answers misspelt, missing or extra arguments with one
    SpecError that names each, and the fields there are (a typo must not be a traceback).
    `moved`: a field that moved into a part -> (the field of the part, its class, its name
    there, an example value), so that an old keyword is told where it went."""
    def wrap(cls):
        init = cls.__init__
        names = [f.name for f in fields(cls) if f.init]
        positional = [f.name for f in fields(cls) if f.init and not f.kw_only]
        required = [f.name for f in fields(cls) if f.init and f.default is MISSING and f.default_factory is MISSING]

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            problems = call_problems(label, names, required, args, kwargs, moved or {}, len(positional))
            if problems:
                raise SpecError("", problems=problems)
            init(self, *args, **kwargs)
        cls.__init__ = __init__
        return cls
    return wrap


def call_problems(label: str, names: list, required: list, args: tuple, kwargs: dict, moved: dict | None = None,
                  positional: int | None = None) -> tuple:
    head = (label, args[0] if label == "kl.Spec" and args and isinstance(args[0], str) else None)
    listed = ", ".join(names)
    moved = moved or {}
    unknown = [k for k in kwargs if k not in names]
    meant = {m for k in unknown if k not in moved for m in difflib.get_close_matches(k, names, 1)}   # missing, but the typo says so
    problems = [Problem((head, k), kwargs[k], _moved_fix(label, k, moved[k], kwargs[k]) if k in moved else
                        f"{label} has no field {k!r}; {mean(k, names)}its fields are {listed}.") for k in unknown]
    most = len(names) if positional is None else positional
    if len(args) > most:
        problems.append(Problem((head,), args, f"{label} takes at most {most} positional arguments ({listed}); "
                                "pass the rest by name."))
    given = set(names[:len(args)]) | set(kwargs)
    missing = [n for n in required if n not in given and n not in meant]
    if missing:
        problems.append(Problem((head, missing[0]), None, f"{label} needs {', '.join(missing)} (its fields are {listed})."))
    return tuple(problems)
