#!/usr/bin/env bash
# Device call 3 of 2026-12-07 (sixth session), cut to fit the device time two refused starts left (17:33, 17:45):
# after calls 1-2 (run.sh, run2.sh) and these changes: each worker's cache released between points (7c81414), one
# worker in reserve, a mask's pattern found on its device in a few passes (describe: 18 s -> 4 s for a 2^30-element
# mask on the CPU; no copy to the host first), the early fork server for climbs of rungs 1-3 on CUDA.
# (1) RoPE and the fused add-RMSNorm (the two ops call 2 missed), rungs 1-3, side by side; then, with the time left,
# the other three ops, two side by side; (2) where three small RoPE points' time goes on CUDA.
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-sixth/run4.sh
source docs/results/2026-12-06-h100-round/common.sh
step liger $(( $(left) - 45 )) python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops rope,fused_add_rmsnorm,swiglu,rmsnorm,layernorm --deadline-s $(( $(left) - 55 )) \
    --step-timeout-s 100 --liger-timeout-s 100 --json "$OUT/liger.json" --keep /tmp/keep/liger
step profile 35 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth_small.json --rounds 2 \
    --top 50 --json "$OUT/profile.json"
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
