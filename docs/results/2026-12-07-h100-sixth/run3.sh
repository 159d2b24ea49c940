#!/usr/bin/env bash
# Device call 3 of 2026-12-07 (sixth session), after calls 1-2 (run.sh, run2.sh) and these changes: each worker's
# cache released between points (7c81414), one worker in reserve, a mask's pattern found on its device in a few
# passes (describe: 18 s -> 4 s for a 2^30-element mask on the CPU; no copy to the host first), the early fork
# server for climbs of rungs 1-3 on CUDA. (1) the five liger ops, rungs 1-3, two side by side, RoPE and the fused
# add-RMSNorm first; (2) the twin, every rung, this tree, then the tree before the fifth session (.oldtree: d78975b)
# on the same machine; (3) bench/point_profile.py, small points first.
# From the repository root, carrying .whl and .oldtree:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-sixth/run3.sh
source docs/results/2026-12-06-h100-round/common.sh
step liger 260 python3 bench/light_climb.py --device cuda --only liger \
    --liger-ops rope,fused_add_rmsnorm,swiglu,rmsnorm,layernorm --deadline-s 250 \
    --step-timeout-s 150 --liger-timeout-s 100 --json "$OUT/liger.json" --keep /tmp/keep/liger
step light_new 80 python3 bench/light_climb.py --device cuda --step-timeout-s 60 --only start,twin --json "$OUT/light_new.json" \
    --keep /tmp/keep/new
step profile 60 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth.json --rounds 2 \
    --top 40 --json "$OUT/profile.json"
step light_old 80 python3 .oldtree/bench/light_climb.py --device cuda --step-timeout-s 60 --only twin --json "$OUT/light_old.json" \
    --keep /tmp/keep/old
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
