"""Flags (rung 7): a flag must change the code. Each of its values' calls launched some code
objects (run/modes/tracing.py: a binary's digest on a GPU, the interpreter's model of what
decides the binary on the CPU) and, on CUDA, some GPU kernels; a flag whose values all ran
the same code never reached code generation (FlyDSL #1153, #1177)."""
from __future__ import annotations

from ..core.outcome import Check, Finding, Note, NoteKind
from ..core.facts import FlagChangedFacts, FlagNoEffectFacts


def code_of(ran) -> tuple:
    """What a call ran, as code: the distinct code objects it launched and the GPU kernels."""
    return tuple(sorted({x["code"] for x in ran.launches})), tuple(sorted(set(ran.gpu)))


def how(runs) -> str:
    hows = {x["how"] for _, ran in runs for x in ran.launches}
    return "binary" if "binary" in hows else "source" if hows else "names"


def no_effect(flagged) -> tuple[Finding | None, Note]:
    """A finding when every value ran the same code; the note says what was compared. A flag
    set after import (flagged.set "after_import") whose values all ran the same code is read
    once, at import or at the first call: setting it later, as a serving launcher does from its
    config, changes nothing."""
    runs = flagged.runs
    codes = {code_of(ran) for _, ran in runs}
    values = [v for v, _ in runs]
    after = flagged.set or None
    note = Note(NoteKind.FLAG_CHANGED, FlagChangedFacts(flag=flagged.flag, values=values, how=how(runs), codes=len(codes),
                                                        set=after))
    if len(codes) > 1:
        return None, note
    started = flagged.started or [None] * len(runs)
    return Finding(Check.FLAG_NO_EFFECT, facts=FlagNoEffectFacts(
        flag=flagged.flag, values=values, how=how(runs), set=after, variable=flagged.variable,
        runs=[{"value": v, **({"started": s} if after else {}),
               "launches": [{"name": x["name"], "params": x["params"]} for x in ran.launches[:4]],
               "gpu": list(ran.gpu)[:4]} for (v, ran), s in zip(runs, started, strict=True)])), note
