#!/usr/bin/env bash
# Device call 1 of 2026-12-07 (seventh session): what the sixth session left unmeasured on a GPU (a mask's pattern
# found on its device, the early fork server for rungs 1-3 on CUDA, the reserve worker via that server), and where
# RoPE's 2 GiB point (r1-B=16-H=32-Hk=1-T=8192-D=256-bfloat16) spends its time:
# (1) that point alone in one process, no warm-up, one round, stages and cProfile; (2) three small RoPE points, two
# rounds; (3) RoPE and the fused add-RMSNorm, rungs 1-3, side by side; (4) the twin, every rung, cold; (5) with the
# time left, the other three liger ops, two side by side.
# From the repository root, carrying .whl:  OUT=DIR LIMIT=S bash docs/results/2026-12-07-h100-seventh/run.sh
source docs/results/2026-12-06-h100-round/common.sh
step profile_big 100 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_rope_big.json --warm 0 \
    --rounds 1 --top 60 --json "$OUT/profile_big.json"
step profile_small 40 python3 bench/point_profile.py --device cuda --points bench/profiles/liger_sixth_small.json \
    --rounds 2 --top 50 --json "$OUT/profile_small.json"
step liger 170 python3 bench/light_climb.py --device cuda --only liger --liger-ops rope,fused_add_rmsnorm \
    --deadline-s 160 --step-timeout-s 150 --liger-timeout-s 150 --json "$OUT/liger.json" --keep /tmp/keep/liger
step light_new 75 python3 bench/light_climb.py --device cuda --step-timeout-s 60 --only twin \
    --json "$OUT/light_new.json" --keep /tmp/keep/new
step liger3 $(( $(left) - 10 )) python3 bench/light_climb.py --device cuda --only liger --liger-ops swiglu,rmsnorm,layernorm \
    --deadline-s $(( $(left) - 20 )) --step-timeout-s 100 --liger-timeout-s 100 --json "$OUT/liger3.json" --keep /tmp/keep/liger3
cp -r /tmp/keep "$OUT/keep" 2>/dev/null
( cd "$OUT" && tar -czf /tmp/all.tgz --exclude=all.tgz . && find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/all.tgz . )
cat "$OUT/summary.txt"
