"""Rung 8, the model: a kernel swapped into a real (small, trained) model and judged by the
model's answers against a fixed-seed baseline.

The model (kladder.model.net) is a decoder-only transformer trained in this repo
(kladder.model.train) to add two 5-digit numbers; grouped-query attention with 16 query heads
per KV head. Every op it runs goes through a slot (kladder.model.slots: SLOTS says each
signature); `evaluate` runs a fixed set of held-out problems through prefill and greedy
token-by-token decode with the slots given, the way a server runs a model.

    import kladder.model as km
    km.evaluate().score                                     # the baseline, ~1.0
    km.evaluate({"attention_decode": my_kernel}, dtype="bfloat16", device="cuda").score

For the user's own model, `Adapter` patches a function or method and runs their evaluation.
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from typing import Callable

from .adapter import Adapter, TargetError, patched
from .slots import SLOTS

WEIGHTS = os.path.join(os.path.dirname(__file__), "adder.safetensors")
RECORD = os.path.join(os.path.dirname(__file__), "adder.json")
DTYPES = {"cpu": ("float32", "bfloat16"), "cuda": ("float16", "bfloat16", "float32")}
SHOWN_SAMPLES = 8

__all__ = ["evaluate", "ModelScore", "SLOTS", "Adapter", "TargetError", "patched", "load", "WEIGHTS", "RECORD"]


@dataclass
class ModelScore:
    """Exact match (0..1) over n fixed problems; samples are (prompt, expected, got) for the
    first few, as a person writes them ("31415+27182=", "58597", "58597")."""
    score: float
    n: int
    samples: list = field(default_factory=list)
    wrong: int = 0
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    seconds: float = 0.0
    drift: float = 0.0      # mean relative L2 distance of the logits from the default slots' (0 for the defaults)
    gain: float = 0.0       # mean logit gain along the default logits, minus 1 (< 0: leans toward zero)
    nll: float = 0.0        # mean negative log-likelihood of the right answers' tokens, teacher-forced (nats)

    def __str__(self) -> str:
        return (f"exact match {self.score:.4f} ({self.n - self.wrong}/{self.n}), answer NLL {self.nll:.3e} nats/token, "
                f"logit drift {self.drift:.2e}, gain {self.gain:+.2e} "
                f"[{self.dtype}, {self.device}, seed {self.seed}]")


@functools.cache
def _weights(path: str):
    from .net import load_model
    return load_model(path)


def load(slots: dict[str, Callable] | None = None, device: str = "cpu", dtype: str = "float32", path: str = WEIGHTS):
    """The shipped model, its weights in `dtype` on `device`, running `slots` (defaults for
    the slots not given)."""
    import torch
    from .net import Model, cast_params
    from .slots import resolve
    kind = torch.device(device).type
    if dtype not in DTYPES.get(kind, ()):
        raise ValueError(f"dtype {dtype!r} on {kind}: use one of {DTYPES.get(kind, ())}")
    cfg, params = _weights(path)
    return Model(cfg, cast_params(params, getattr(torch, dtype), device), resolve(slots))


def evaluate(slots: dict[str, Callable] | None = None, n: int = 64, device: str = "cpu",
             dtype: str = "float32", seed: int = 0) -> ModelScore:
    """Exact match of the model on n held-out addition problems drawn with `seed`, every op
    through `slots` (a dict slot name -> callable with the signature in SLOTS)."""
    import torch
    from . import task
    t0 = time.perf_counter()
    model = load(slots, device, dtype)
    digits = (model.cfg.max_len - 2) // 3
    probs = task.sample(n, digits, torch.Generator().manual_seed(seed), "held_out")
    got, free = model.generate(probs.prompt.to(device), probs.answer.shape[1])
    got = got.cpu()
    right = (got == probs.answer).all(1)
    # the right answers' likelihood, teacher-forced: exact match saturates on a confident
    # model, the likelihood moves with every error that leans one way. Where every decode step
    # of the free run was fed the right token, the teacher-forced run is that same run, op for
    # op: its logits are reused (rung 8 on the CPU runs the kernel through the interpreter,
    # about 200 s a run)
    if bool((got[:, :-1] == probs.answer[:, :-1]).all()):
        forced = free
    else:
        _, forced = model.generate(probs.prompt.to(device), probs.answer.shape[1], forced=probs.answer.to(device))
    answer = probs.answer.to(device)[..., None]
    nll = float(-torch.log_softmax(forced.float(), -1).gather(-1, answer).mean())
    drift, gain = _drift(forced, probs.answer, probs.prompt, device, dtype) if slots else (0.0, 0.0)
    samples = [(f"{int(a)}+{int(b)}=", task.decode_answer(want), task.decode_answer(g))
               for a, b, want, g in zip(probs.a[:SHOWN_SAMPLES], probs.b[:SHOWN_SAMPLES],
                                         probs.answer[:SHOWN_SAMPLES], got[:SHOWN_SAMPLES], strict=False)]
    return ModelScore(float(right.float().mean()), n, samples, int((~right).sum()), dtype, str(device), seed,
                      time.perf_counter() - t0, drift, gain, nll)


def _drift(logits, tokens, prompt, device, dtype) -> tuple[float, float]:
    """How far the slotted run's logits moved from the default slots' (same dtype, both fed
    the right answers, so both see the same prefixes): the mean relative L2
    error, and the mean gain along the default logits minus 1 (negative: the logits shrank,
    an error that leans toward zero). Exact match saturates on a confident model; these move."""
    base = load(None, device, dtype)
    _, ref = base.generate(prompt.to(device), tokens.shape[1], forced=tokens.to(device))
    rel = ((logits - ref).norm(dim=-1) / ref.norm(dim=-1)).mean()
    gain = ((logits * ref).sum(-1) / (ref * ref).sum(-1) - 1).mean()
    return float(rel), float(gain)
