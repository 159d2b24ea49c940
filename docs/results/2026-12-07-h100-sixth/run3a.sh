#!/usr/bin/env bash
# Device call 3 of 2026-12-07 (sixth session), short: after calls 1-2 and these changes (each worker's cache released
# between points, one worker in reserve, a mask's pattern found on its device, the early fork server for climbs of
# rungs 1-3 on CUDA): (1) where three small RoPE points' time goes on CUDA (bench/point_profile.py), (2) RoPE and the
# fused add-RMSNorm, rungs 1-3, side by side, with their timelines.
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-sixth/run3a.sh
source docs/results/2026-12-06-h100-round/common.sh
step profile 45 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth_small.json --rounds 2 \
    --top 50 --json "$OUT/profile.json"
step liger 110 python3 bench/light_climb.py --device cuda --only liger --liger-ops rope,fused_add_rmsnorm --deadline-s 105 \
    --step-timeout-s 100 --liger-timeout-s 100 --json "$OUT/liger.json" --keep /tmp/keep/liger
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
