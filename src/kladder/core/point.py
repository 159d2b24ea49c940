"""Point: the unit of reproduction. Frozen, hashable, JSON round-trip; its repr is a
Python literal (a dict) that `Point.parse` reads back, so a report line can be pasted
into `kladder repro` as it is."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from dataclasses import dataclass, fields
from typing import Any

from .notation import EnvSet, Inputs, Launch, Mode, Needs, Padding, PointKind, ValueKind, input_kind

Pairs = tuple  # tuple[tuple[str, Any], ...], ordered as the spec declares them


@dataclass(frozen=True)
class Point:
    spec: str
    rung: int
    dims: Pairs
    dtypes: Pairs = ()       # the chosen dtype of every tensor that has a choice
    why: str = ""
    config: Pairs = ()
    kind: PointKind = PointKind.EDGE
    needs: Needs = Needs.NOTHING   # Needs.CUDA for points that only a GPU can run (big tensors)
    mode: Mode = Mode.EAGER
    seed: int = 0
    partner: Pairs = ()      # rung 4's A-B-A: the B point's dims and config, (("dims", ...), ("config", ...))
    values: Pairs = ()       # rung 2: input name -> value kind ("peaked/10", "ties", "pad:0xFF"; see `kinds`); others normal
    layouts: Pairs = ()      # rung 3: input name -> layout ("sliced", "transposed", ...); others contiguous
    replay: str = ""         # rung 2: a captured call (DIR/entry) whose tensors are the inputs
    variant: str = ""        # rung 7: what a flags / cachekey point varies ("USE_TMA", "$MYLIB_FAST", "config", "compiler")
    ranks: Pairs = ()        # rung 6: world, lag (the lagging rank), lag_us, sizes (the message dim's size, call by call)
    repeat: Pairs = ()       # rung 5: the repetition's plan (calls, seconds, inputs, launch, load) or the sanitizer's tool
    env: Pairs = ()          # rung 7: environment variables the point sets (name -> value; None: unset)
    env_set: str = ""        # rung 7: when they are set: "" (at the process's start) or "after_import" (notation.EnvSet)

    def __post_init__(self):
        for f in PAIRS:
            object.__setattr__(self, f, tuple((str(k), _freeze(v)) for k, v in getattr(self, f)))
        for f, words in CLOSED.items():
            object.__setattr__(self, f, words.of(getattr(self, f), f"Point: {f}"))
        object.__setattr__(self, "repeat", tuple((k, REPEAT_WORDS[k].of(v, f"Point: repeat's {k}") if k in REPEAT_WORDS else v)
                                                 for k, v in self.repeat))
        for _, v in self.values:
            input_kind(v)                # a point holds only value kinds that parse
        if self.env_set:
            object.__setattr__(self, "env_set", EnvSet.of(self.env_set, "Point: env_set"))
        for k, v in self.env:
            if v is not None and not isinstance(v, str):
                raise ValueError(f"Point: env's {k} is {v!r}; give the variable's value as a string, or null for unset.")
        if not self.seed:
            object.__setattr__(self, "seed", self._default_seed())

    def _default_seed(self) -> int:
        key = [self.spec, self.dims, self.dtypes, self.config, self.mode, self.partner]
        if self.values or self.layouts or self.replay:   # seeds of earlier points stay as they were
            key += [self.values, self.layouts, self.replay]
        if self.variant:
            key += [self.variant]
        if self.ranks:
            key += [self.ranks]
        if self.env:
            key += [self.env, self.env_set]
        key = json.dumps(key, default=str)
        return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)

    def shifted(self, shift: int) -> "Point":
        """This point with its seed moved by `shift` (`--seed S`): other inputs at the same sizes,
        values and layouts. The new seed is in the point, so its repro reproduces it."""
        if not shift:
            return self
        digest = hashlib.sha256(f"{self.seed}:{shift}".encode()).hexdigest()[:8]
        return dataclasses.replace(self, seed=int(digest, 16) or 1)

    # ---- views ----
    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.dims)

    @property
    def dtype_of(self) -> dict[str, str]:
        return dict(self.dtypes)

    @property
    def kinds(self) -> dict[str, ValueKind | Padding]:
        """The value kind of every input that has one (the others are normal)."""
        return {n: input_kind(v) for n, v in self.values}

    @property
    def padding(self) -> tuple[str, Padding] | None:
        """(input, fill) of a padding point's poisoned input, None elsewhere."""
        pads = [(n, k) for n, k in self.kinds.items() if isinstance(k, Padding)]
        return pads[0] if pads else None

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.config)

    @property
    def id(self) -> str:
        """A short readable id: r1-M=1-N=2881-bfloat16-BLOCK_K=64."""
        parts = [f"r{self.rung}"]
        parts += [f"{k}={v}" for k, v in self.dims]
        parts += sorted({v for _, v in self.dtypes}, key=[v for _, v in self.dtypes].index)
        parts += [f"{k}={v}" for k, v in self.config]
        if self.mode != "eager":
            parts.append(self.mode)
        for k, v in self.partner:
            parts.append("B:" + ",".join(f"{a}={b}" for a, b in v) if v else f"B:{k}=default")
        parts += [f"{k}:{v}" for k, v in self.values]
        parts += [f"{k}:{v}" for k, v in self.layouts]
        if self.replay:
            parts.append("replay:" + self.replay.rsplit("/", 1)[-1])
        if self.variant:
            parts.append(self.variant)
        parts += [f"${k}={'unset' if v is None else v}" for k, v in self.env]
        if self.env_set:
            parts.append(self.env_set)
        if self.ranks:
            r = dict(self.ranks)
            parts += [f"world={r['world']}", f"lag=r{r['lag']}"]
        plan = dict(self.repeat)
        parts += [str(plan[k]) for k in ("inputs", "launch", "tool") if k in plan]
        if plan.get("load"):
            parts.append("load")
        return "-".join(parts)

    # ---- serialisation ----
    def to_dict(self) -> dict[str, Any]:
        d = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in OMIT_EMPTY and not v:
                continue               # rung 1's repro lines stay as short as they were
            d[f.name] = _thaw(v) if f.name in PAIRS else v
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Point":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"Point: unknown field(s) {sorted(unknown)}; known fields are {sorted(known)}.")
        missing = {"spec", "rung", "dims"} - set(d)
        if missing:
            raise ValueError(f"Point: missing field(s) {sorted(missing)}; a point needs at least spec, rung and dims.")
        for k, v in d.items():
            _check_field(k, v)
        return cls(**{k: (_freeze(v) if k in PAIRS else v) for k, v in d.items()})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False)

    @classmethod
    def parse(cls, text: str) -> "Point":
        """Read a point from its JSON or its repr (a Python dict literal): data only (a literal,
        never code), at most MAX_TEXT characters nested at most MAX_DEPTH deep, so that a hostile
        string costs neither a RecursionError nor the memory of its parse."""
        text = text.strip()
        if len(text) > MAX_TEXT:
            raise ValueError(f"the point is {len(text):,} characters; a point a report prints is far under {MAX_TEXT:,}: "
                             "copy it from the report again.")
        depth = nesting(text)
        if depth > MAX_DEPTH:
            raise ValueError(f"the point nests {depth} deep; a point a report prints nests at most {MAX_DEPTH} deep: copy "
                             "it from the report again.")
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            try:
                d = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
                raise ValueError(f"cannot read a point from {text[:80]!r}: give the JSON or the dict that the report prints ({e}).") from None
        if not isinstance(d, dict):
            raise ValueError(f"cannot read a point from {text[:80]!r}: expected a dict.")
        return cls.from_dict(d)

    def __repr__(self) -> str:
        return repr(self.to_dict())


MAX_TEXT = 1 << 16         # characters of a point's text: a collective's call sizes and a long why fit many times over
MAX_DEPTH = 16             # brackets within brackets: a report's points nest 5 deep (partner's dims)


def nesting(text: str) -> int:
    """How deep brackets nest in `text` outside its string literals ('...' and "...", with
    backslash escapes), counted without parsing (a parser recurses once a level)."""
    depth = deepest = 0
    quote, escaped = "", False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]})":
            depth -= 1
    return deepest


PAIRS = ("dims", "dtypes", "config", "partner", "values", "layouts", "ranks", "repeat", "env")
TEXTS = ("spec", "why", "kind", "needs", "mode", "replay", "variant", "env_set")
CLOSED = {"kind": PointKind, "needs": Needs, "mode": Mode}
REPEAT_WORDS = {"inputs": Inputs, "launch": Launch}


def _check_field(name: str, v) -> None:
    """A field of a point read from text has the type a report writes: a hand-edited point
    that does not is a ValueError naming the field, never a TypeError further on."""
    if name in ("rung", "seed"):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"Point: {name} is {v!r}, a {type(v).__name__}; give an integer (as the report prints it).")
    elif name in TEXTS:
        if not isinstance(v, str):
            raise ValueError(f"Point: {name} is {v!r}, a {type(v).__name__}; give a string (as the report prints it).")
        if name in CLOSED:
            CLOSED[name].of(v, f"Point: {name}")
    elif name in PAIRS and not _pairs(v):
        raise ValueError(f"Point: {name} is {v!r}; give a list of [name, value] pairs, e.g. "
                         f"{name}: [[\"N\", 64]] (as the report prints it).")


def _pairs(v) -> bool:
    return isinstance(v, (list, tuple)) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str) for p in v)


OMIT_EMPTY = ("values", "layouts", "replay", "variant", "ranks", "repeat", "env", "env_set")


def _thaw(v):
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    return v


def _freeze(v):
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v
