"""Rung 4's poison of integer outputs (issue 21 item 9): a launcher that returns each row's
position as int32 from a buffer it caches by shape. The warm-up before a CUDA graph's capture
fills the buffer; the capture finds it cached and records no work, so no replay writes the
output. Its values still equal the reference (positions depend on the shape alone), so only a
poison written into every output, integer ones too, before each replay shows that the replay
wrote nothing. `fresh_positions` writes the buffer on every call and passes."""
import torch

import kladder as kl

_CACHE = {}


def cached_positions(x):
    key = (tuple(x.shape), x.device)
    if key not in _CACHE:                    # the bug: a cached output is written once, not per call
        _CACHE[key] = torch.arange(x.shape[0], device=x.device, dtype=torch.int32)
    return _CACHE[key]


def fresh_positions(x):
    out = _CACHE.setdefault(("fresh", tuple(x.shape), x.device), torch.empty(x.shape[0], dtype=torch.int32,
                                                                           device=x.device))
    out.copy_(torch.arange(x.shape[0], device=x.device, dtype=torch.int32))
    return out


def positions_ref(x):
    return torch.arange(x.shape[0], dtype=torch.int64)


def _spec(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=positions_ref, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M", dtype="int32"), dims={"M": kl.Dim(1, 256, tile=16), "N": kl.Dim(1, 64)},
                   modes=kl.Modes(graphs=True))


spec = _spec("cached_positions", cached_positions)
fixed = _spec("fresh_positions", fresh_positions)
