#!/usr/bin/env bash
# Device call 1 of this round (issues 32, 34, 38): the light climb's targets (the CLI's start, the
# rmsnorm twin cold / again / after a one-line edit, the wrong GEMV's big point), the shared GPU's
# blame (bench/shared_gpu.py), the two-pass float32 LayerNorm at rung 2 with ties (issue 34's
# near-miss: 0 failed), the run-alone tests on CUDA.
# run from the repository root: OUT=DIR bash docs/results/2026-12-06-h100-round/run1.sh   (carry .whl)
source docs/results/2026-12-06-h100-round/common.sh
step light 330 python3 bench/light_climb.py --device cuda --only start,twin,gemv --deadline-s 320 --step-timeout-s 150 \
    --json "$OUT/light.json" --keep /tmp/keep
step shared_gpu 120 python3 bench/shared_gpu.py --json "$OUT/shared_gpu.json"
step layernorm 90 python3 -m kladder.cli climb examples/norm/layernorm_spec.py --rungs 2 --device cuda --no-history \
    --fresh --json "$OUT/layernorm_rung2.json"
step alone 60 python3 -m pytest -q -p no:cacheprovider tests/test_alone.py -k cuda
tar -C /tmp -czf "$OUT/reports.tgz" keep 2>/dev/null
cat "$OUT/summary.txt"
