"""The ladder's one table: each rung's number, gap, title, generator and whether it is built.
The climb, the CLI, the pytest plugin and the report read it; nothing else lists rungs."""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Rung:
    number: int
    gap: str                    # the gap it closes: a generator module's name under gaps/
    title: str                  # how reports name it
    generator: str | None       # the module whose points(spec, budget) yields its points; None: not built

    @property
    def built(self) -> bool:
        return self.generator is not None

    def points(self, spec, budget, **extra):
        if getattr(spec, "collective", None) is not None and self.gap != "multi_gpu":
            return iter(())     # a collective runs only across its ranks: rung 6 calls it, one process a rank
        return importlib.import_module(self.generator).points(spec, budget, **extra)


RUNGS = (
    Rung(1, "shapes", "shapes", "kladder.gen.gaps.shapes"),
    Rung(2, "values", "values", "kladder.gen.gaps.values"),
    Rung(3, "contracts", "contracts", "kladder.gen.gaps.contracts"),
    Rung(4, "modes", "execution modes", "kladder.gen.gaps.modes"),
    Rung(5, "repetition", "repetition", "kladder.gen.gaps.repetition"),
    Rung(6, "multi_gpu", "multi-GPU", "kladder.gen.gaps.multi_gpu"),
    Rung(7, "toolchain", "toolchain", "kladder.gen.gaps.toolchain"),
    Rung(8, "end_to_end", "model", "kladder.gen.gaps.end_to_end"),
)
BY_NUMBER = {r.number: r for r in RUNGS}
BUILT = tuple(r.number for r in RUNGS if r.built)


def number(gap: str) -> int:
    """The rung that closes `gap`: generators stamp their points with it."""
    return next(r.number for r in RUNGS if r.gap == gap)


def title(n: int) -> str:
    return BY_NUMBER[n].title
