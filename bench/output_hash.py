"""What run/hashes.output_hash costs at one output (issue 23: the history hashes every output
of every point in the worker): seconds to hash a tensor of --gib GiB on --device, against the
seconds of one device-to-device copy of it (a cost of the same order as the kernel's own).

usage: python bench/output_hash.py [--device cuda] [--gib 4] [--repeats 3] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gib", type=float, default=0.25)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    import torch

    from kladder.run.hashes import output_hash
    n = int(a.gib * (1 << 30)) // 2
    t = torch.randn(n // 4096, 4096, dtype=torch.float16, device=a.device)

    def sync():
        if a.device == "cuda":
            torch.cuda.synchronize()

    hash_s, copy_s = [], []
    for _ in range(a.repeats):
        sync()
        t0 = time.perf_counter()
        output_hash(t)
        hash_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.clone()
        sync()
        copy_s.append(time.perf_counter() - t0)
    doc = {"device": a.device, "bytes": t.numel() * t.element_size(), "hash_s": min(hash_s), "copy_s": min(copy_s),
           "hash_gb_s": t.numel() * t.element_size() / min(hash_s) / 1e9}
    print(json.dumps(doc))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
