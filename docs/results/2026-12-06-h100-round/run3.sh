#!/usr/bin/env bash
# Device call 3 of this round: call 1's misses again after their fixes (the same machine, warm):
# the rmsnorm twin cold / again / edited (again: the store's key from nvidia-smi, no worker's
# hello), the MoE twin's independence (ATen's kernels by name), the LayerNorm's near miss (a warning).
# run from the repository root: OUT=DIR bash docs/results/2026-12-06-h100-round/run3.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
step light 200 python3 bench/light_climb.py --device cuda --only start,twin --deadline-s 190 --step-timeout-s 150 \
    --json "$OUT/light.json" --keep /tmp/keep
step shared_gpu 100 python3 bench/shared_gpu.py --json "$OUT/shared_gpu.json"
step layernorm 90 python3 -m kladder.cli climb examples/norm/layernorm_spec.py --rungs 2 --device cuda --no-history \
    --fresh --json "$OUT/layernorm_rung2.json"
tar -C /tmp -czf "$OUT/reports.tgz" keep 2>/dev/null
cat "$OUT/summary.txt"
