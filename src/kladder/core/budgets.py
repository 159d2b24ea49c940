"""The climb's time budgets, named for when they run (`kladder climb --budget NAME`).

`commit` (the default) is sized so that the default climb of a small kernel ends in seconds, on
every change: rung 5's repetition points 2 s each on a GPU (100 calls or 5 s on the CPU, as at
release: see below), its stream of calls 1 s, compute-sanitizer's memcheck alone (CUDA). `release`
runs the long ones, before a release or on a schedule: 10 s a repetition point on a GPU, the
stream 3 s, all four compute-sanitizer tools.
(Why these names and not quick/thorough: they say when to run each, which is the user's choice;
a budget's size follows from it.) The sizes of the points do not change with the budget, only
how long the time-budgeted ones run; --repeat N and --repeat-s S still override a repetition
point's calls and seconds. Each point carries its budget (Point.repeat), so `kladder repro`
repeats exactly what the climb ran.

What a budget leaves out is said: `summary` tells what rung 5's calls can see (the failure rate
they meet at least once with even odds) and what the longer budget would add (about how many
calls, from each point's own rate of calls, and the sanitizer tools)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class CallBudget:
    """How long a rung-5 point repeats: up to `calls` calls (0: no bound) and `seconds`
    seconds, whichever comes first."""

    calls: int
    seconds: float


@dataclass(frozen=True)
class TimeBudget:
    """One named budget: rung 5's repetition points and stream (per device kind, "cpu" and
    "cuda"), and the compute-sanitizer tools every climb runs on CUDA."""
    name: str
    repeat: dict[str, CallBudget]
    stream_calls: dict[str, int]
    stream_s: dict[str, float]
    tools: tuple[str, ...]


SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# CPU: a small interpreted Triton kernel costs 5-130 ms a call (measured on the 2-core CI box under
# load), so a point makes up to 100 calls in at most 5 s at either budget: the zoo's sampled_timing is
# wrong one call in 16 once a shape came 8 times in a row (call 24 at the earliest), and 2 s made only
# 20 calls a point under a load of 23 on the 2-core machine (caught, with no margin); a small kernel's
# points end on their 100 calls long before (0.3 s each for tests/specs/trivial.py). GPU: 100,000
# calls (a 64K-float kernel replays at 841k calls/s on the H200); the zoo's rmsnorm twin's four big
# repetition points ran to their 10 s on the H100 (docs/results/2026-12-06-h200): 2 s at commit.
# Memcheck finds the out-of-bounds accesses, the most common; racecheck, initcheck and synccheck each
# add a child of their own (4-5 s on the H100).
COMMIT = TimeBudget("commit", {"cpu": CallBudget(100, 5.0), "cuda": CallBudget(100_000, 2.0)},
                    {"cpu": 10_000, "cuda": 100_000}, {"cpu": 1.0, "cuda": 1.0}, ("memcheck",))
RELEASE = TimeBudget("release", {"cpu": CallBudget(100, 5.0), "cuda": CallBudget(100_000, 10.0)},
                     {"cpu": 10_000, "cuda": 100_000}, {"cpu": 3.0, "cuda": 3.0}, SANITIZER_TOOLS)
BUDGETS = {b.name: b for b in (COMMIT, RELEASE)}       # shortest first
DEFAULT = COMMIT.name
CALLS_CEILING_S = 3600.0       # --repeat N alone: N calls, but a point still ends within an hour


def named(name: str | None) -> TimeBudget:
    """The budget called `name` (None: the default); ValueError names the choices."""
    if name is None:
        return BUDGETS[DEFAULT]
    if name not in BUDGETS:
        raise ValueError(f"--budget {name!r}: use {' or '.join(BUDGETS)} (default {DEFAULT})")
    return BUDGETS[name]


def longer(name: str) -> TimeBudget | None:
    """The next longer budget than `name`, or None for the longest."""
    names = list(BUDGETS)
    i = names.index(named(name).name)
    return BUDGETS[names[i + 1]] if i + 1 < len(names) else None


def kind(device: str) -> str:
    return "cpu" if device == "cpu" else "cuda"


def call_budget(device: str, calls: int | None = None, seconds: float | None = None,
                budget: str | None = None) -> CallBudget:
    """The named budget's (default: commit) for the device, or what the user asked for (--repeat N,
    --repeat-s S): N calls alone runs all N (within CALLS_CEILING_S); S seconds alone makes as
    many calls as fit."""
    default = named(budget).repeat[kind(device)]
    if calls is None and seconds is None:
        return default
    if seconds is None:
        return CallBudget(calls, CALLS_CEILING_S)
    return CallBudget(calls or 0, seconds)


# ---------------------------------------------------------------------------- what a budget ran, and what a longer one adds
@dataclass(frozen=True)
class BudgetSummary:
    """What the climb's budget ran at rung 5 and what the next longer one would add (None: none
    longer). `most` is the most calls one point made (a failure rate is a rate at one point: calls
    at different shapes and inputs do not add up to one sample); `even_odds` the failure rate
    those calls see at least once with even odds; `example` a round rate (1 in a power of ten)
    just past it, and `example_calls` the calls it needs at one point for even odds."""
    name: str
    longer: str | None = None
    points: int = 0
    calls: int = 0
    most: int = 0
    most_point: str = ""
    even_odds: float = 0.0
    example: float = 0.0
    example_calls: int = 0
    longer_most: int = 0                 # about the calls the longer budget makes at `most_point`
    longer_even_odds: float = 0.0
    tools: tuple[str, ...] = ()          # compute-sanitizer tools that ran (CUDA)
    longer_tools: tuple[str, ...] = ()   # those the longer budget adds
    overridden: bool = False             # --repeat / --repeat-s set the repetition points' budget
    longer_seconds: dict = field(default_factory=dict)     # the longer budget's seconds: {"repeat": s, "stream": s}

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["tools"], d["longer_tools"] = list(self.tools), list(self.longer_tools)
        return d


def even_odds_rate(calls: int) -> float:
    """The failure rate p that `calls` calls see at least once with probability 1/2:
    1 - 2^(-1/calls) (0 for no calls)."""
    return -math.expm1(-math.log(2) / calls) if calls > 0 else 0.0


def summary(name: str, device: str, outcomes: list, overridden: bool = False) -> BudgetSummary:
    """Rung 5's calls under budget `name`, from its points' outcomes (their notes' or findings'
    facts: calls, seconds, what stopped them), and about what the longer budget would make at the
    point that made the most: its calls scaled by the longer budget's seconds where seconds
    stopped it, up to the longer budget's calls."""
    from .stats import calls_to_see
    mine, more = named(name), longer(name)
    runs = [r for r in (_calls_of(o) for o in outcomes) if r is not None]
    tools = tuple(t for t in mine.tools if any(_tool_ran(o, t) for o in outcomes)) if device != "cpu" else ()
    out = BudgetSummary(name, more.name if more else None, len(runs), sum(r[1] for r in runs), tools=tools,
                        overridden=overridden)
    if not runs:
        return _with_longer(out, more, device, tools)
    point, most, seconds, stopped, mode = max(runs, key=lambda r: r[1])
    p = even_odds_rate(most)
    example = 10.0 ** -math.ceil(-math.log10(p)) if p > 0 else 0.0
    out = BudgetSummary(**{**out.__dict__, "most": most, "most_point": point, "even_odds": p, "example": example,
                           "example_calls": calls_to_see(example, 0.5) if example else 0})
    if more is not None and not overridden:
        mine_s = mine.stream_s[kind(device)] if mode == "calls" else mine.repeat[kind(device)].seconds
        more_s = more.stream_s[kind(device)] if mode == "calls" else more.repeat[kind(device)].seconds
        cap = more.stream_calls[kind(device)] if mode == "calls" else more.repeat[kind(device)].calls
        scaled = most * more_s / mine_s if stopped == "seconds" and seconds > 0 else most
        longer_most = int(min(scaled, cap) if cap else scaled)
        out = BudgetSummary(**{**out.__dict__, "longer_most": max(longer_most, most),
                               "longer_even_odds": even_odds_rate(max(longer_most, most))})
    return _with_longer(out, more, device, tools)


def _with_longer(out: BudgetSummary, more: TimeBudget | None, device: str, tools: tuple) -> BudgetSummary:
    if more is None:
        return out
    adds = tuple(t for t in more.tools if t not in tools) if device != "cpu" else ()
    k = kind(device)
    return BudgetSummary(**{**out.__dict__, "longer_tools": adds,
                            "longer_seconds": {"repeat": more.repeat[k].seconds, "stream": more.stream_s[k]}})


def _calls_of(o) -> tuple | None:
    """(point id, calls, seconds, what stopped it, mode) of a rung-5 repetition or stream point
    that ran, from its note (passed) or its headline's facts (failed)."""
    if o.point.mode not in ("repeat", "calls"):
        return None
    facts = o.note.facts if o.note is not None else None
    if not hasattr(facts, "calls"):
        head = o.headline
        facts = head.facts if head is not None else None
    if not hasattr(facts, "calls") or not hasattr(facts, "stopped"):
        return None
    return o.point.id, int(facts.calls), float(facts.seconds), str(facts.stopped), o.point.mode


def _tool_ran(o, tool: str) -> bool:
    return o.point.mode == "sanitize" and dict(o.point.repeat).get("tool") == tool and str(o.status) != "skipped"
