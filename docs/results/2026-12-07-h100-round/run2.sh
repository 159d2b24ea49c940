#!/usr/bin/env bash
# Device call of 2026-12-07 cut to what the device time left allows: the two GPU-only zoo cases whose
# specs moved to parts (issue 34: atomic_order's kl.Repetition at rung 5, splitk_semaphore_graph's
# kl.Modes(graphs=True) at rung 4), buggy and fixed, climbed on CUDA.
# run from the repository root: OUT=DIR bash docs/results/2026-12-07-h100-round/run2.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
K="python3 -m kladder"
step atomic_buggy 60 $K zoo climb atomic_order --device cuda --rungs 5 --no-history --json "$OUT/atomic_buggy.json"
step atomic_fixed 60 $K zoo climb atomic_order --fixed --device cuda --rungs 5 --no-history --json "$OUT/atomic_fixed.json"
step splitk_buggy 45 $K zoo climb splitk_semaphore_graph --device cuda --rungs 4 --no-history --json "$OUT/splitk_buggy.json"
step splitk_fixed 45 $K zoo climb splitk_semaphore_graph --fixed --device cuda --rungs 4 --no-history --json "$OUT/splitk_fixed.json"
cat "$OUT/summary.txt"
