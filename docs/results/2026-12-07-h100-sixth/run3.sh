#!/usr/bin/env bash
# Device call 3 of 2026-12-07 (sixth session; a start was refused at 17:33, 211 s of device time), after calls 1-2
# (run.sh, run2.sh) and these changes: each worker's cache released between points (7c81414), one worker in
# reserve, a mask's pattern found on its device in a few passes (describe: 18 s -> 4 s for a 2^30-element mask on
# the CPU; no copy to the host first), the early fork server for climbs of rungs 1-3 on CUDA.
# (1) where three small RoPE points' time goes on CUDA (bench/point_profile.py); (2) the five liger ops, rungs 1-3,
# two side by side, RoPE and the fused add-RMSNorm first; (3) the twin, every rung (cold, again, edit).
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-sixth/run3.sh
source docs/results/2026-12-06-h100-round/common.sh
step profile 35 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth_small.json --rounds 2 \
    --top 50 --json "$OUT/profile.json"
step liger $(( $(left) - 75 )) python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops rope,fused_add_rmsnorm,swiglu,rmsnorm,layernorm --deadline-s $(( $(left) - 85 )) \
    --step-timeout-s 100 --liger-timeout-s 100 --json "$OUT/liger.json" --keep /tmp/keep/liger
step light_new 70 python3 bench/light_climb.py --device cuda --step-timeout-s 60 --only twin --json "$OUT/light_new.json" \
    --keep /tmp/keep/new
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
