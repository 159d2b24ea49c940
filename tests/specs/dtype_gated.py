"""Fixtures for a `when` naming a dtype (tests/test_spec_says.py): a launcher that routes float64
inputs to one path and every other dtype to another, both y = 2 x (every value is right whichever
path runs: only rung 7 can tell), and one that routes every dtype to the same path."""
import torch

import kladder as kl


def _wide_path(x):
    return x * 2


def _narrow_path(x):
    return x + x


def route(x):
    return _wide_path(x) if x.dtype == torch.float64 else _narrow_path(x)


def route_one_path(x):
    return _narrow_path(x)


def twice(x):
    return 2 * x


WIDE = kl.Expect("*_wide_path", when={"dtype": torch.float64}, label="the wide path")
NARROW = kl.Expect("*_narrow_path", when={"dtype:x": lambda d: d != "float64"}, label="the narrow path")


def make(name, kernel):
    return kl.Spec(name, kernel=kernel, reference=twice, args={"x": kl.Tensor("M N", dtype=["float32", "float64"])},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 16), "N": kl.Dim(1, 64)},
                   toolchain=kl.Toolchain(expect=[WIDE, NARROW]))


routed = make("routed", route)
one_path = make("one_path", route_one_path)
