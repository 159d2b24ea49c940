"""What constructing a Spec costs: one spec with every list field (three tensors, two dims with
tiles, widths and chunks, configs, production, rows, tolerance, expect, flags, imports), built
N times; the best of R rounds, in microseconds per Spec. A spec is built once per import of
its module (the climb's process and each worker), so anything well under a millisecond is
noise beside importing torch.

usage: python bench/spec_construction.py [--n 2000] [--rounds 5] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import kladder as kl
from kladder.core.fingerprint import fingerprint


def _k(x, w, out=None, **config):
    return x


def build() -> kl.Spec:
    return kl.Spec(
        "rmsnorm", kernel=_k, reference=_k,
        args={"x": kl.Tensor("M N", dtype=["bfloat16", "float16", "float32"], values=["peaked", "ties"], layouts=["sliced"]),
              "w": kl.Tensor("N", dtype="float32", range=(0, 1)), "out": kl.Out("M N", like="x")},
        dims={"M": kl.Dim(1, 4096, tile=16), "N": kl.Dim(1, 8192, tile=[64, 128], widths=[2880, 4096], chunks=[256])},
        configs=[{"BLOCK": 64}, {"BLOCK": 128}], production=[{"M": 1, "N": 4096}], rows="M",
        tolerance={"bfloat16": (2e-2, 1e-5)}, toolchain=kl.Toolchain(expect=["*rms*"], flags=[kl.Flag("USE_TMA")], imports=["mylib.ops:rmsnorm"]),  )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    best = min(timeit.repeat(build, number=args.n, repeat=args.rounds)) / args.n
    res = {"fingerprint": fingerprint(__file__, "cpu"), "n": args.n, "rounds": args.rounds, "us_per_spec": best * 1e6}
    print(f"{best * 1e6:.1f} us per Spec (best of {args.rounds} x {args.n})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
