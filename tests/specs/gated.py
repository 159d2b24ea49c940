"""Fixtures for a gate over a range of sizes in `when` (tests/test_knows.py): a launcher that
routes rows of N <= 256 to one path and longer rows to another, both y = 2 x in torch (every
value is right whichever path runs: only rung 7 can tell), and one whose gate is off by one.

- `listed` says the gate by listing its sizes (the way a spec had to before predicates):
  rung 7 lists a point at every one of them;
- `gated` says it with a range and a callable: rung 7 puts points at the gate's edges;
- `gate_off_by_one` routes N = 256 to the long path: the edge point at N = 256 catches it;
- `aligned` routes multiples of 64 to a third path, declared as range(64, 65537, 64).
"""
import torch

import kladder as kl


def _short_path(x):
    return x * 2


def _long_path(x):
    return x + x


def _aligned_path(x):
    return torch.mul(x, 2)


def route(x):
    return _short_path(x) if x.shape[-1] <= 256 else _long_path(x)


def route_off_by_one(x):
    return _short_path(x) if x.shape[-1] < 256 else _long_path(x)


def route_aligned(x):
    return _aligned_path(x) if x.shape[-1] % 64 == 0 else route(x)


def twice(x):
    return 2 * x


def make(name, kernel, expect):
    return kl.Spec(name, kernel=kernel, reference=twice, args={"x": kl.Tensor("M N", dtype="float32")},
                   returns=kl.Tensor("M N", like="x"), dims={"M": kl.Dim(1, 64), "N": kl.Dim(1, 1 << 16)},
                   toolchain=kl.Toolchain(expect=expect))


SHORT = kl.Expect("*_short_path", when={"N": range(1, 257)}, label="the short path")
LONG = kl.Expect("*_long_path", when={"N": lambda n: n > 256}, label="the long path")
listed = make("listed", route, [kl.Expect("*_short_path", when={"N": list(range(1, 257))}),
                                kl.Expect("*_long_path", when={"N": list(range(257, (1 << 16) + 1))})])
gated = make("gated", route, [SHORT, LONG])
gate_off_by_one = make("gate_off_by_one", route_off_by_one, [SHORT, LONG])
aligned = make("aligned", route_aligned, [kl.Expect("*_aligned_path", when={"N": range(64, (1 << 16) + 1, 64)})])
