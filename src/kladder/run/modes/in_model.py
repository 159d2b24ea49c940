"""The model mode (rung 8): the model run with the kernel in its slot and without it, on the
same fixed problems; checks/model_score.py judges the two scores."""
from __future__ import annotations

from ...core.outcome import KernelError, NoteKind, SpecBroken, error_facts
from .base import Mode, Scores

SHOWN = 4


class InModel(Mode):
    name = "model"
    rungs = (8,)
    measured_elsewhere = True

    def observe(self, h):
        spec, pt = h.spec, h.point
        slot, fn = spec.slot_target()
        if isinstance(slot, str):
            yield Scores(_own_model(h, slot, fn, pt))
        else:
            yield Scores(_user_model(slot, fn))


def _own_model(h, slot: str, fn, pt) -> dict:
    import kladder.model as km
    if slot not in km.SLOTS:
        raise SpecBroken(NoteKind.NO_SUCH_SLOT, slot=slot, slots=list(km.SLOTS))
    dtype = dict(pt.config).get("model_dtype", "float32")
    n = dict(pt.config).get("problems", 64)
    try:
        base = km.evaluate(None, n=n, device=h.device, dtype=dtype, seed=pt.seed % 1000)
    except Exception as e:
        raise SpecBroken(NoteKind.BASELINE_FAILED, user=False, **error_facts(e, whole=True)) from e
    try:
        got = km.evaluate({slot: fn}, n=n, device=h.device, dtype=dtype, seed=pt.seed % 1000)
    except Exception as e:
        raise KernelError(e, f"the model with the kernel in `{slot}`") from e
    return {"where": "slot", "slot": slot, "baseline": base.score, "kernel": got.score,
            "nll_baseline": base.nll, "nll_kernel": got.nll, "gain": got.gain, "drift": got.drift,
            "n": n, "dtype": dtype, "samples": [list(s) for s in got.samples[:SHOWN]]}


def _user_model(slot, fn) -> dict:
    replacement = slot.wrap(fn) if getattr(slot, "wrap", None) else fn
    try:
        b = slot.score(None)
    except Exception as e:
        raise SpecBroken(NoteKind.BASELINE_FAILED, user=True, **error_facts(e, whole=True)) from e
    try:
        k = slot.score(replacement)
    except Exception as e:
        raise KernelError(e, f"the user model with the kernel in {getattr(slot, 'target', '?')}") from e
    worst = sorted(getattr(slot, "samples", []), key=_badness)
    samples = [[str(x) for x in s] if isinstance(s, tuple) else [str(s)] for s in worst[:SHOWN]]
    return {"where": "adapter", "target": slot.target, "baseline": b, "kernel": k, "samples": samples}


def _badness(sample) -> float:
    """A sample's sort key, lowest shown first: a tuple's last value where it is a number (the
    user's score of it), else 0 (the samples are the user's: None, text or an empty tuple too)."""
    last = sample[-1] if isinstance(sample, tuple) and sample else None
    return last if isinstance(last, (int, float)) and not isinstance(last, bool) else 0


MODE = InModel()
