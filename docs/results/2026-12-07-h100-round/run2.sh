#!/usr/bin/env bash
# Device call of 2026-12-07 cut to what the device time left allows: the two GPU-only zoo cases whose
# specs moved to parts (issue 34: atomic_order's kl.Repetition at rung 5, splitk_semaphore_graph's
# kl.Modes(graphs=True) at rung 4), buggy and fixed, climbed on CUDA.
# run from the repository root: OUT=DIR bash docs/results/2026-12-07-h100-round/run2.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
source docs/results/2026-12-07-h100-round/climbs.sh
cat "$OUT/summary.txt"
