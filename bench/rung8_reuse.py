"""Rung 8 on the CPU, before and after reusing the free run as the teacher-forced run (when every
answer came out right, the forced run is the same run op for op): kladder.model.evaluate with a
Triton kernel in the rmsnorm slot under the interpreter (the compounding_bias twin), against the
same evaluate plus the forced generation it no longer makes (what it cost before), interleaved.

usage: TRITON_INTERPRET=1 python bench/rung8_reuse.py OUT.json [N_PROBLEMS [ROUNDS]]"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

import kladder.model as km
from kladder.model import task
from kladder.zoo import compounding_bias as cb


def forced_generation(slots, n, dtype, seed):
    model = km.load(slots, "cpu", dtype)
    digits = (model.cfg.max_len - 2) // 3
    probs = task.sample(n, digits, torch.Generator().manual_seed(seed), "held_out")
    t = time.perf_counter()
    model.generate(probs.prompt, probs.answer.shape[1], forced=probs.answer)
    return time.perf_counter() - t


def main(path, n, rounds):
    torch.set_num_threads(1)
    slots = {"rmsnorm": cb.rmsnorm_fixed}
    new, old = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        score = km.evaluate(slots, n=n, dtype="bfloat16", seed=1)
        t_new = time.perf_counter() - t
        new.append(t_new)
        old.append(t_new + forced_generation(slots, n, "bfloat16", 1))
    result = {"kernel": "compounding_bias twin (Triton, interpreter) in the rmsnorm slot", "problems": n,
              "dtype": "bfloat16", "rounds": rounds, "score": score.score,
              "before_s": [round(x, 2) for x in old], "after_s": [round(x, 2) for x in new],
              "before_median_s": round(statistics.median(old), 2), "after_median_s": round(statistics.median(new), 2),
              "after_vs_before": round(statistics.median(new) / statistics.median(old), 3)}
    with open(path, "w") as f:
        json.dump(result, f, indent=1, allow_nan=False)
    print(result)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 8, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
