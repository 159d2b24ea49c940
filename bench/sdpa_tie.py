"""Why torch's bfloat16 SDPA fails one element at r2-B=8-H=17-S=17-L=1814-D=17-bfloat16-q:huge on
the H200 (issue 15's GPU false-alarm run): the point rebuilt as the climb builds it, the failing
element's query row against its keys in float64 (the top logits and their gap, in units of the
float32 and bfloat16 rounding of a logit that large), the value rows they pick, and what the
kernel, the kernel-precision peer and the spread say there.

usage: python bench/sdpa_tie.py [SEED_SHIFT]"""
import math
import sys

import torch

sys.path.insert(0, "tests")
from specs.torch_ops import sdpa

from kladder.core.point import Point
from kladder.run.harness import Harness


def main(shift: int) -> None:
    d = {"spec": "sdpa", "rung": 2, "dims": [["B", 8], ["H", 17], ["S", 17], ["L", 1814], ["D", 17]],
         "dtypes": [["q", "bfloat16"]], "why": "", "config": [], "kind": "values", "needs": "", "mode": "eager",
         "seed": 0, "partner": [], "values": [["q", "huge"]]}
    pt = Point.from_dict(d).shifted(shift)
    h = Harness(sdpa, pt, "cuda")
    prep = h.prepare()
    ref = h.expected(prep).refs["out"]
    out = sdpa.kernel(*prep.inputs.args).double()
    peers = h.peers(prep, {"out": "values"}, {"out": ref})
    err = (out - ref).abs()
    i = tuple(int(v) for v in torch.unravel_index(err.argmax(), err.shape))
    print(pt.id, "seed", pt.seed, "worst element", i, "kernel", float(out[i]), "ref", float(ref[i]),
          "peer", float(peers["out"].kernel[i]), "spread", float(peers["out"].spread[i]))
    q, k, v = prep.ref_args
    b, hh, s, dd = i
    logits = q[b, hh, s] @ k[b, hh].T / math.sqrt(q.shape[-1])
    top = logits.topk(4)
    big = float(top.values[0].abs())
    for j, (val, idx) in enumerate(zip(top.values.tolist(), top.indices.tolist(), strict=True)):
        print(f"  logit {j}: key {idx} {val:.6e}  gap to top {top.values[0].item() - val:.3e} "
              f"(= {(top.values[0].item() - val) / (big * 2 ** -24):.3g} float32 roundings, "
              f"{(top.values[0].item() - val) / (big * 2 ** -8):.3g} bfloat16) v[{dd}] = {float(v[b, hh, idx, dd]):.5f}")
    # every element where the kernel is off by more than the bfloat16 default: how many are such near-ties
    tol = 1e-5 + 1.6e-2 * torch.maximum(ref.abs(), ref.pow(2).mean(-1, keepdim=True).sqrt())
    print("elements past the default:", int((err > tol).sum()), "of", err.numel())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
