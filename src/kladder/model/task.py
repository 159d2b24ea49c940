"""The task: add two N-digit numbers. Digits are written least significant first (so the
answer's digit i depends on digits i of the operands and a carry, the order a causal model
can compute in), operands zero-padded to N digits, the sum to N + 1.

    57 + 8 at N = 3:   prompt "750+800="   answer "5600"   (65, reversed, padded)

Tokens: the digits 0..9, then '+' and '='. A pair (a, b) is held out of training when
(a * 7919 + b) % 16 == 0; the scored problems are drawn from held-out pairs only.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

PLUS, EQUALS = 10, 11
VOCAB = 12
HELD_OUT_MOD = 16


@dataclass(frozen=True)
class Problems:
    a: torch.Tensor          # int64 [n]
    b: torch.Tensor
    prompt: torch.Tensor     # int64 [n, 2N + 2]
    answer: torch.Tensor     # int64 [n, N + 1]


def digits_lsb_first(x: torch.Tensor, width: int) -> torch.Tensor:
    powers = 10 ** torch.arange(width, dtype=torch.int64)
    return (x[:, None] // powers) % 10


def encode(a: torch.Tensor, b: torch.Tensor, n_digits: int) -> Problems:
    n = a.shape[0]
    plus = torch.full((n, 1), PLUS, dtype=torch.int64)
    eq = torch.full((n, 1), EQUALS, dtype=torch.int64)
    prompt = torch.cat([digits_lsb_first(a, n_digits), plus, digits_lsb_first(b, n_digits), eq], 1)
    return Problems(a, b, prompt, digits_lsb_first(a + b, n_digits + 1))


def held_out(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * 7919 + b) % HELD_OUT_MOD == 0


def sample(n: int, n_digits: int, gen: torch.Generator, split: str) -> Problems:
    """n problems from the 'train' pairs or the 'held_out' pairs, drawn with `gen`."""
    hi = 10 ** n_digits
    got_a, got_b, have = [], [], 0
    while have < n:
        a = torch.randint(0, hi, (4 * n,), generator=gen)
        b = torch.randint(0, hi, (4 * n,), generator=gen)
        keep = held_out(a, b) if split == "held_out" else ~held_out(a, b)
        got_a.append(a[keep])
        got_b.append(b[keep])
        have += int(keep.sum())
    return encode(torch.cat(got_a)[:n], torch.cat(got_b)[:n], n_digits)


def decode_answer(tokens: torch.Tensor) -> str:
    """Answer tokens (least significant digit first) -> the number as a person writes it;
    a token that is not a digit shows as '?'."""
    text = "".join(str(int(t)) if 0 <= int(t) <= 9 else "?" for t in tokens)
    return text[::-1].lstrip("0") or "0"
