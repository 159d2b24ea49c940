"""The small languages a point, a spec and a report write in strings, each one type with one
`parse` and one `format` (format(parse(s)) == s), and the closed sets held as words.

A point must stay plain JSON, its id and its repro line what they were: so a point holds the
formatted string ("peaked/10", "pad:0xFF") and every reader parses it here, and a closed set's
member is a `Word`, a str (JSON, f-strings, ==, hashing and repr all the value's) that the
constructor checks once. Nothing here imports the rest of kladder.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Word(enum.StrEnum):
    """A member of a closed set: a str whose repr is its value's, so a dict holding one prints
    the literal that `Point.parse` reads back (a repro line pasted as it is)."""

    def __repr__(self) -> str:
        return repr(self.value)

    @classmethod
    def has(cls, v) -> bool:
        """Whether `v` is one of the set's words (a member or its text)."""
        return isinstance(v, str) and v in cls._value2member_map_

    @classmethod
    def of(cls, v, field: str):
        """`v` as a member, or a ValueError naming `field`, what was given and the choices."""
        try:
            return cls(v)
        except ValueError:
            raise ValueError(f"{field} is {v!r}; give one of {[m.value for m in cls]}.") from None


class Mode(Word):
    """How a point's kernel is called: one module each in run/modes/."""
    EAGER = "eager"
    REUSED = "reused"
    ABA = "aba"
    GRAPH = "graph"
    STREAM = "stream"
    PADDING = "padding"
    INDEPENDENCE = "independence"
    JITCACHE = "jitcache"
    COMPILED = "compiled"
    MODEL = "model"
    DISPATCH = "dispatch"
    FLAGS = "flags"
    CACHEKEY = "cachekey"
    IMPORTS = "imports"
    COLLECTIVE = "collective"
    REPEAT = "repeat"
    SANITIZE = "sanitize"
    ACCUMULATE = "accumulate"   # gradients: .grad already holding a value, a retained graph's backward twice
    CALLS = "calls"             # rung 5: a stream of calls in the model's pattern (kl.Repetition(calls=)), each on its own inputs


class PointKind(Word):
    """What a point moves, the generator that made it (gaps/, capturing.py, explore.py)."""
    EDGE = "edge"
    CONFIG = "config"
    PRODUCTION = "production"
    BIG = "big"
    VALUES = "values"
    CHUNK = "chunk"
    INVARIANT = "invariant"
    CAPTURED = "captured"
    LAYOUT = "layout"
    DTYPE = "dtype"
    PADDING = "padding"
    INDEPENDENCE = "independence"
    MODE = "mode"
    REPEAT = "repeat"
    SANITIZE = "sanitize"
    COLLECTIVE = "collective"
    TOOLCHAIN = "toolchain"
    DISPATCH = "dispatch"
    MODEL = "model"
    ACCUMULATE = "accumulate"   # gaps/backward.py's point: gradients accumulated into .grad
    EXPLORE = "explore"


class Needs(Word):
    """What a point (or a collective protocol) needs to run: nothing more, or a CUDA device."""
    NOTHING = ""
    CUDA = "cuda"


class Inputs(Word):
    """Rung 5: the same inputs every call, or fresh ones from a pool."""
    SAME = "same"
    FRESH = "fresh"


class Launch(Word):
    """Rung 5: calls captured in a CUDA graph and replayed, or called eagerly."""
    GRAPH = "graph"
    EAGER = "eager"


class EnvSet(Word):
    """Rung 7: when an environment variable takes its value: in the process's environment from
    its start, or set after the kernel's module was imported and the kernel called once (a
    serving launcher that sets it from its config after importing the library)."""
    AT_START = "at_start"
    AFTER_IMPORT = "after_import"


class Toolchain(Word):
    """Rung 7: the toolchain an Expect's `when` may name, with a version specifier (">=2.6"):
    each read from the environment fingerprint (fingerprint.py) where the point runs."""
    TORCH = "torch"
    TRITON = "triton"
    CUDA = "cuda"
    CAPABILITY = "capability"


class Nonfinite(Word):
    """A spec's NaN/Inf policy."""
    PROPAGATE = "propagate"
    IGNORE = "ignore"
    RAISE = "raise"


class Values(Word):
    """Rung 2's value kinds (fill.py writes them)."""
    NORMAL = "normal"
    PEAKED = "peaked"
    TIES = "ties"
    IDENTICAL = "identical"
    DISTINCT = "distinct"
    TINY = "tiny"
    HUGE = "huge"
    NONFINITE = "nonfinite"
    LENGTHS = "lengths"
    MASKED = "masked"
    ONES = "ones"
    IDS = "ids"                 # an integer tensor with a range: idfill.py's id kinds (ids/same, ids/ends, ...)
    SPARSE = "sparse"           # upstream gradients only (upstream.py): 90% exact zeros
    SCALED = "scaled"           # upstream gradients of a scalar loss only: a loss scaler's 2^16


UPSTREAM_ONLY = (Values.SPARSE, Values.SCALED)     # kinds an input's values= cannot name


class Layout(Word):
    """Rung 3's layouts of an input (fill.layout_plan places them); contiguous is the default."""
    SLICED = "sliced"
    EVERY_OTHER = "every_other"
    TRANSPOSED = "transposed"
    OFFSET = "offset"
    SHIFTED = "shifted"
    BROADCAST = "broadcast"
    CHANNELS_LAST = "channels_last"


@dataclass(frozen=True)
class ValueKind:
    """A value kind with its argument: "peaked/10" is ValueKind("peaked", "10"), "ties" is
    ValueKind("ties")."""
    kind: Values
    arg: str = ""

    SEP = "/"

    def __post_init__(self):
        object.__setattr__(self, "kind", Values.of(self.kind, "value kind"))
        if not isinstance(self.arg, str) or self.SEP in self.arg:
            raise ValueError(f"value kind {self.kind}: argument {self.arg!r}; give a string without {self.SEP!r}.")

    @classmethod
    def parse(cls, text: str) -> "ValueKind":
        if not isinstance(text, str):
            raise ValueError(f"value kind {text!r}: give a string such as 'peaked/10' or 'ties'.")
        kind, sep, arg = text.partition(cls.SEP)
        if sep and not arg:
            raise ValueError(f"value kind {text!r}: nothing after {cls.SEP!r}; write 'peaked/10' or 'peaked'.")
        return cls(kind, arg)

    def format(self) -> str:
        return f"{self.kind}{self.SEP}{self.arg}" if self.arg else str(self.kind)


PAD_BYTES = ("bytes", "random")   # the fills that are not one byte: a per-byte pattern, random bytes


@dataclass(frozen=True)
class Padding:
    """Rung 3's padding fill, an input's value kind "pad:0xFF": one byte in hex (0x00 .. 0xFF),
    "bytes" (a per-byte pattern) or "random"."""
    byte: str

    PREFIX = "pad:"

    def __post_init__(self):
        ok = self.byte in PAD_BYTES or (isinstance(self.byte, str) and len(self.byte) == 4 and self.byte[:2] == "0x"
                                        and all(c in "0123456789abcdefABCDEF" for c in self.byte[2:]))
        if not ok:
            raise ValueError(f"padding fill {self.byte!r}: give one byte in hex ('0xFF'), 'bytes' or 'random'.")

    @classmethod
    def is_one(cls, text) -> bool:
        """Whether a point's value kind is a padding fill (the rest are ValueKinds)."""
        return isinstance(text, str) and text.startswith(cls.PREFIX)

    @classmethod
    def parse(cls, text: str) -> "Padding":
        if not cls.is_one(text):
            raise ValueError(f"padding {text!r}: write {cls.PREFIX}FILL, e.g. 'pad:0xFF'.")
        return cls(text[len(cls.PREFIX):])

    def format(self) -> str:
        return self.PREFIX + self.byte

    @property
    def value(self) -> int | None:
        """The byte's value, None for "bytes" and "random"."""
        return None if self.byte in PAD_BYTES else int(self.byte, 16)


ZERO_PADDING = Padding("0x00")


def input_kind(text: str) -> ValueKind | Padding:
    """A point's value kind for one input (Point.values): a padding fill or a ValueKind."""
    return Padding.parse(text) if Padding.is_one(text) else ValueKind.parse(text)


@dataclass(frozen=True)
class DtypeFactor:
    """A covering array's factor for a tensor's dtype, "dtype:NAME" beside the dims' names."""
    tensor: str

    PREFIX = "dtype:"

    def __post_init__(self):
        if not isinstance(self.tensor, str) or not self.tensor:
            raise ValueError(f"dtype factor {self.PREFIX}{self.tensor!r}: name a tensor after {self.PREFIX!r}.")

    @classmethod
    def is_one(cls, text) -> bool:
        return isinstance(text, str) and text.startswith(cls.PREFIX)

    @classmethod
    def parse(cls, text: str) -> "DtypeFactor":
        if not cls.is_one(text):
            raise ValueError(f"dtype factor {text!r}: write {cls.PREFIX}NAME.")
        return cls(text[len(cls.PREFIX):])

    def format(self) -> str:
        return self.PREFIX + self.tensor


@dataclass(frozen=True)
class ImportName:
    """A name downstream code imports, "pkg.mod:name" or "pkg.mod:Class.method" (Spec.imports)."""
    module: str
    attr: str

    SEP = ":"

    def __post_init__(self):
        if not (self.module and self.attr and all(p.isidentifier() for p in self.module.split(".") + self.attr.split("."))):
            raise ValueError(f"import {self.module}{self.SEP}{self.attr}: write 'pkg.mod:name' (a module, a colon, "
                             "a name in it).")

    @classmethod
    def parse(cls, text: str) -> "ImportName":
        if not isinstance(text, str):
            raise ValueError(f"import {text!r}: give a string 'pkg.mod:name'.")
        module, _, attr = text.partition(cls.SEP)
        return cls(module, attr)

    def format(self) -> str:
        return f"{self.module}{self.SEP}{self.attr}"


@dataclass(frozen=True)
class SpecRef:
    """Where a spec is, "PATH.py[::NAME]" or "package.module[::NAME]" (the CLI's SPEC)."""
    target: str
    name: str | None = None

    SEP = "::"

    @classmethod
    def parse(cls, text: str) -> "SpecRef":
        target, _, name = text.partition(cls.SEP)
        return cls(target, name or None)

    def format(self) -> str:
        return self.target + (self.SEP + self.name if self.name else "")
