"""The model: a small decoder-only transformer, Llama-shaped, every op through a slot.

Pre-norm residual blocks: x += wo(attention(rmsnorm(x))); x += down(act(up(rmsnorm(x)))).
Grouped-query attention with 16 query heads sharing one KV head (group 16, the per-GPU
shape of Llama-3.1-405B at TP8), learned absolute positions, an untied LM head.

Generation runs as a server runs it: the prompts of a batch are prefilled together
(attention_prefill), their K and V written to a KV cache, then each new token is one decode
step (attention_decode) against that cache, greedy.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from . import slots as _slots


@dataclass(frozen=True)
class Config:
    vocab: int = 12
    max_len: int = 18
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 16          # query heads
    n_kv_heads: int = 1        # group = n_heads // n_kv_heads = 16
    head_dim: int = 16
    d_ff: int = 256
    eps: float = 1e-5

    @property
    def group(self) -> int:
        return self.n_heads // self.n_kv_heads


def init_params(cfg: Config, gen: torch.Generator) -> dict[str, torch.Tensor]:
    def w(*shape, scale=1.0):
        return torch.randn(*shape, generator=gen) * scale / shape[-1] ** 0.5
    D, Hq, Hkv, Dh = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    p = {"tok_emb": torch.randn(cfg.vocab, D, generator=gen) * 0.5,
         "pos_emb": torch.randn(cfg.max_len, D, generator=gen) * 0.5,
         "norm_f": torch.ones(D), "lm_head": w(cfg.vocab, D)}
    out_scale = 1.0 / (2 * cfg.n_layers) ** 0.5
    for i in range(cfg.n_layers):
        p |= {f"l{i}.attn_norm": torch.ones(D), f"l{i}.wq": w(Hq * Dh, D), f"l{i}.wk": w(Hkv * Dh, D),
              f"l{i}.wv": w(Hkv * Dh, D), f"l{i}.wo": w(D, Hq * Dh, scale=out_scale),
              f"l{i}.mlp_norm": torch.ones(D), f"l{i}.up": w(cfg.d_ff, D), f"l{i}.down": w(D, cfg.d_ff, scale=out_scale)}
    return p


def is_norm(name: str) -> bool:
    return name.endswith("norm") or name == "norm_f"


def cast_params(params: dict, dtype: torch.dtype, device) -> dict:
    """Weights in the model's dtype; norm weights stay float32 (the rmsnorm slot's contract)."""
    return {k: v.to(device=device, dtype=torch.float32 if is_norm(k) else dtype) for k, v in params.items()}


# ------------------------------------------------------------------ forward
class SlotError(TypeError):
    """A slot returned something other than its signature's output (dtype, shape, type)."""


class Model:
    def __init__(self, cfg: Config, params: dict, table: dict[str, Callable]):
        self.cfg, self.p, self.s = cfg, params, table

    def call(self, slot: str, *args, shape, dtype):
        """One slot call; an output of the wrong kind is a SlotError naming the slot."""
        out = self.s[slot](*args)
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(shape) or out.dtype != dtype:
            got = f"{out.dtype} {list(out.shape)}" if isinstance(out, torch.Tensor) else type(out).__name__
            raise SlotError(f"slot {slot!r} returned {got} where {dtype} {list(shape)} was expected "
                            f"({_slots.SLOTS[slot]})")
        return out

    def _rows(self, slot, x, *args, width=None):
        """Run a row-wise slot on x [..., D] as the 2-D [T, D] tensor the slot expects."""
        rows = x.reshape(-1, x.shape[-1])
        out = self.call(slot, rows, *args, shape=(rows.shape[0], width or x.shape[-1]), dtype=x.dtype)
        return out.reshape(*x.shape[:-1], -1)

    def norm(self, x, name):
        return self._rows("rmsnorm", x, self.p[name], self.cfg.eps)

    def lin(self, x, name):
        return self._rows("linear", x, self.p[name], width=self.p[name].shape[0])

    def mlp(self, x, i):
        h = self.norm(x, f"l{i}.mlp_norm")
        return self.lin(self._rows("activation", self.lin(h, f"l{i}.up")), f"l{i}.down")

    def qkv(self, x, i):
        """x [B, T, D] -> q [B, Hq, T, Dh], k and v [B, Hkv, T, Dh], contiguous."""
        c = self.cfg
        h = self.norm(x, f"l{i}.attn_norm")
        B, T, _ = x.shape

        def heads(name, n):
            return self.lin(h, name).reshape(B, T, n, c.head_dim).transpose(1, 2).contiguous()
        return heads(f"l{i}.wq", c.n_heads), heads(f"l{i}.wk", c.n_kv_heads), heads(f"l{i}.wv", c.n_kv_heads)

    def embed(self, tokens, start: int):
        T = tokens.shape[1]
        return self.p["tok_emb"][tokens] + self.p["pos_emb"][start:start + T]

    def logits(self, x):
        return self.lin(self.norm(x, "norm_f"), "lm_head")

    def forward(self, tokens, cache=None):
        """Whole sequences (training, and the prefill of generation). With `cache`
        (a list of [k_cache, v_cache] per layer) the prompt's K and V are written to it."""
        x = self.embed(tokens, 0)
        B, T, _ = x.shape
        for i in range(self.cfg.n_layers):
            q, k, v = self.qkv(x, i)
            if cache is not None:
                cache[i][0][:, :, :T] = k
                cache[i][1][:, :, :T] = v
            o = self.call("attention_prefill", q, k, v, shape=q.shape, dtype=q.dtype)
            x = x + self.lin(o.transpose(1, 2).reshape(B, T, -1), f"l{i}.wo")
            x = x + self.mlp(x, i)
        return self.logits(x)

    def decode_step(self, token, pos: int, cache):
        """One new token per sequence [B] at position `pos`, against the cache."""
        c = self.cfg
        x = self.embed(token[:, None], pos)                       # [B, 1, D]
        B = x.shape[0]
        lengths = torch.full((B,), pos + 1, dtype=torch.int32, device=x.device)
        for i in range(c.n_layers):
            q, k, v = self.qkv(x, i)
            cache[i][0][:, :, pos] = k[:, :, 0]
            cache[i][1][:, :, pos] = v[:, :, 0]
            q1 = q[:, :, 0].contiguous()
            o = self.call("attention_decode", q1, cache[i][0], cache[i][1], lengths, shape=q1.shape, dtype=q1.dtype)
            x = x + self.lin(o.reshape(B, 1, -1), f"l{i}.wo")
            x = x + self.mlp(x, i)
        return self.logits(x)[:, 0]

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, n_new: int, forced: torch.Tensor | None = None):
        """Greedy: prefill the prompts [B, P], then n_new - 1 decode steps through the cache.
        Returns (tokens [B, n_new], float32 logits [B, n_new, V]). With `forced` [B, n_new] the
        decode steps are fed those tokens instead of the model's own (teacher forcing)."""
        c = self.cfg
        B, P = prompt.shape
        dtype = self.p["tok_emb"].dtype
        cache = [[torch.zeros(B, c.n_kv_heads, P + n_new, c.head_dim, dtype=dtype, device=prompt.device)
                  for _ in range(2)] for _ in range(c.n_layers)]
        logits = [self.forward(prompt, cache)[:, -1].float()]
        toks = [logits[-1].argmax(-1)]
        for t in range(n_new - 1):
            feed = toks[-1] if forced is None else forced[:, t]
            logits.append(self.decode_step(feed, P + t, cache).float())
            toks.append(logits[-1].argmax(-1))
        return torch.stack(toks, 1), torch.stack(logits, 1)


# ------------------------------------------------------------------ weights on disk
# safetensors (never pickle), with the config in the file's metadata.


def save_model(cfg: Config, params: dict, path: str) -> None:
    from safetensors.torch import save_file
    save_file({k: v.detach().float().contiguous().cpu() for k, v in params.items()}, path,
              metadata={"config": json.dumps(asdict(cfg))})


def load_model(path: str) -> tuple[Config, dict]:
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        meta = f.metadata()
        params = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 - a safe_open handle is not a dict
    return Config(**json.loads(meta["config"])), params
